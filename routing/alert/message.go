package alert

import (
	"encoding/json"
	"fmt"
	"time"
)

// Shape is a webhook channel's payload format.
type Shape string

// Shapes.
const (
	// ShapeGeneric posts Payload as JSON.
	ShapeGeneric Shape = "generic"
	// ShapeSlack posts {"text": …}, which Slack's incoming webhooks (and
	// Mattermost, Rocket.Chat, …) accept.
	ShapeSlack Shape = "slack"
)

// Valid reports whether s is a known shape.
func (s Shape) Valid() bool { return s == ShapeGeneric || s == ShapeSlack }

// Payload is the generic JSON message.
type Payload struct {
	Status   Event     `json:"status"`
	Rule     Kind      `json:"rule"`
	RuleID   int64     `json:"rule_id"`
	Subject  Subject   `json:"subject"`
	Value    float64   `json:"value"`
	Summary  string    `json:"summary"`
	FiredAt  time.Time `json:"fired_at"`
	At       time.Time `json:"at"`
	DedupKey string    `json:"dedup_key"`
	Test     bool      `json:"test,omitempty"`
}

// Body is the notice as the shape posts it.
func (n Notice) Body(shape Shape) ([]byte, error) {
	if shape == ShapeSlack {
		icon := ":rotating_light:"
		if n.Event == EventResolved {
			icon = ":white_check_mark:"
		}
		return json.Marshal(map[string]string{"text": fmt.Sprintf("%s [%s] %s", icon, n.Event, n.Summary())})
	}
	return json.Marshal(Payload{Status: n.Event, Rule: n.Rule.Kind, RuleID: n.Rule.ID, Subject: n.Subject, Value: n.Value,
		Summary: n.Summary(), FiredAt: n.FiredAt.UTC(), At: n.At.UTC(), DedupKey: n.DedupKey(), Test: n.Rule.ID == 0})
}

// Summary is the notice in one sentence.
func (n Notice) Summary() string {
	s := Describe(n.Rule, n.Subject, n.Value)
	if n.Event == EventResolved {
		return "Resolved: " + s
	}
	return s
}

// Describe says what a rule found about a subject.
func Describe(r Rule, s Subject, v float64) string {
	p := r.Params
	switch r.Kind {
	case KindTierUnservable:
		return fmt.Sprintf("Route group × tier %s is unservable: every request gets 503 no_available_model.", s.Name)
	case KindErrorRate:
		return fmt.Sprintf("%s: %.1f%% of requests failed with %s over %s (threshold %.0f%%).", s.Name, v, s.Cause, p.Window(), p.Percent)
	case KindLatencyP95:
		return fmt.Sprintf("%s: p95 latency %.0f ms over %s (bound %d ms).", s.Name, v, p.Window(), p.BoundMS)
	case KindBudget:
		return fmt.Sprintf("Caller %s has spent %.0f%% of its monthly budget (threshold %.0f%%).", s.Name, v, p.Percent)
	case KindKeysQuarantined:
		return fmt.Sprintf("Every active key of provider %s is quarantined.", s.Name)
	case KindBreakerOpen:
		return fmt.Sprintf("The breaker of deployment %s has been open %s (bound %s).", s.Name, time.Duration(v)*time.Second, time.Duration(p.OpenSeconds)*time.Second)
	case KindRetryBudget:
		return fmt.Sprintf("The retry budget of %s stopped %.0f request(s) over %s.", s.Name, v, p.Window())
	case KindConfigCached:
		return "PostgreSQL is unreachable: the gateway serves its cached configuration."
	case KindRedisDegraded:
		return "Redis is unreachable: limits, budgets and breakers are per instance."
	case KindKeyExpiring:
		return fmt.Sprintf("Caller key %s expires in %s (rotate it before then; horizon %d days).", s.Name, time.Duration(v)*time.Second, p.WithinDays)
	}
	return fmt.Sprintf("%s: %s", r.Kind, s.Name)
}

// Explain says what a rule watches with its thresholds, without a subject
// (the rules list).
func Explain(r Rule) string {
	p := r.Params
	switch r.Kind {
	case KindTierUnservable:
		return "A route group × tier has candidates but none can serve: every request gets 503 no_available_model."
	case KindErrorRate:
		return fmt.Sprintf("One cause fails more than %g%% of a route group × tier's requests over %s (at least %d requests).", p.Percent, p.Window(), p.MinRequests)
	case KindLatencyP95:
		return fmt.Sprintf("A route group × tier's p95 latency is above %d ms over %s (at least %d requests).", p.BoundMS, p.Window(), p.MinRequests)
	case KindBudget:
		return fmt.Sprintf("A caller has spent %g%% of its monthly budget or more.", p.Percent)
	case KindKeysQuarantined:
		return "Every active key of an enabled provider is quarantined."
	case KindBreakerOpen:
		return fmt.Sprintf("A deployment's breaker has been open longer than %s.", time.Duration(p.OpenSeconds)*time.Second)
	case KindRetryBudget:
		return fmt.Sprintf("The retry budget stopped requests of a route group × tier within %s.", p.Window())
	case KindConfigCached:
		return "PostgreSQL does not answer: the gateway serves its live or cached configuration."
	case KindRedisDegraded:
		return "Redis does not answer: limits, budgets and breakers are counted per instance."
	case KindKeyExpiring:
		return fmt.Sprintf("An unrevoked caller key expires within %d days.", p.WithinDays)
	}
	return string(r.Kind)
}

// Title is the kind in a few words, for lists.
func (k Kind) Title() string {
	switch k {
	case KindTierUnservable:
		return "Route group × tier unservable"
	case KindErrorRate:
		return "Error rate by cause"
	case KindLatencyP95:
		return "p95 latency"
	case KindBudget:
		return "Caller budget"
	case KindKeysQuarantined:
		return "Every key of a provider quarantined"
	case KindBreakerOpen:
		return "Breaker open too long"
	case KindRetryBudget:
		return "Retry budget exhausted"
	case KindConfigCached:
		return "PostgreSQL unreachable (serving cached configuration)"
	case KindRedisDegraded:
		return "Redis degraded"
	case KindKeyExpiring:
		return "Caller key about to expire"
	}
	return string(k)
}

// Backoff is how long a failed delivery waits before attempt n+1 (n ≥ 1):
// 5 s doubling, at most 10 minutes.
func Backoff(n int) time.Duration {
	d := 5 * time.Second
	for i := 1; i < n && d < 10*time.Minute; i++ {
		d *= 2
	}
	return min(d, 10*time.Minute)
}

// MaxAttempts is how many times a delivery is tried before it is given up.
const MaxAttempts = 8
