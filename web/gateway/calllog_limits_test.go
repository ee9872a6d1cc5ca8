package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
	"switchyard/routing/limit"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/gateway/gatewaytest"
)

// TestCallLogNamesTheRefusingLimit: a 429 row says which limit refused
// (rpm, with its value and reset), and a 503 because the only deployment
// was at its max concurrency says "deployment cap" with the cap, from the
// typed skip in its trail; the console's detail page says both in words.
func TestCallLogNamesTheRefusingLimit(t *testing.T) {
	t.Parallel()
	// No class queues here, so a request at the deployment's cap is refused
	// at once (with queues it would wait for the slot; see queues_test.go).
	e := gatewaytest.New(t, gatewaytest.Options{QueueBounds: [3]int{-1, -1, -1}})
	key := limitedWorld(t, e, map[string]config.TierLimit{"app": {RPM: 2}}, 1)["app"]
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{Latency: time.Second}})

	// The first request holds the deployment's only slot...
	first := make(chan int, 1)
	go func() {
		res, _ := post(t, e, key, "/v1/chat/completions", fastHello)
		first <- res.StatusCode
	}()
	for deadline := time.Now().Add(5 * time.Second); e.Fake.Count("fake-small") == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the first request never reached the vendor")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// ...so the second finds it at its cap.
	res, body := post(t, e, key, "/v1/chat/completions", fastHello)
	if code, _ := errCode(t, body); res.StatusCode != http.StatusServiceUnavailable || code != "no_available_model" {
		t.Fatalf("second request: %d %s, want 503 no_available_model", res.StatusCode, body)
	}
	capped := res.Header.Get("X-Request-Id")
	if st := <-first; st != http.StatusOK {
		t.Fatalf("first request: %d", st)
	}
	// Two requests spent the caller's RPM of 2: the third is refused.
	res, _ = post(t, e, key, "/v1/chat/completions", fastHello)
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third request: %d, want 429", res.StatusCode)
	}
	limited := res.Header.Get("X-Request-Id")

	rec := waitCallLogs(t, e, calllog.Filter{RequestID: capped}, 1)[0]
	if rec.LimitKind != limit.KindDeploymentCap || rec.LimitValue == nil || *rec.LimitValue != 1 ||
		rec.LimitResetMS == nil || *rec.LimitResetMS <= 0 || *rec.LimitResetMS > 2000 {
		t.Errorf("capped row: limit %q %v %v, want deployment_cap 1 with a reset of about a second", rec.LimitKind, rec.LimitValue, rec.LimitResetMS)
	}
	rec = waitCallLogs(t, e, calllog.Filter{RequestID: limited}, 1)[0]
	if rec.LimitKind != limit.KindRPM || rec.LimitValue == nil || *rec.LimitValue != 2 ||
		rec.LimitResetMS == nil || *rec.LimitResetMS <= 0 || *rec.LimitResetMS > 60_000 {
		t.Errorf("limited row: limit %q %v %v, want rpm 2 with a reset within the minute", rec.LimitKind, rec.LimitValue, rec.LimitResetMS)
	}

	viewer := obsLogin(t, e, "watcher", store.RoleViewer)
	for id, want := range map[string][]string{
		capped:  {"deployment cap", "max concurrency", "1 slots"},
		limited: {"rate limit of 2 requests per minute", "rpm", "after the refusal"},
	} {
		_, doc, _ := viewer.get("/call-logs/" + id)
		field := testID(doc, "calllog-field-limit").Text()
		words := testID(doc, "calllog-rejection").Text()
		for _, w := range want {
			if !strings.Contains(field+words, w) {
				t.Errorf("%s: limit %q / rejection %q do not say %q", id, field, words, w)
			}
		}
	}
	_, doc, _ := viewer.get("/call-logs?range=1h")
	if got := testID(doc, "calllog-row-"+limited).Find(`[data-testid="calllog-limit"]`).Text(); !strings.Contains(got, "rpm 2") {
		t.Errorf("the list's limit label is %q, want rpm 2", got)
	}
}
