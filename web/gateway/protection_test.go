package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/limit"
	"switchyard/routing/queue"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/gateway/gatewaytest"
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
	t.Parallel()
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
		inst := e.GW.Queue.InFlight() + e.GW.Queue.Depth(queue.Interactive) + e.GW.Queue.Depth(queue.Normal) + e.GW.Queue.Depth(queue.Batch)
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
			t.Fatalf("leak: redis in-flight %v, instance in-flight and queued %d, goroutines %d (baseline %d)\n%s", loads, inst, g, baseline, goroutineSummary(string(buf[:n])))
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

// TestInstanceCapQueuesAndShedsBatchFirst: at SWITCHYARD_MAX_INFLIGHT a
// request waits in its class's queue instead of failing; a full batch queue
// answers 429 queue_full with Retry-After; a full interactive queue sheds
// waiting batch requests to make room (429 queue_shed); and interactive
// requests arriving behind a batch flood are let in first.
func TestInstanceCapQueuesAndShedsBatchFirst(t *testing.T) {
	e := gatewaytest.New(t, gatewaytest.Options{InstanceCap: 4, QueueBounds: [3]int{1, 0, 3}})
	keys := limitedWorld(t, e, map[string]config.TierLimit{"interactive": {}, "batch": {}}, 0)
	// Long enough that all ten batch requests are in (running, queued or
	// refused) before the first slot frees, even on a loaded machine.
	const service = 500 * time.Millisecond
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{Latency: service}})
	type answer struct {
		status int
		body   string
		retry  string
	}
	var wg sync.WaitGroup
	batch := make(chan answer, 10)
	for range 10 { // 4 run, 3 queue, 3 are refused
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, body := post(t, e, keys["batch"], "/v1/chat/completions", fastHello)
			batch <- answer{res.StatusCode, string(body), res.Header.Get("Retry-After")}
		}()
	}
	waitFor(t, "the batch queue is full", func() bool { return e.GW.Queue.Depth(queue.Batch) == 3 })
	// and the other three batch requests refused: one that arrived late
	// would otherwise take the place a shed waiter leaves.
	waitFor(t, "three batch requests refused", func() bool { return len(batch) == 3 })
	// Three interactive requests: the first queues (bound 1), the next two
	// make room by shedding the youngest batch waiters.
	start := time.Now()
	inter := make(chan answer, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, body := post(t, e, keys["interactive"], "/v1/chat/completions", fastHello)
			inter <- answer{res.StatusCode, string(body), ""}
		}()
	}
	wg.Wait()
	close(batch)
	close(inter)
	for a := range inter {
		if a.status != 200 {
			t.Fatalf("interactive request under a batch flood: %d %s", a.status, a.body)
		}
	}
	// The interactive requests are let in before the waiting batch one, at
	// the first slots freed: about two service times, not the three a FIFO
	// behind the batch waiters would take.
	if d := time.Since(start); d > 2*service+time.Second {
		t.Fatalf("three interactive requests took %s with a %s service time", d, service)
	}
	var ok, full, shed int
	for a := range batch {
		switch {
		case a.status == 200:
			ok++
		case a.status == 429 && strings.Contains(a.body, `"code":"queue_full"`) && strings.Contains(a.body, "batch queue of this gateway instance is full (3 waiting)"):
			full++
		case a.status == 429 && strings.Contains(a.body, `"code":"queue_shed"`):
			shed++
		default:
			t.Errorf("batch answer %d %s", a.status, a.body)
		}
		if a.status == 429 && a.retry == "" {
			t.Errorf("429 without Retry-After: %s", a.body)
		}
	}
	if ok != 5 || full != 3 || shed != 2 {
		t.Fatalf("batch: %d served, %d refused (queue full), %d shed; want 5, 3, 2", ok, full, shed)
	}
	rows := waitCallLogs(t, e, calllog.Filter{}, 13)
	var refusedRows, queuedRows int
	for _, r := range rows {
		if r.ErrorCode == "queue_full" || r.ErrorCode == "queue_shed" {
			refusedRows++
			if r.Status != "rejected" || r.HTTPStatus != 429 {
				t.Errorf("queue refusal logged as %s/%d", r.Status, r.HTTPStatus)
			}
		}
		if r.QueueWaitMS != nil {
			queuedRows++
			if r.PriorityClass == "" {
				t.Errorf("queued row without its class: %+v", r)
			}
		}
	}
	if refusedRows != 5 || queuedRows < 5 {
		t.Fatalf("call log: %d queue refusals (want 5), %d rows with a queue wait (want >= 5)", refusedRows, queuedRows)
	}
	// The dashboard draws the queues and names the refusals; /metrics has
	// them per class.
	viewer := obsLogin(t, e, "watcher", store.RoleViewer)
	// A queued call's detail page says its class and how long it waited.
	for _, r := range rows {
		if r.QueueWaitMS == nil {
			continue
		}
		_, doc, _ := viewer.get("/call-logs/" + r.RequestID)
		if got, want := testID(doc, "calllog-field-queue-wait").Text(), strconv.Itoa(*r.QueueWaitMS)+" ms"; got != want {
			t.Errorf("detail of %s: queue wait %q, want %q", r.RequestID, got, want)
		}
		if got := testID(doc, "calllog-field-class").Text(); got != string(r.PriorityClass) {
			t.Errorf("detail of %s: class %q, want %q", r.RequestID, got, r.PriorityClass)
		}
		break
	}
	_, doc, _ := viewer.get("/dashboard?range=1h")
	for _, id := range []string{"chart-queue-depth", "chart-queue-wait"} {
		if c := testID(doc, id); c.Length() != 1 || c.Find(`svg[data-testid="chart-svg"]`).Length() != 1 {
			t.Errorf("%s not drawn", id)
		}
	}
	if note := testID(doc, "chart-queue-wait").Text(); !strings.Contains(note, "batch 5") {
		t.Errorf("queue chart does not count the 5 batch refusals: %q", note)
	}
	res, err := http.Get(e.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{`switchyard_queue_depth{class="batch"} 0`, `switchyard_queue_refused_total{class="batch",reason="full"} 3`,
		`switchyard_queue_refused_total{class="batch",reason="shed"} 2`, `switchyard_queue_wait_seconds_count{class="interactive"} 3`,
		`switchyard_limiter_rejections_total{reason="queue_shed"} 2`} {
		if res.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
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

// TestInstanceCapWithoutQueuesRefusesAtOnce: with no class queue, a request
// over the instance's in-flight cap gets 429 at once, and its call-log row
// names the instance cap with its value.
func TestInstanceCapWithoutQueuesRefusesAtOnce(t *testing.T) {
	e := gatewaytest.New(t, gatewaytest.Options{InstanceCap: 1, QueueBounds: [3]int{-1, -1, -1}})
	key := limitedWorld(t, e, map[string]config.TierLimit{"app": {}}, 0)["app"]
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{Latency: 500 * time.Millisecond}})
	first := make(chan int, 1)
	go func() {
		res, _ := post(t, e, key, "/v1/chat/completions", fastHello)
		first <- res.StatusCode
	}()
	waitFor(t, "the first request holds the instance's slot", func() bool { return e.Fake.Count("fake-small") == 1 })
	start := time.Now()
	res, body := post(t, e, key, "/v1/chat/completions", fastHello)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "in-flight cap of 1") {
		t.Fatalf("over the cap: %d %s", res.StatusCode, body)
	}
	if time.Since(start) > 400*time.Millisecond {
		t.Fatalf("refused after %s: it waited", time.Since(start))
	}
	if st := <-first; st != http.StatusOK {
		t.Fatalf("first request: %d", st)
	}
	rec := waitCallLogs(t, e, calllog.Filter{RequestID: res.Header.Get("X-Request-Id")}, 1)[0]
	if rec.LimitKind != limit.KindInstance || rec.LimitValue == nil || *rec.LimitValue != 1 || rec.QueueWaitMS != nil {
		t.Fatalf("row: limit %q %v, queue wait %v; want instance 1, none", rec.LimitKind, rec.LimitValue, rec.QueueWaitMS)
	}
}
