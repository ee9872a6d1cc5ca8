package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/cmd/switchyard/gateway/gatewaytest"
	"switchyard/routing/adapter"
	"switchyard/routing/adapter/fakevendor"
	"switchyard/routing/config"
)

// limitedWorld has one model and a caller with the given fast-tier limits.
func limitedWorld(t *testing.T, e *gatewaytest.Env, callers map[string]config.TierLimit, maxConc int) map[string]string {
	b := e.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-0000-0001")
	b.Model(config.LogicModel{Code: "small", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-small", Weight: 100, Enabled: true, MaxConcurrency: maxConc})
	all := []config.Candidate{{LogicModel: "small", Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: all, config.TierStandard: all, config.TierDeep: all})
	keys := map[string]string{}
	for name, l := range callers {
		class := config.ClassInteractive
		if strings.HasPrefix(name, "batch") {
			class = config.ClassBatch
		}
		l.Tier = config.TierFast
		_, keys[name] = b.Caller(config.Caller{Name: name, RouteGroup: "default", PriorityClass: class, Limits: []config.TierLimit{l}})
	}
	e.Publish("limited")
	return keys
}

const fastHello = `{"model":"fast","messages":[{"role":"user","content":"hi"}]}`

func TestTwoInstancesEnforceOneLimit(t *testing.T) {
	e1 := gatewaytest.New(t)
	keys := limitedWorld(t, e1, map[string]config.TierLimit{"app": {RPM: 20}}, 0)
	e2 := e1.Second()
	e2.WaitVersion(1)
	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := e1
			if i%2 == 1 {
				e = e2
			}
			res, body := post(t, e, keys["app"], "/v1/chat/completions", fastHello)
			switch res.StatusCode {
			case 200:
				ok.Add(1)
			case 429:
				if code, _ := errCode(t, body); code != "rate_limited" || res.Header.Get("Retry-After") == "" || res.Header.Get("x-ratelimit-limit-requests") != "20" {
					t.Errorf("429 without its code or headers: %s %v", body, res.Header)
				}
				limited.Add(1)
			default:
				t.Errorf("status %d: %s", res.StatusCode, body)
			}
		}()
	}
	wg.Wait()
	if fb := e1.GW.Limiter.FallbackDecisions() + e2.GW.Limiter.FallbackDecisions(); fb > 0 {
		t.Fatalf("%d decisions fell back to per-instance limits (Redis too slow?)", fb)
	}
	if ok.Load() != 20 || limited.Load() != 20 {
		t.Fatalf("two instances admitted %d of 40 against RPM 20 (%d limited)", ok.Load(), limited.Load())
	}
}

func TestIdempotencyKey(t *testing.T) {
	e := gatewaytest.New(t)
	keys := limitedWorld(t, e, map[string]config.TierLimit{"app": {RPM: 50}}, 0)
	key := keys["app"]
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{Latency: 300 * time.Millisecond}})
	var wg sync.WaitGroup
	bodies := make([][]byte, 20)
	statuses := make([]int, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, b := post(t, e, key, "/v1/chat/completions", fastHello, "Idempotency-Key", "order-42")
			bodies[i], statuses[i] = b, res.StatusCode
		}()
	}
	wg.Wait()
	if n := e.Fake.Count("fake-small"); n != 1 {
		t.Fatalf("20 identical requests with one Idempotency-Key made %d vendor calls", n)
	}
	for i := range bodies {
		if statuses[i] != 200 || !bytes.Equal(bodies[i], bodies[0]) {
			t.Fatalf("answer %d differs: %d %s vs %s", i, statuses[i], bodies[i], bodies[0])
		}
	}
	res, b := post(t, e, key, "/v1/chat/completions", `{"model":"fast","messages":[{"role":"user","content":"something else"}]}`, "Idempotency-Key", "order-42")
	if code, _ := errCode(t, b); res.StatusCode != 422 || code != "idempotency_conflict" {
		t.Fatalf("different body: %d %s", res.StatusCode, b)
	}
	// The 20 answers spent one request of quota: a fresh request sees 48 left.
	res, _ = post(t, e, key, "/v1/chat/completions", fastHello)
	if got := res.Header.Get("x-ratelimit-remaining-requests"); got != "48" {
		t.Fatalf("replays spent quota: remaining %s, want 48", got)
	}
	// A stream is replayed as a stream of the stored content.
	e.Fake.ClearRules()
	streamBody := `{"model":"fast","stream":true,"messages":[{"role":"user","content":"stream"}]}`
	_, first := post(t, e, key, "/v1/chat/completions", streamBody, "Idempotency-Key", "stream-1")
	res, again := post(t, e, key, "/v1/chat/completions", streamBody, "Idempotency-Key", "stream-1")
	if !bytes.Equal(first, again) || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("stream replay: %s\n---\n%s", first, again)
	}
	if n := e.Fake.Count("fake-small"); n != 3 {
		t.Fatalf("vendor calls %d, want 3", n)
	}
	// Invalid requests are not stored: the same key works once fixed.
	res, _ = post(t, e, key, "/v1/chat/completions", `{"model":"fast","messages":[]}`, "Idempotency-Key", "k-invalid")
	if res.StatusCode != 400 {
		t.Fatalf("invalid: %d", res.StatusCode)
	}
	if res, b := post(t, e, key, "/v1/chat/completions", fastHello, "Idempotency-Key", "k-invalid"); res.StatusCode != 200 {
		t.Fatalf("key reused after a validation failure: %d %s", res.StatusCode, b)
	}
}

// panicky wraps an adapter and panics for one upstream model.
type panicky struct {
	adapter.Adapter
	model string
}

func (p panicky) Chat(ctx context.Context, t adapter.Target, r *adapter.ChatRequest) (*adapter.ChatResult, error) {
	if t.UpstreamModel == p.model {
		panic("injected panic in the adapter")
	}
	return p.Adapter.Chat(ctx, t, r)
}

func TestNoLeaksUnderMixedFailures(t *testing.T) {
	e := gatewaytest.New(t)
	b := e.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-0000-0001", "sk-fake-key-0000-0002")
	models := []string{"ok", "fail", "slow", "boom"}
	var cands []config.Candidate
	for _, m := range models {
		b.Model(config.LogicModel{Code: m, Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "up-" + m, Weight: 100, Enabled: true, MaxConcurrency: 40})
		cands = append(cands, config.Candidate{LogicModel: m, Priority: 1, Weight: 100})
	}
	b.Group("g", map[config.TierName][]config.Candidate{config.TierFast: cands, config.TierStandard: cands, config.TierDeep: cands},
		map[config.TierName][2]int{config.TierFast: {300, 200}, config.TierStandard: {300, 200}, config.TierDeep: {300, 200}})
	_, key := b.Caller(config.Caller{Name: "c", RouteGroup: "g"})
	e.Publish("leaks")
	e.Fake.SetRules(fakevendor.Rule{Model: "up-fail", Fault: fakevendor.Fault{Status: 500}},
		fakevendor.Rule{Model: "up-slow", Fault: fakevendor.Fault{Latency: 2 * time.Second, FirstChunkDelay: 2 * time.Second}})
	e.GW.Exec.Adapters[config.ProtocolOpenAI] = panicky{Adapter: e.GW.Exec.Adapters[config.ProtocolOpenAI], model: "up-boom"}

	runtime.GC()
	baseline := runtime.NumGoroutine()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
	var wg sync.WaitGroup
	var statuses sync.Map
	sem := make(chan struct{}, 200)
	for i := range 1000 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			model := models[i%4]
			stream := i%3 == 0
			ctx := context.Background()
			var cancel context.CancelFunc = func() {}
			if i%5 == 0 { // the client gives up early
				ctx, cancel = context.WithTimeout(ctx, time.Duration(10+i%90)*time.Millisecond)
			}
			defer cancel()
			body := fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"n%d"}]}`, model, stream, i)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				statuses.Store("client-error", true)
				return
			}
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(res.Body)
			res.Body.Close()
			statuses.Store(res.StatusCode, true)
			if res.StatusCode >= 500 && res.StatusCode != 502 && res.StatusCode != 503 && res.StatusCode != 504 {
				t.Errorf("status %d for %s: %s", res.StatusCode, model, buf.String())
			}
		}()
	}
	wg.Wait()
	client.CloseIdleConnections()
	var seen []string
	statuses.Range(func(k, _ any) bool { seen = append(seen, fmt.Sprint(k)); return true })
	t.Logf("statuses seen: %v", seen)

	deadline := time.Now().Add(5 * time.Second)
	for {
		loads, err := e.GW.Load.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var inFlight int64
		for _, v := range loads {
			inFlight += v
		}
		inst := e.GW.Load.InstanceInFlight()
		// Pooled keep-alive connections are not leaks: close them first.
		e.GW.Exec.Client.CloseIdleConnections()
		client.CloseIdleConnections()
		runtime.GC()
		g := runtime.NumGoroutine()
		if inFlight == 0 && inst == 0 && g <= baseline+5 {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 4<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("leak: redis in-flight %v, instance in-flight %d, goroutines %d (baseline %d)\n%s", loads, inst, g, baseline, goroutineSummary(string(buf[:n])))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRedisOutageFallsBackToLocalLimitsAndRecovers(t *testing.T) {
	e := gatewaytest.New(t, gatewaytest.Options{ProxyRedis: true, RedisTimeout: 100 * time.Millisecond})
	keys := limitedWorld(t, e, map[string]config.TierLimit{"app": {RPM: 1000}, "after": {RPM: 6}}, 0)
	if res, _ := post(t, e, keys["app"], "/v1/chat/completions", fastHello); res.StatusCode != 200 {
		t.Fatal("warm-up failed")
	}
	e.RedisProxy.Cut()
	for i := range 10 {
		res, body := post(t, e, keys["app"], "/v1/chat/completions", fastHello)
		if res.StatusCode != 200 {
			t.Fatalf("request %d during the Redis outage: %d %s", i, res.StatusCode, body)
		}
	}
	if !e.GW.Limiter.Degraded() {
		t.Fatal("limiter does not report the outage")
	}
	e.RedisProxy.Restore()
	deadline := time.Now().Add(5 * time.Second)
	for e.GW.Limiter.Degraded() {
		if time.Now().After(deadline) {
			t.Fatal("limiter did not return to Redis")
		}
		_, _ = post(t, e, keys["app"], "/v1/chat/completions", fastHello)
		time.Sleep(100 * time.Millisecond)
	}
	// Shared limits again: a second instance on direct Redis and this one
	// together admit exactly RPM=6 for a caller untouched so far.
	e2 := e.Second()
	e2.WaitVersion(1)
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst := e
			if i%2 == 0 {
				inst = e2
			}
			if res, _ := post(t, inst, keys["after"], "/v1/chat/completions", fastHello); res.StatusCode == 200 {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 6 {
		t.Fatalf("after recovery two instances admitted %d of 12 against RPM 6", ok.Load())
	}
}

func TestBatchIsShedBeforeInteractive(t *testing.T) {
	e := gatewaytest.New(t, gatewaytest.Options{InstanceCap: 10})
	keys := limitedWorld(t, e, map[string]config.TierLimit{"interactive": {}, "batch": {}}, 0)
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{Latency: 800 * time.Millisecond}})
	var wg sync.WaitGroup
	var shed atomic.Int64
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, body := post(t, e, keys["batch"], "/v1/chat/completions", fastHello)
			if res.StatusCode == 429 {
				if !strings.Contains(string(body), "batch requests are shed first") || res.Header.Get("Retry-After") == "" {
					t.Errorf("shed answer: %s", body)
				}
				shed.Add(1)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // the batch flood is in flight
	res, body := post(t, e, keys["interactive"], "/v1/chat/completions", fastHello)
	wg.Wait()
	if res.StatusCode != 200 {
		t.Fatalf("interactive request starved under a batch flood: %d %s", res.StatusCode, body)
	}
	if shed.Load() < 4 {
		t.Fatalf("only %d of 12 batch requests shed with an instance cap of 10", shed.Load())
	}
}

// goroutineSummary counts goroutines by the function that created them.
func goroutineSummary(dump string) string {
	counts := map[string]int{}
	for _, g := range strings.Split(dump, "\n\n") {
		created := "?"
		if i := strings.Index(g, "created by "); i >= 0 {
			created = strings.SplitN(g[i+len("created by "):], "\n", 2)[0]
		}
		counts[created]++
	}
	var b strings.Builder
	for k, v := range counts {
		fmt.Fprintf(&b, "%4d %s\n", v, k)
	}
	return b.String()
}
