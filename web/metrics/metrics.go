// Package metrics defines Switchyard's Prometheus metrics (served on
// /metrics) and the small recording helpers the data plane calls.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"switchyard/routing"
	"switchyard/routing/frontdoor"
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
	// Degraded counts answers by rung of the degradation ladder; Budget
	// counts requests the retry budget stopped, by route group and tier.
	Degraded *prometheus.CounterVec
	Budget   *prometheus.CounterVec
	// QueueWait is how long requests waited in their class's queue for
	// capacity (one observation per wait); QueueRefused counts those that
	// left without capacity (full, shed, expired).
	QueueWait    *prometheus.HistogramVec
	QueueRefused *prometheus.CounterVec
	// Dropped counts the request fields a translation left out, by front
	// door, the serving deployment's protocol and field.
	Dropped *prometheus.CounterVec

	// The series Finished records, by label set, resolved once: a label
	// lookup hashes every label and takes the vector's lock.
	seriesMu sync.RWMutex
	requests map[requestLabels]requestSeries
	tokens   map[tokenLabels]prometheus.Counter

	connClosed *prometheus.CounterVec
	alerting   []prometheus.Collector // the state gauges Alerting registers
}

type requestLabels struct{ caller, tier, model, status, class, endpoint string }

type requestSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

type tokenLabels struct{ caller, tier, model, kind string }

// maxCachedSeries bounds each cache; past it the cache starts over (the
// series stay in the registry).
const maxCachedSeries = 20000

func (m *Metrics) requestSeries(l requestLabels) requestSeries {
	m.seriesMu.RLock()
	s, ok := m.requests[l]
	m.seriesMu.RUnlock()
	if ok {
		return s
	}
	s = requestSeries{count: m.Requests.WithLabelValues(l.caller, l.tier, l.model, l.status, l.class, l.endpoint),
		duration: m.Duration.WithLabelValues(l.tier, l.status, l.endpoint)}
	m.seriesMu.Lock()
	if m.requests == nil || len(m.requests) >= maxCachedSeries {
		m.requests = map[requestLabels]requestSeries{}
	}
	m.requests[l] = s
	m.seriesMu.Unlock()
	return s
}

func (m *Metrics) tokenSeries(l tokenLabels) prometheus.Counter {
	m.seriesMu.RLock()
	c, ok := m.tokens[l]
	m.seriesMu.RUnlock()
	if ok {
		return c
	}
	c = m.Tokens.WithLabelValues(l.caller, l.tier, l.model, l.kind)
	m.seriesMu.Lock()
	if m.tokens == nil || len(m.tokens) >= maxCachedSeries {
		m.tokens = map[tokenLabels]prometheus.Counter{}
	}
	m.tokens[l] = c
	m.seriesMu.Unlock()
	return c
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
			Help: "Requests refused by our own protection (rate_limited, quota_exceeded, budget_exceeded, queue_full, queue_shed)."}, []string{"reason"}),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_upstream_attempts_total",
			Help: "Upstream attempts by provider and outcome class (ok or a failure class)."}, []string{"provider", "class"}),
		Breakers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "switchyard_breaker_state",
			Help: "Circuit breaker state per deployment on this instance: 0 closed, 1 half-open, 2 open."}, []string{"deployment"}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_config_reloads_total",
			Help: "Configuration loads by result (ok|refused)."}, []string{"result"}),
		Live: prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchyard_config_version", Help: "The configuration version this instance serves."}),
		QueueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchyard_queue_wait_seconds",
			Help:    "Time a request waited in its priority class's queue for capacity (instance in-flight cap or deployments at capacity), per wait.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}}, []string{"class"}),
		QueueRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_queue_refused_total",
			Help: "Requests that left their class's queue without capacity: full (refused at once), shed (for an interactive request), expired (deadline)."},
			[]string{"class", "reason"}),
	}
	m.Degraded = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_degraded_total",
		Help: "Answers of the degradation ladder by route group, tier and level (step_down|cached|static)."}, []string{"group", "tier", "level"})
	m.Budget = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_retry_budget_exhausted_total",
		Help: "Requests the retry budget stopped before their next step, by route group and tier."}, []string{"group", "tier"})
	m.Dropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_dropped_fields_total",
		Help: "Request fields a translation left out (the field policy's drops), by front door, the serving deployment's protocol and field (other: a field no policy lists)."},
		[]string{"endpoint", "protocol", "field"})
	m.connClosed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_connections_closed_total",
		Help: "Client connections the connection caps closed (idle_per_ip, idle_cap, for_new: the oldest idle first) or refused (refused_at_cap)."}, []string{"reason"})
	r.MustRegister(m.Requests, m.Duration, m.TTFC, m.Tokens, m.Cost, m.Rejections, m.Attempts, m.Breakers, m.Reloads, m.Live, m.Degraded, m.Budget, m.QueueWait, m.QueueRefused, m.Dropped)
	for name, f := range gauges {
		if gaugeHelp[name] == "" {
			panic("metrics: gauge " + name + " has no help text in gaugeHelp")
		}
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: gaugeHelp[name]}, f))
	}
	return m
}

// gaugeHelp lists every callback gauge New accepts, with its help text:
// the shipped Grafana dashboard's test builds the registry from it.
var gaugeHelp = map[string]string{
	"switchyard_calllog_buffer_depth":     "Call-log records waiting in memory.",
	"switchyard_calllog_spill_bytes":      "Bytes in the call-log spill file (PostgreSQL unavailable).",
	"switchyard_redis_degraded":           "1 when Redis is unreachable and limits are per instance.",
	"switchyard_inflight_requests":        "Data-plane requests in flight on this instance.",
	"switchyard_body_bytes_in_flight":     "Request-body bytes charged to the instance's bound (SWITCHYARD_MAX_BODY_BYTES_IN_FLIGHT) now.",
	"switchyard_config_load_failing":      "1 when the newest published version failed to load here.",
	"switchyard_goroutines_dataplane":     "Goroutines (for leak checks).",
	"switchyard_config_from_cache":        "1 while this instance serves the last-known-good configuration copy (PostgreSQL unreachable at start).",
	"switchyard_config_cache_epoch":       "The epoch of the cached configuration copy served; 0 when not serving one.",
	"switchyard_config_cache_unwitnessed": "1 when the cached copy served had no witness to check it against.",
	"switchyard_postgres_unreachable":     "1 while PostgreSQL does not answer this instance.",
	"switchyard_draining":                 "1 while this instance drains for shutdown.",
}

// Documented reports whether name is a scrape-time gauge New knows (the
// shipped alerting rules are checked against these).
func Documented(name string) bool { _, ok := gaugeHelp[name]; return ok }

// Connections registers switchyard_connections_open and
// switchyard_connections_idle, read from stats at scrape time, and
// switchyard_connections_closed_total{reason} (ConnClosed counts it). A nil
// stats (no instance-wide cap) registers only the counter.
func (m *Metrics) Connections(stats func() (open, idle int)) {
	m.Registry.MustRegister(m.connClosed)
	if stats == nil {
		return
	}
	for _, g := range []struct {
		name, help string
		idle       bool
	}{{"switchyard_connections_open", "Client connections open on this instance.", false},
		{"switchyard_connections_idle", "Client connections idle on this instance (keep-alive, or not yet sending a request).", true}} {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help}, func() float64 {
			open, idle := stats()
			if g.idle {
				return float64(idle)
			}
			return float64(open)
		}))
	}
}

// ConnClosed counts a connection the connection caps closed or refused.
func (m *Metrics) ConnClosed(reason string) { m.connClosed.WithLabelValues(reason).Inc() }

// QueueDepth registers switchyard_queue_depth{class}, read from depth at
// scrape time.
func (m *Metrics) QueueDepth(depth func(class string) float64) {
	for _, c := range []string{"interactive", "normal", "batch"} {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchyard_queue_depth",
			Help: "Requests waiting in the priority class's queue on this instance.", ConstLabels: prometheus.Labels{"class": c}},
			func() float64 { return depth(c) }))
	}
}

// LimitDecisions registers switchyard_limit_decisions_total{by}: limit
// decisions taken from a leased slice, in Redis, or by the per-instance
// fallback while Redis was unreachable, read from count at scrape time.
func (m *Metrics) LimitDecisions(count func(by string) float64) {
	for _, by := range []string{"slice", "redis", "instance"} {
		m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchyard_limit_decisions_total",
			Help: "Limit decisions by where they were taken: slice (leased on this instance), redis, instance (fallback while Redis is unreachable).", ConstLabels: prometheus.Labels{"by": by}},
			func() float64 { return count(by) }))
	}
}

// Handler serves the registry.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

// Finished counts one data-plane request: its outcome, latency, first-chunk
// time, tokens, cost and upstream attempts.
func (m *Metrics) Finished(c *record.Call, tr *routing.Trail, elapsed time.Duration) {
	ep, tier := endpointLabel(c.Endpoint), string(c.Tier)
	rs := m.requestSeries(requestLabels{c.Caller, tier, c.LogicModel, string(c.Status), string(c.ErrorClass), ep})
	rs.count.Inc()
	rs.duration.Observe(elapsed.Seconds())
	if c.TTFCMS != nil {
		m.TTFC.WithLabelValues(tier).Observe(float64(*c.TTFCMS) / 1000)
	}
	for _, tk := range [...]struct {
		kind string
		n    *int64
	}{{"prompt", c.PromptTokens}, {"completion", c.CompletionTokens}, {"cached", c.CachedTokens}, {"reasoning", c.ReasoningTokens}} {
		if tk.n != nil && *tk.n > 0 {
			m.tokenSeries(tokenLabels{c.Caller, tier, c.LogicModel, tk.kind}).Add(float64(*tk.n))
		}
	}
	if c.CostMicros != nil && *c.CostMicros > 0 {
		m.Cost.WithLabelValues(c.Caller, c.Currency).Add(float64(*c.CostMicros) / 1e6)
	}
	if c.Degraded != "" {
		m.Degraded.WithLabelValues(c.RouteGroup, tier, c.Degraded).Inc()
	}
	if c.ErrorCode == string(routing.CodeRetryBudgetExhausted) {
		m.Budget.WithLabelValues(c.RouteGroup, tier).Inc()
	}
	for _, f := range c.DroppedFields {
		m.Dropped.WithLabelValues(ep, tr.ServedProtocol, frontdoor.FieldLabel(f)).Inc()
	}
	for _, a := range tr.Attempts {
		switch a.Outcome {
		case "ok":
			m.Attempts.WithLabelValues(a.Provider, "ok").Inc()
		case "failed":
			m.Attempts.WithLabelValues(a.Provider, string(a.Class)).Inc()
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
