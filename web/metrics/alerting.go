package metrics

import "github.com/prometheus/client_golang/prometheus"

// Sample is one series of a state gauge read at scrape time: its label
// values, in the gauge's label order, and its value.
type Sample struct {
	Labels []string
	Value  float64
}

// AlertingSources read the states the shipped alerting rules
// (alerts/switchyard-rules.yml) watch that no counter carries. Each is
// called at scrape time; a nil one reports nothing.
type AlertingSources struct {
	// Tiers: 1 for each route group × tier that is unservable now (labels group, tier).
	Tiers func() []Sample
	// Providers: 1 for each enabled provider whose active keys are all quarantined (label provider).
	Providers func() []Sample
	// Budgets: each budgeted caller's spend this month over its budget (label caller).
	Budgets func() []Sample
}

// The gauges Alerting registers.
const (
	TierUnservable      = "switchyard_tier_unservable"
	ProviderQuarantined = "switchyard_provider_keys_quarantined"
	CallerBudgetSpent   = "switchyard_caller_budget_spent_ratio"
)

// Alerting registers the state gauges of the alerting rules.
func (m *Metrics) Alerting(s AlertingSources) {
	m.alerting = []prometheus.Collector{
		&stateGauge{desc: prometheus.NewDesc(TierUnservable, "1 while the route group × tier has candidates none of which can serve (every request gets 503 no_available_model).", []string{"group", "tier"}, nil), read: s.Tiers},
		&stateGauge{desc: prometheus.NewDesc(ProviderQuarantined, "1 while every active key of the enabled provider is quarantined.", []string{"provider"}, nil), read: s.Providers},
		&stateGauge{desc: prometheus.NewDesc(CallerBudgetSpent, "A budgeted caller's spend this month over its monthly budget (1 = all of it).", []string{"caller"}, nil), read: s.Budgets},
	}
	m.Registry.MustRegister(m.alerting...)
}

// stateGauge is a gauge whose series are read at scrape time.
type stateGauge struct {
	desc *prometheus.Desc
	read func() []Sample
}

func (g *stateGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *stateGauge) Collect(ch chan<- prometheus.Metric) {
	if g.read == nil {
		return
	}
	for _, s := range g.read() {
		if m, err := prometheus.NewConstMetric(g.desc, prometheus.GaugeValue, s.Value, s.Labels...); err == nil {
			ch <- m
		}
	}
}
