package calllogs

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"switchyard/routing/limit"
	"switchyard/routing/record"
)

func TestLimitWordsNameEveryKind(t *testing.T) {
	at := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		kind         limit.Kind
		value, reset *int64
		short, words string
	}{
		{limit.KindRPM, new(int64(2)), new(int64(38_250)), "rpm 2", "rate limit of 2 requests per minute (rpm)"},
		{limit.KindTPM, new(int64(120_000)), new(int64(900)), "tpm 120,000", "rate limit of 120,000 tokens per minute (tpm)"},
		{limit.KindDaily, new(int64(1_000_000)), new(int64(6 * 3600_000)), "daily tokens 1,000,000", "daily token quota of 1,000,000 tokens"},
		{limit.KindBudget, new(int64(12_500_000)), nil, "monthly budget 12.5", "monthly budget of 12.5"},
		{limit.KindInstance, new(int64(400)), new(int64(1000)), "instance cap 400", "in-flight cap of 400 requests"},
		{limit.KindDeploymentCap, new(int64(4)), new(int64(1000)), "deployment cap 4", "max concurrency (4 slots in all"},
		{limit.KindQueueFull, new(int64(64)), new(int64(250)), "queue full 64", "the batch queue of this gateway instance, full at 64 waiting"},
		{limit.KindQueueShed, new(int64(16)), new(int64(1000)), "shed from queue", "the batch queue of this gateway instance, which shed it"},
		{limit.Kind("a_later_kind"), new(int64(7)), nil, "a_later_kind 7", "the limit a_later_kind of 7"},
	} {
		r := record.Call{At: at, Caller: "app", Tier: "fast", HTTPStatus: 429, PriorityClass: "batch", LimitKind: tc.kind, LimitValue: tc.value, LimitResetMS: tc.reset}
		if got := LimitShort(r); got != tc.short {
			t.Errorf("%s: short %q, want %q", tc.kind, got, tc.short)
		}
		if got := LimitWords(r); !strings.Contains(got, tc.words) {
			t.Errorf("%s: words %q, want %q in them", tc.kind, got, tc.words)
		}
		explained := ExplainLimit(r)
		if !strings.Contains(explained, LimitWords(r)) || !strings.Contains(explained, "429") {
			t.Errorf("%s: explanation %q", tc.kind, explained)
		}
		if tc.reset != nil && !strings.Contains(explained, "after the refusal, at 2026-08-01 ") {
			t.Errorf("%s: explanation %q does not say when it reset", tc.kind, explained)
		}
	}
	if got := ResetWords(record.Call{At: at, LimitResetMS: new(int64(38_300))}); got != "it lets a request pass again 38.3 s after the refusal, at 2026-08-01 12:00:38 UTC" {
		t.Errorf("reset words %q", got)
	}
	if LimitShort(record.Call{}) != "" || ExplainLimit(record.Call{}) != "" {
		t.Error("a call no limit refused has no limit words")
	}
}

func TestSummarizeCountsCallsAndMarksFailover(t *testing.T) {
	trail := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	type a = map[string]any
	for _, tc := range []struct {
		name     string
		attempts json.RawMessage
		calls    int
		failover bool
		path     string
	}{
		{"none", nil, 0, false, ""},
		{"first try", trail(a{"attempts": []a{{"deployment_id": 2, "provider": "y", "outcome": "ok"}}}), 1, false, "y ok"},
		{"next key is no failover", trail(a{"attempts": []a{
			{"deployment_id": 2, "provider": "y", "outcome": "failed", "class": "rate_limited"},
			{"deployment_id": 2, "provider": "y", "outcome": "ok"}}}), 2, false, "y rate_limited → y ok"},
		{"failover after a 401", trail(a{"attempts": []a{
			{"deployment_id": 1, "provider": "x", "outcome": "failed", "class": "auth"},
			{"deployment_id": 3, "provider": "z", "outcome": "skipped"},
			{"deployment_id": 2, "provider": "y", "outcome": "ok"}}}), 2, true, "x auth → y ok"},
		{"bare array", trail([]a{{"deployment_id": 1, "provider": "x", "outcome": "failed", "class": "server"}, {"deployment_id": 2, "provider": "y", "outcome": "failed", "class": "timeout"}}),
			2, true, "x server → y timeout"},
	} {
		got := Summarize(record.Call{Attempts: tc.attempts})
		if got.Calls != tc.calls || got.Failover != tc.failover || got.Path != tc.path {
			t.Errorf("%s: %+v", tc.name, got)
		}
	}
}

func TestBackKeepsOnlyTheSearch(t *testing.T) {
	for in, want := range map[string]string{
		"": "/call-logs",
		"caller=app&error_class=auth&cursor=abc&range=24h&anchor=1700000000": "/call-logs?anchor=1700000000&caller=app&cursor=abc&error_class=auth&range=24h",
		"next=//evil.example&caller=app":                                     "/call-logs?caller=app",
		"//evil.example":                                                     "/call-logs",
		"%zz":                                                                "/call-logs",
		"deployment=7&key=sk-%E2%80%A6abcd":                                  "/call-logs?deployment=7&key=sk-%E2%80%A6abcd",
	} {
		if got := Back(in); got != want {
			t.Errorf("Back(%q) = %q, want %q", in, got, want)
		}
	}
	// The row links carry the search and its page.
	r := Results{Filter: Filter{Range: "24h", Anchor: "1700000000", ErrorClass: "auth", Cursor: "Y3Vy"}}
	link := r.RowURL(record.Call{RequestID: "req-1", At: time.UnixMicro(5)})
	if !strings.HasPrefix(link, "/call-logs/req-1?at=5&back=") {
		t.Fatalf("row link %q", link)
	}
	back := link[strings.Index(link, "back=")+5:]
	q, _ := urlUnescape(back)
	if got := Back(q); got != "/call-logs?anchor=1700000000&cursor=Y3Vy&error_class=auth&range=24h" {
		t.Errorf("the way back from %q is %q", link, got)
	}
}

func urlUnescape(s string) (string, error) { return url.QueryUnescape(s) }
