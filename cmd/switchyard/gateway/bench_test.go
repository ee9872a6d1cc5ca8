package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"switchyard/cmd/switchyard/gateway/gatewaytest"
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
