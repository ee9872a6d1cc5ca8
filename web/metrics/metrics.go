// Package metrics defines Switchyard's Prometheus metrics (served on
// /metrics) and the small recording helpers the data plane calls.
package metrics

import (
	"net/http"
	"time"

	"switchyard/routing"
	"switchyard/routing/record"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is one instance's registry.
type Metrics struct {
	Registry   *prometheus.Registry
	Requests   *prometheus.CounterVec
	Duration   *prometheus.HistogramVec
	TTFC       *prometheus.HistogramVec
	Tokens     *prometheus.CounterVec
	Cost       *prometheus.CounterVec
	Rejections *prometheus.CounterVec
	Attempts   *prometheus.CounterVec
	Breakers   *prometheus.GaugeVec
	Reloads    *prometheus.CounterVec
	Live       prometheus.Gauge
}

// New registers every metric. gauges adds callback gauges (buffer depth,
// spill size, Redis degradation) whose values are read at scrape time.
func New(gauges map[string]func() float64) *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	latency := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	m := &Metrics{
		Registry: r,
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_requests_total",
			Help: "Data-plane requests by caller, tier, logic model, status (ok|upstream_error|rejected|client_cancelled|interrupted), error class and endpoint (the front door: chat_completions|messages|count_tokens|responses|embeddings|models)."},
			[]string{"caller", "tier", "model", "status", "class", "endpoint"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchyard_request_duration_seconds",
			Help: "Data-plane request latency, arrival to last byte, by tier, status and endpoint (front door).", Buckets: latency}, []string{"tier", "status", "endpoint"}),
		TTFC: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchyard_time_to_first_chunk_seconds",
			Help: "Streams: arrival to the first content chunk sent.", Buckets: latency}, []string{"tier"}),
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_tokens_total",
			Help: "Tokens reported by vendors (kind: prompt|completion|cached|reasoning)."}, []string{"caller", "tier", "model", "kind"}),
		Cost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_cost_total",
			Help: "Cost from deployment prices, in each deployment's currency."}, []string{"caller", "currency"}),
		Rejections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_limiter_rejections_total",
			Help: "Requests refused by our own protection (rate_limited, quota_exceeded, budget_exceeded, shed)."}, []string{"reason"}),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_upstream_attempts_total",
			Help: "Upstream attempts by provider and outcome class (ok or a failure class)."}, []string{"provider", "class"}),
		Breakers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "switchyard_breaker_state",
			Help: "Circuit breaker state per deployment on this instance: 0 closed, 1 half-open, 2 open."}, []string{"deployment"}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_config_reloads_total",
			Help: "Configuration loads by result (ok|refused)."}, []string{"result"}),
		Live: prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchyard_config_version", Help: "The configuration version this instance serves."}),
	}
	r.MustRegister(m.Requests, m.Duration, m.TTFC, m.Tokens, m.Cost, m.Rejections, m.Attempts, m.Breakers, m.Reloads, m.Live)
	for name, f := range gauges {
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: gaugeHelp[name]}, f))
	}
	return m
}

var gaugeHelp = map[string]string{
	"switchyard_calllog_buffer_depth":  "Call-log records waiting in memory.",
	"switchyard_calllog_spill_bytes":   "Bytes in the call-log spill file (PostgreSQL unavailable).",
	"switchyard_redis_degraded":        "1 when Redis is unreachable and limits are per instance.",
	"switchyard_inflight_requests":     "Data-plane requests in flight on this instance.",
	"switchyard_config_load_failing":   "1 when the newest published version failed to load here.",
	"switchyard_goroutines_dataplane":  "Goroutines (for leak checks).",
	"switchyard_idempotency_unhealthy": "1 when the idempotency store is unreachable.",
}

// Handler serves the registry.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

// Finished counts one data-plane request: its outcome, latency, first-chunk
// time, tokens, cost and upstream attempts.
func (m *Metrics) Finished(c *record.Call, tr *routing.Trail, elapsed time.Duration) {
	ep := endpointLabel(c.Endpoint)
	m.Requests.WithLabelValues(c.Caller, c.Tier, c.LogicModel, c.Status, c.ErrorClass, ep).Inc()
	m.Duration.WithLabelValues(c.Tier, c.Status, ep).Observe(elapsed.Seconds())
	if c.TTFCMS != nil {
		m.TTFC.WithLabelValues(c.Tier).Observe(float64(*c.TTFCMS) / 1000)
	}
	for _, tk := range [...]struct {
		kind string
		n    *int64
	}{{"prompt", c.PromptTokens}, {"completion", c.CompletionTokens}, {"cached", c.CachedTokens}, {"reasoning", c.ReasoningTokens}} {
		if tk.n != nil && *tk.n > 0 {
			m.Tokens.WithLabelValues(c.Caller, c.Tier, c.LogicModel, tk.kind).Add(float64(*tk.n))
		}
	}
	if c.CostMicros != nil && *c.CostMicros > 0 {
		m.Cost.WithLabelValues(c.Caller, c.Currency).Add(float64(*c.CostMicros) / 1e6)
	}
	for _, a := range tr.Attempts {
		switch a.Outcome {
		case "ok":
			m.Attempts.WithLabelValues(a.Provider, "ok").Inc()
		case "failed":
			m.Attempts.WithLabelValues(a.Provider, a.Class).Inc()
		}
	}
}

// endpointLabel bounds the endpoint label to the known front doors.
func endpointLabel(ep string) string {
	for _, n := range routing.EndpointNames() {
		if ep == n {
			return ep
		}
	}
	return "other"
}

// Refused counts a request a limit or the instance gate refused.
func (m *Metrics) Refused(code string) { m.Rejections.WithLabelValues(code).Inc() }
