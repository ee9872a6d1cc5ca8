package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"switchyard/routing/config"
	"switchyard/routing/config/configtest"
	"switchyard/web/gateway/gatewaytest"
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
// its allocations are included. The caller has limits on every tier and a
// monthly budget, as make bench's callers do (high enough never to
// refuse), so the limit check, its settlement and the rate-limit headers
// are part of every request. redis-rt/op counts the instance's Redis round
// trips (commands and pipelines) during the loop, background work
// included.
func BenchmarkProxiedRequest(b *testing.B) {
	b.Run("groups=1", func(b *testing.B) { benchProxied(b, false) })
	// The same request with 500 route groups, 5,000 deployments and 500
	// callers live: a request's work must not grow with the configuration.
	b.Run("groups=500", func(b *testing.B) { benchProxied(b, true) })
}

func benchProxied(b *testing.B, large bool) {
	rdb, _ := gatewaytest.NewRedis(b)
	var trips roundTrips
	rdb.AddHook(&trips)
	e := gatewaytest.New(b, gatewaytest.Options{Redis: rdb})
	b.Cleanup(func() { // the instance's keys: NewRedis cleans only its own prefix
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, e.Prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
	})
	if u := os.Getenv("BENCH_UPSTREAM_URL"); u != "" {
		e.FakeURL = u
	}
	key := benchWorld(e)
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
	base := e.GW.Data.BaseContext(nil) // as cmd/switchyard's server gives every request
	serve := func() int {
		req := httptest.NewRequestWithContext(base, http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
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
	trips.n.Store(0)
	b.ResetTimer()
	for b.Loop() {
		if s := serve(); s != http.StatusOK {
			b.Fatalf("status %d", s)
		}
	}
	b.ReportMetric(float64(trips.n.Load())/float64(b.N), "redis-rt/op")
	if n := e.GW.Limiter.FallbackDecisions(); n > 0 {
		b.Fatalf("%d limit decisions were made without Redis: the figures are not the shared limits'", n)
	}
}

// benchWorld is gatewaytest's Simple world with a caller whose limits
// are on (every tier, and a budget) but never refuse.
func benchWorld(e *gatewaytest.Env) string {
	bd := e.Build()
	bd.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-one-0001", "sk-fake-key-two-0002")
	bd.Model(config.LogicModel{Code: "small", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-small", Weight: 100, Enabled: true,
		Prices: config.Prices{InputMicros: config.Unit, OutputMicros: 2 * config.Unit, Currency: "USD"}})
	all := []config.Candidate{{LogicModel: "small", Weight: 100}}
	bd.Group("default", map[config.TierName][]config.Candidate{config.TierFast: all, config.TierStandard: all, config.TierDeep: all})
	var limits []config.TierLimit
	for _, tn := range []config.TierName{config.TierFast, config.TierStandard, config.TierDeep} {
		limits = append(limits, config.TierLimit{Tier: tn, RPM: 100_000_000, TPM: 1_000_000_000_000, DailyTokens: 1_000_000_000_000})
	}
	_, key := bd.Caller(config.Caller{Name: "app", RouteGroup: "default", Limits: limits, MonthlyBudgetMicros: 1e8 * config.Unit, BudgetCurrency: "USD"})
	e.Publish("limited world")
	return key
}

// roundTrips counts Redis round trips: one per command, one per pipeline.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
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
