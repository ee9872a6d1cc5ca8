package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"switchyard/e2e/fakevendor"
	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/gateway/gatewaytest"
)

// A breaker that never opens in these tests: the retry budget alone decides
// how far a failing request walks its chain.
var neverOpen = &config.BreakerSettings{Window: 1_000_000, MinCalls: 1_000_000}

// setGroup changes a route group of the draft through the store.
func setGroup(t *testing.T, e *gatewaytest.Env, name string, change func(g *config.RouteGroup)) {
	t.Helper()
	ctx := context.Background()
	snap, _, err := e.Store.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range snap.RouteGroups {
		if g.Name == name {
			change(&g)
			if err := e.Store.UpdateRouteGroup(ctx, g.ID, g); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no route group %s", name)
}

// ladderRow is a call-log row's ladder columns.
type ladderRow struct {
	Status, Code, Degraded, Tier sql.NullString
	HTTP                         int
	Attempts                     string
}

func waitLadderRow(t *testing.T, e *gatewaytest.Env, requestID string) ladderRow {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var r ladderRow
		err := e.Store.DB().QueryRow(`SELECT status, error_code, degraded, tier, http_status, attempts::text FROM call_logs WHERE request_id = $1`, requestID).
			Scan(&r.Status, &r.Code, &r.Degraded, &r.Tier, &r.HTTP, &r.Attempts)
		if err == nil {
			return r
		}
		if err != sql.ErrNoRows || time.Now().After(deadline) {
			t.Fatalf("call-log row of %s: %v", requestID, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Two instances, one vendor failing every call, a four-step chain: the
// retries both instances make together hold within ±10 % of the 20 %
// budget of first attempts; with the vendor healthy no budget is spent.
func TestRetryBudgetHoldsAcrossTwoInstances(t *testing.T) {
	t.Parallel()
	e1 := gatewaytest.New(t)
	b := e1.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-0000-0001", "sk-fake-key-0000-0002")
	var chain []config.Candidate
	for i := 1; i <= 4; i++ {
		code := fmt.Sprintf("m%d", i)
		b.Model(config.LogicModel{Code: code, Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-" + code, Weight: 100, Enabled: true, Breaker: neverOpen})
		chain = append(chain, config.Candidate{LogicModel: code, Priority: i, Weight: 100})
	}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: chain, config.TierStandard: chain, config.TierDeep: chain})
	callerID, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	setGroup(t, e1, "default", func(g *config.RouteGroup) {
		g.RetryBudget = &config.RetryBudget{Percent: 20, MinPerS: 1, WindowMS: 1000}
	})
	v := e1.Publish("retry budget 20 %")
	e2 := e1.Second()
	e2.WaitVersion(v)
	upstream := func() int64 {
		var n int64
		for i := 1; i <= 4; i++ {
			n += e1.Fake.Count(fmt.Sprintf("fake-m%d", i))
		}
		return n
	}
	budget := routing.TierKey{Group: e1.GW.Holder.Current().Groups["default"].ID, Tier: config.TierFast}
	settings := e1.GW.Holder.Current().Groups["default"].Budget

	// Healthy: one attempt each, nothing spent.
	for i := range 40 {
		e := []*gatewaytest.Env{e1, e2}[i%2]
		res, body := post(t, e, key, "/v1/chat/completions", fastHello)
		if res.StatusCode != 200 || res.Header.Get("X-Switchyard-Attempts") != "1" {
			t.Fatalf("healthy: %d %s", res.StatusCode, body)
		}
	}
	if n := upstream(); n != 40 {
		t.Fatalf("40 healthy requests made %d upstream calls", n)
	}
	if v, err := e1.GW.Budget.Peek(context.Background(), budget, settings); err != nil || v.Retries != 0 || v.Firsts < 20 {
		t.Fatalf("healthy traffic spent budget: %+v %v", v, err)
	}

	// Outage: every call fails. 200 requests a second for 2.5 s over both,
	// once the healthy first attempts have left the window.
	time.Sleep(1100 * time.Millisecond)
	e1.Fake.SetRules(fakevendor.Rule{Fault: fakevendor.Fault{Status: 500}})
	before := upstream()
	var requests, exhausted atomic.Int64
	var sample atomic.Value
	var wg sync.WaitGroup
	const rate, length = 200, 2500 * time.Millisecond
	start := time.Now()
	for i := 0; time.Duration(i)*time.Second/rate < length; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / rate)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := []*gatewaytest.Env{e1, e2}[i%2]
			res, body := post(t, e, key, "/v1/chat/completions", fastHello)
			requests.Add(1)
			switch code, _ := errCode(t, body); {
			case res.StatusCode == 503 && code == string(routing.CodeRetryBudgetExhausted):
				exhausted.Add(1)
				sample.Store([]any{res.Header.Clone(), string(body)})
			case res.StatusCode == 502 && code == "upstream_error": // the whole chain, within the budget
			default:
				t.Errorf("outage answer %d %s", res.StatusCode, body)
			}
		}()
	}
	wg.Wait()
	if fb := e1.GW.Budget.FallbackDecisions() + e2.GW.Budget.FallbackDecisions(); fb > 0 {
		t.Fatalf("%d retry decisions fell back to per-instance counting (Redis too slow?)", fb)
	}
	n, calls := requests.Load(), upstream()-before
	retries := calls - n // every request made its first attempt
	ratio := float64(retries) / float64(n)
	t.Logf("outage: %d requests, %d upstream calls, %d retries (%.1f%% of first attempts; budget 20%%), %d stopped by the budget",
		n, calls, retries, 100*ratio, exhausted.Load())
	if ratio < 0.18 || ratio > 0.22 {
		t.Fatalf("retries were %.1f%% of first attempts, want 20%% ± 10%% of it", 100*ratio)
	}
	// Without a budget the same outage makes 4 calls a request.
	if exhausted.Load() < n/2 {
		t.Fatalf("only %d of %d requests were stopped by the budget", exhausted.Load(), n)
	}
	got := sample.Load().([]any)
	hdr, body := got[0].(http.Header), got[1].(string)
	if hdr.Get("Retry-After") == "" || !strings.Contains(body, "the retry budget of route group default, tier fast is spent (20% of first attempts, at least 1/s, over 1s)") {
		t.Fatalf("503 without its wait or words: %v %s", hdr, body)
	}
	r := waitLadderRow(t, e1, hdr.Get("X-Request-Id"))
	if r.Status.String != "upstream_error" || r.Code.String != string(routing.CodeRetryBudgetExhausted) || r.HTTP != 503 || !strings.Contains(r.Attempts, `"code": "retry_budget_exhausted"`) {
		t.Fatalf("call log: %+v", r)
	}
	// The header counts the calls made, not the step the budget refused.
	if made := strings.Count(r.Attempts, `"outcome": "failed"`); made == 0 || hdr.Get("X-Switchyard-Attempts") != strconv.Itoa(made) {
		t.Fatalf("X-Switchyard-Attempts %q, but the trail made %d calls: %s", hdr.Get("X-Switchyard-Attempts"), made, r.Attempts)
	}

	if m := scrape(t, e1); !strings.Contains(m, `switchyard_retry_budget_exhausted_total{group="default",tier="fast"}`) {
		t.Fatal("/metrics does not count the requests the budget stopped")
	}

	// Test route states the budget and its window; the dashboard counts
	// the retries and the requests the budget stopped.
	admin := obsLogin(t, e1, "ops", store.RoleAdmin)
	_, doc, _ := admin.get("/test-route?caller=" + strconv.FormatInt(callerID, 10) + "&model=fast")
	if got := testID(doc, "testroute-retry-budget").Text(); !strings.Contains(got, "retries may be 20% of tier fast's first attempts over 1s, at least 1/s") ||
		testID(doc, "testroute-retry-budget-state").Length() != 1 {
		t.Fatalf("Test route budget: %q", got)
	}
	waitLadder(t, e1, 40+n)
	_, doc, _ = admin.get("/dashboard?range=24h")
	row := doc.Find(`[data-testid="ladder-row"][data-group="default"][data-tier="fast"]`)
	if testID(doc, "chart-retries").Length() != 1 || row.Find(`[data-testid="ladder-exhausted"]`).Text() != strconv.FormatInt(exhausted.Load(), 10) ||
		!strings.HasPrefix(row.Find(`[data-testid="ladder-retries"]`).Text(), strconv.FormatInt(retries, 10)+" ") {
		t.Fatalf("dashboard row: exhausted %q retries %q (want %d, %d)", row.Find(`[data-testid="ladder-exhausted"]`).Text(), row.Find(`[data-testid="ladder-retries"]`).Text(), exhausted.Load(), retries)
	}
}

// waitLadderTier waits until a group × tier's ladder_stats pass ok.
func waitLadderTier(t *testing.T, e *gatewaytest.Env, group, tier string, ok func(calllog.LadderPoint) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		pts, err := calllog.LadderSeries(context.Background(), e.Store.DB(), calllog.LadderQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var sum calllog.LadderPoint
		for _, p := range pts {
			if p.Group == group && p.Tier == tier {
				sum.Requests += p.Requests
				sum.StepDown += p.StepDown
				sum.Cached += p.Cached
				sum.Static += p.Static
			}
		}
		if ok(sum) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ladder_stats of %s/%s: %+v", group, tier, sum)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitLadder waits until ladder_stats counts n requests.
func waitLadder(t *testing.T, e *gatewaytest.Env, n int64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		pts, err := calllog.LadderSeries(context.Background(), e.Store.DB(), calllog.LadderQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		for _, p := range pts {
			got += p.Requests
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ladder_stats counts %d requests, want %d", got, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The ladder, rung by rung, on two instances sharing Redis: a tier whose
// SLA breaks steps down to the lighter tier (per instance); a cacheable
// request is answered from the group's cache when every candidate failed
// (written by one instance, served by the other, plain and streamed); any
// other request gets the static answer, marked as such; the caller's own
// fault is never papered over. Each is reported in the header and the
// call log.
func TestDegradationLadderSteps(t *testing.T) {
	t.Parallel()
	e1 := gatewaytest.New(t)
	b := e1.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-0000-0001")
	b.Model(config.LogicModel{Code: "small", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-small", Weight: 100, Enabled: true, Breaker: neverOpen})
	b.Model(config.LogicModel{Code: "big", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-big", Weight: 100, Enabled: true, Breaker: neverOpen})
	small := []config.Candidate{{LogicModel: "small", Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: small, config.TierStandard: small, config.TierDeep: {{LogicModel: "big", Weight: 100}}})
	callerID, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	const static = "The assistant is unavailable right now; please try again in a few minutes."
	setGroup(t, e1, "default", func(g *config.RouteGroup) {
		g.Degradation = &config.Degradation{
			StepDown:     []config.StepDown{{Tier: config.TierDeep, To: config.TierStandard, ErrorPercent: 50, WindowMS: 2000, MinCalls: 5, HoldMS: 60_000}},
			Cache:        &config.Cache{Scope: config.CacheScopeGroup, TTLMS: 60_000},
			StaticAnswer: static,
		}
	})
	v := e1.Publish("ladder")
	e2 := e1.Second()
	e2.WaitVersion(v)

	// Tier step-down: deep fails (each failure answered by the static
	// answer) until its error rate breaks the SLA; then deep's traffic is
	// served by standard.
	e1.Fake.SetRules(fakevendor.Rule{Model: "fake-big", Fault: fakevendor.Fault{Status: 500}})
	deepHello := `{"model":"deep","messages":[{"role":"user","content":"hi"}]}`
	var stepped *http.Response
	for i := 0; i < 60 && stepped == nil; i++ {
		res, body := post(t, e1, key, "/v1/chat/completions", deepHello)
		switch res.Header.Get(routing.HeaderDegraded) {
		case routing.DegradedStepDown:
			stepped = res
			if res.StatusCode != 200 || res.Header.Get("X-Switchyard-Tier") != "standard" || res.Header.Get("X-Switchyard-Model") != "small" {
				t.Fatalf("stepped down: %d %v %s", res.StatusCode, res.Header, body)
			}
		case routing.DegradedStatic:
		default:
			t.Fatalf("deep failing: %d %v %s", res.StatusCode, res.Header, body)
		}
		time.Sleep(40 * time.Millisecond)
	}
	if stepped == nil {
		t.Fatal("deep never stepped down")
	}
	r := waitLadderRow(t, e1, stepped.Header.Get("X-Request-Id"))
	if r.Status.String != "ok" || r.Degraded.String != "step_down" || r.Tier.String != "standard" ||
		!strings.Contains(r.Attempts, `"from": "deep"`) || !strings.Contains(r.Attempts, `"over_error_percent": 50`) {
		t.Fatalf("step-down call log: %+v", r)
	}
	// Test route plans what the data plane would: deep steps down to standard.
	admin := obsLogin(t, e1, "ops", store.RoleAdmin)
	_, doc, _ := admin.get("/test-route?caller=" + strconv.FormatInt(callerID, 10) + "&model=deep")
	if got := testID(doc, "testroute-stepped").Text(); !strings.Contains(got, "stepped down from tier deep to standard") ||
		!strings.Contains(testID(doc, "testroute-target").Text(), "standard") || !strings.Contains(testID(doc, "testroute-step-down").Text(), "stepped down") {
		t.Fatalf("Test route: stepped %q target %q", got, testID(doc, "testroute-target").Text())
	}
	if !strings.Contains(testID(doc, "testroute-static").Text(), static) || !strings.Contains(testID(doc, "testroute-cache").Text(), "any caller of default's") {
		t.Fatalf("Test route ladder: %q", testID(doc, "testroute-ladder").Text())
	}
	// The window is per instance: the other instance has judged nothing yet.
	if res, _ := post(t, e2, key, "/v1/chat/completions", deepHello); res.Header.Get(routing.HeaderDegraded) != routing.DegradedStatic {
		t.Fatalf("the other instance stepped down without failures of its own: %v", res.Header)
	}
	// An explicit logic-model request is never substituted.
	if res, _ := post(t, e1, key, "/v1/chat/completions", `{"model":"big","messages":[{"role":"user","content":"hi"}]}`); res.Header.Get(routing.HeaderDegraded) != routing.DegradedStatic || res.Header.Get("X-Switchyard-Tier") != routing.TierExplicit {
		t.Fatalf("explicit request: %v", res.Header)
	}
	e1.Fake.ClearRules()

	// Cached answer: a deterministic request answered on one instance...
	cacheable := `{"model":"standard","temperature":0,"messages":[{"role":"user","content":"What is 2+2?"}]}`
	res, first := post(t, e1, key, "/v1/chat/completions", cacheable)
	if res.StatusCode != 200 || res.Header.Get(routing.HeaderDegraded) != "" {
		t.Fatalf("healthy: %d %s", res.StatusCode, first)
	}
	// ...is served by the other when the vendor fails (keys reordered and
	// spaces added: the same request canonically).
	e1.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{Status: 503}})
	same := `{"messages": [{"content": "What is 2+2?", "role": "user"}], "temperature": 0, "model": "standard"}`
	var hit *http.Response
	var body []byte
	// A try before the answer reached the cache gets the static answer
	// (the last rung): counted, so the dashboard's totals can be checked.
	earlyStatic := 0
	for range 50 { // the write reaches Redis once the first answer is sent
		hit, body = post(t, e2, key, "/v1/chat/completions", same)
		if hit.Header.Get(routing.HeaderDegraded) == routing.DegradedCached {
			break
		}
		if hit.Header.Get(routing.HeaderDegraded) == routing.DegradedStatic {
			earlyStatic++
		}
		time.Sleep(20 * time.Millisecond)
	}
	if hit.StatusCode != 200 || hit.Header.Get(routing.HeaderDegraded) != routing.DegradedCached || !bytes.Equal(body, first) || hit.Header.Get("Age") == "" {
		t.Fatalf("cached answer: %d %v\n%s\nwant\n%s", hit.StatusCode, hit.Header, body, first)
	}
	r = waitLadderRow(t, e2, hit.Header.Get("X-Request-Id"))
	if r.Status.String != "upstream_error" || r.Degraded.String != "cached" || r.HTTP != 200 || r.Code.String != "upstream_error" {
		t.Fatalf("cached call log: %+v", r)
	}
	// Streamed: the same answer as chunks.
	res, sse := post(t, e2, key, "/v1/chat/completions", strings.Replace(same, `"temperature"`, `"stream":true,"temperature"`, 1))
	var firstAnswer struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	_ = json.Unmarshal(first, &firstAnswer)
	if res.Header.Get(routing.HeaderDegraded) != routing.DegradedCached || streamText(t, sse) != firstAnswer.Choices[0].Message.Content || !bytes.HasSuffix(sse, []byte("data: [DONE]\n\n")) {
		t.Fatalf("cached stream: %v\n%s", res.Header, sse)
	}

	// A streamed answer is kept too, and served to a plain request.
	e1.Fake.ClearRules()
	streamed := `{"model":"standard","stream":true,"temperature":0,"messages":[{"role":"user","content":"What is 3+3?"}]}`
	res, sse = post(t, e1, key, "/v1/chat/completions", streamed)
	text := streamText(t, sse)
	if res.StatusCode != 200 || text == "" {
		t.Fatalf("healthy stream: %d %s", res.StatusCode, sse)
	}
	e1.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{Status: 503}})
	plain := strings.Replace(streamed, `"stream":true,`, "", 1)
	var fromStream struct {
		Model   string `json:"model"`
		Choices []struct {
			Message      struct{ Content string } `json:"message"`
			FinishReason string                   `json:"finish_reason"`
		} `json:"choices"`
	}
	for range 50 {
		res, body = post(t, e2, key, "/v1/chat/completions", plain)
		if res.Header.Get(routing.HeaderDegraded) == routing.DegradedCached {
			break
		}
		if res.Header.Get(routing.HeaderDegraded) == routing.DegradedStatic {
			earlyStatic++
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := json.Unmarshal(body, &fromStream); err != nil || res.Header.Get(routing.HeaderDegraded) != routing.DegradedCached ||
		fromStream.Choices[0].Message.Content != text || fromStream.Model != "small" || fromStream.Choices[0].FinishReason != "stop" {
		t.Fatalf("answer kept from a stream: %v %s", res.Header, body)
	}

	// Static answer, through the official SDK, plain and streamed: marked by
	// its finish_reason, model and header.
	var hdr http.Header
	client := sdk(e1, key, option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if res != nil {
			hdr = res.Header
		}
		return res, err
	}))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "standard", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tell me a story")}}
	resp, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != static || resp.Choices[0].FinishReason != routing.FinishStatic || resp.Model != routing.StaticModel || hdr.Get(routing.HeaderDegraded) != routing.DegradedStatic {
		t.Fatalf("static answer: %+v %v", resp, hdr)
	}
	staticID := hdr.Get("X-Request-Id")
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var finish string
	text = ""
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) > 0 {
			text += ch.Choices[0].Delta.Content
			if ch.Choices[0].FinishReason != "" {
				finish = ch.Choices[0].FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil || text != static || finish != routing.FinishStatic || hdr.Get(routing.HeaderDegraded) != routing.DegradedStatic {
		t.Fatalf("static stream: %q %q %v %v", text, finish, err, hdr)
	}
	r = waitLadderRow(t, e1, staticID)
	if r.Status.String != "upstream_error" || r.Degraded.String != "static" || r.HTTP != 200 || !strings.Contains(r.Attempts, `"level": "static"`) {
		t.Fatalf("static call log: %+v", r)
	}
	if m := scrape(t, e1); !strings.Contains(m, `switchyard_degraded_total{group="default",level="static",tier="standard"}`) {
		t.Fatal("/metrics does not count degraded answers")
	}

	// The caller's own fault is answered as such, never degraded.
	e1.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{Status: 400}})
	res, body = post(t, e1, key, "/v1/chat/completions", cacheable)
	if res.StatusCode != 400 || res.Header.Get(routing.HeaderDegraded) != "" {
		t.Fatalf("a refused request was degraded: %d %v %s", res.StatusCode, res.Header, body)
	}

	// The call-log detail and the dashboard show every rung.
	_, doc, _ = admin.get("/call-logs/" + staticID)
	if got := testID(doc, "calllog-degraded").Text(); !strings.Contains(got, "static answer") || testID(doc, "calllog-field-degraded").Text() != "static" {
		t.Fatalf("call-log detail: %q", got)
	}
	statics := 2 + earlyStatic
	waitLadderTier(t, e1, "default", "standard", func(p calllog.LadderPoint) bool {
		return p.Static >= int64(statics) && p.Cached >= 3 && p.StepDown >= 1
	})
	_, doc, _ = admin.get("/dashboard?range=24h")
	std := doc.Find(`[data-testid="ladder-row"][data-group="default"][data-tier="standard"]`)
	if std.Find(`[data-testid="ladder-step-down"]`).Text() != "1" || std.Find(`[data-testid="ladder-cached"]`).Text() != "3" || std.Find(`[data-testid="ladder-static"]`).Text() != strconv.Itoa(statics) {
		t.Fatalf("dashboard standard row: %q (want 1 step-down, 3 cached, %d static)", std.Text(), statics)
	}
	if deep := doc.Find(`[data-testid="ladder-row"][data-group="default"][data-tier="deep"]`); !strings.Contains(deep.Find(`[data-testid="ladder-now"]`).Text(), "stepped down") {
		t.Fatalf("dashboard deep row: %q", deep.Text())
	}
}

// streamText is the content of an SSE chat stream.
func streamText(t *testing.T, sse []byte) string {
	t.Helper()
	var out strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(sse))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		if len(ch.Choices) > 0 {
			out.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	return out.String()
}

func scrape(t *testing.T, e *gatewaytest.Env) string {
	t.Helper()
	res, err := http.Get(e.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, res.Body)
	return b.String()
}
