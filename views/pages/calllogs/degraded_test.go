package calllogs

import (
	"encoding/json"
	"strings"
	"testing"

	"switchyard/routing"
)

func TestDegradedAndBudgetWords(t *testing.T) {
	raw := json.RawMessage(`{"attempts":[{"model":"m","outcome":"failed","class":"server","status":500,"latency_ms":3},
		{"model":"n","outcome":"skipped","skip":{"code":"retry_budget_exhausted","tier":"fast","percent":20,"per_second":3,"window_ms":10000},"latency_ms":0}],
		"degraded":[{"level":"step_down","from":"deep","to":"standard","calls":40,"p95_ms":9500,"over_p95_ms":8000},
		{"level":"static","failure":"retry_budget_exhausted"}]}`)
	tr, ok := ParseTrail(raw)
	if !ok {
		t.Fatal("trail not read")
	}
	steps := Steps(tr)
	if w := steps[1].Words; !strings.Contains(w, "retry budget of tier fast was spent") || !strings.Contains(w, "20%") || !strings.Contains(w, "3/s") {
		t.Fatalf("budget skip words: %s", w)
	}
	words := DegradedWords(tr)
	if len(words) != 2 || !strings.Contains(words[0], "stepped down from tier deep to standard") || !strings.Contains(words[0], "9500 ms, above the SLA's 8000 ms") ||
		!strings.Contains(words[1], "static answer") || !strings.Contains(words[1], "retry_budget_exhausted") {
		t.Fatalf("degraded words: %q", words)
	}
	if w := ExplainDegraded(routing.Degraded{Level: "cached", AgeMS: 61_000, Scope: "group", Failure: "upstream_error"}); !strings.Contains(w, "1m1s old (group scope)") {
		t.Fatalf("cached words: %s", w)
	}
	// Only degradations: still a trail.
	if _, ok := ParseTrail(json.RawMessage(`{"degraded":[{"level":"static"}]}`)); !ok {
		t.Fatal("a trail with only a degradation is not read")
	}
}
