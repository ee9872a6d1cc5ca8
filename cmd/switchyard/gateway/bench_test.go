package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"switchyard/cmd/switchyard/gateway/gatewaytest"
	"switchyard/routing/config/configtest"
)

// BenchmarkGatewayChat measures a full non-streamed request through the
// gateway (auth, route, one-round-trip limits, breaker, key pool, adapter,
// call log, metrics) against the in-process fake vendor. Compare with
// BenchmarkDirectChat, the same request straight to the fake vendor.
func BenchmarkGatewayChat(b *testing.B) {
	e := gatewaytest.New(b)
	key := e.Simple()
	benchChat(b, e.URL+"/v1/chat/completions", key)
}

func BenchmarkDirectChat(b *testing.B) {
	e := gatewaytest.New(b)
	benchChat(b, e.FakeURL+"/v1/chat/completions", "sk-direct")
}

func benchChat(b *testing.B, url, key string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	body := `{"model":"standard","messages":[{"role":"user","content":"benchmark"}]}`
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				b.Fatalf("status %d", res.StatusCode)
			}
		}
	})
}

// BenchmarkProxiedRequest serves non-streamed chat requests through the
// real handler chain and journey (auth, route, limits, breaker, key pool,
// adapter, call log, metrics) with no HTTP client or listener of ours in
// the process, so -benchmem counts the allocations a proxied request
// costs the gateway. Set BENCH_UPSTREAM_URL to a fake vendor in another
// process (make bench starts bin/fakeupstream) so that the vendor's own
// allocations are not counted; without it the in-process one is used and
// its allocations are included.
func BenchmarkProxiedRequest(b *testing.B) {
	b.Run("groups=1", func(b *testing.B) { benchProxied(b, false) })
	// The same request with 500 route groups, 5,000 deployments and 500
	// callers live: a request's work must not grow with the configuration.
	b.Run("groups=500", func(b *testing.B) { benchProxied(b, true) })
}

func benchProxied(b *testing.B, large bool) {
	e := gatewaytest.New(b)
	if u := os.Getenv("BENCH_UPSTREAM_URL"); u != "" {
		e.FakeURL = u
	}
	key := e.Simple()
	if large {
		ctx := context.Background()
		draft, _, err := e.Store.Draft(ctx)
		if err != nil {
			b.Fatal(err)
		}
		big := configtest.Generate(configtest.Size{Tenants: 5, Providers: 50, Deployments: 4999, Groups: 499, Callers: 499}, e.FakeURL+"/v1")
		big.Providers = append(big.Providers, draft.Providers...)
		big.LogicModels = append(big.LogicModels, draft.LogicModels...)
		big.RouteGroups = append(big.RouteGroups, draft.RouteGroups...)
		big.Callers = append(big.Callers, draft.Callers...)
		if _, err := e.Store.ReplaceDraft(ctx, big); err != nil {
			b.Fatal(err)
		}
		d, _, _ := e.Store.Draft(ctx)
		for _, p := range d.Providers {
			if p.Name != "fake" {
				if _, err := e.Store.AddProviderKey(ctx, p.ID, "", "sk-"+p.Name+"-0123456789"); err != nil {
					b.Fatal(err)
				}
			}
		}
		e.WaitVersion(e.Publish("500 route groups"))
	}
	h := e.GW.Server.Echo
	body := `{"model":"standard","messages":[{"role":"user","content":"benchmark"}]}`
	serve := func() int {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:40000"
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		w := &discard{h: http.Header{}}
		h.ServeHTTP(w, req)
		return w.status
	}
	for range 100 { // warm pools, connections and the call-log writer
		if s := serve(); s != http.StatusOK {
			b.Fatalf("status %d", s)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if s := serve(); s != http.StatusOK {
			b.Fatalf("status %d", s)
		}
	}
}

// discard is a ResponseWriter that keeps only the status.
type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header { return d.h }
func (d *discard) Write(p []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	return len(p), nil
}
func (d *discard) WriteHeader(s int) {
	if d.status == 0 {
		d.status = s
	}
}
func (d *discard) Flush() {}
