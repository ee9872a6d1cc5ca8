package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"switchyard/routing"
	"switchyard/routing/record"
)

// Finished resolves each label set once and keeps using it: the counts
// land on the series of their own labels, whichever came first.
func TestFinishedCountsBySeries(t *testing.T) {
	m := New(nil)
	p, c := int64(12), int64(40)
	ok := &record.Call{Caller: "app", Tier: "fast", LogicModel: "small", Status: record.StatusOK, Endpoint: "chat_completions", PromptTokens: &p, CompletionTokens: &c}
	failed := &record.Call{Caller: "app", Tier: "fast", LogicModel: "small", Status: record.StatusUpstreamError, ErrorClass: "server", Endpoint: "chat_completions"}
	for range 3 {
		m.Finished(ok, &routing.Trail{}, time.Millisecond)
	}
	m.Finished(failed, &routing.Trail{}, time.Millisecond)
	if v := counter(t, m.Requests.WithLabelValues("app", "fast", "small", "ok", "", "chat_completions")); v != 3 {
		t.Errorf("ok requests = %v, want 3", v)
	}
	if v := counter(t, m.Requests.WithLabelValues("app", "fast", "small", "upstream_error", "server", "chat_completions")); v != 1 {
		t.Errorf("failed requests = %v, want 1", v)
	}
	if v := counter(t, m.Tokens.WithLabelValues("app", "fast", "small", "completion")); v != 120 {
		t.Errorf("completion tokens = %v, want 120", v)
	}
	var d dto.Metric
	if err := m.Duration.WithLabelValues("fast", "ok", "chat_completions").(prometheus.Metric).Write(&d); err != nil || d.GetHistogram().GetSampleCount() != 3 {
		t.Errorf("ok durations = %v (%v), want 3", d.GetHistogram().GetSampleCount(), err)
	}
}

func counter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}
