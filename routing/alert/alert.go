// Package alert is the alerting core: the rule kinds with their parameters,
// and the state machine that turns what the evaluator finds on each pass
// into pending, firing and resolved alerts with exactly one notice per
// firing and one per resolution. It reads nothing itself: the worker's
// evaluator asks a Source for findings and persists the states and notices.
package alert

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Kind is what a rule watches.
type Kind string

// The rule kinds.
const (
	// KindTierUnservable: a route group × tier has nothing to try (every
	// request gets 503 no_available_model).
	KindTierUnservable Kind = "tier_unservable"
	// KindErrorRate: one cause's share of a route group × tier's requests
	// over Window is above Percent.
	KindErrorRate Kind = "error_rate"
	// KindLatencyP95: a route group × tier's p95 latency over Window is
	// above BoundMS.
	KindLatencyP95 Kind = "latency_p95"
	// KindBudget: a caller's spend this month is at Percent of its monthly
	// budget or more.
	KindBudget Kind = "budget"
	// KindKeysQuarantined: every active key of an enabled provider is
	// quarantined.
	KindKeysQuarantined Kind = "keys_quarantined"
	// KindBreakerOpen: a deployment's breaker has been open longer than
	// OpenSeconds.
	KindBreakerOpen Kind = "breaker_open"
	// KindRetryBudget: the retry budget stopped requests of a route group ×
	// tier within Window.
	KindRetryBudget Kind = "retry_budget_exhausted"
	// KindConfigCached: PostgreSQL is unreachable and the instance serves
	// the cached last-known-good configuration.
	KindConfigCached Kind = "config_cached"
	// KindRedisDegraded: Redis is unreachable and limits are per instance.
	KindRedisDegraded Kind = "redis_degraded"
	// KindKeyExpiring: an unrevoked caller key expires within WithinDays.
	KindKeyExpiring Kind = "caller_key_expiring"
)

// Kinds lists every kind, in the order the console shows them.
var Kinds = []Kind{KindTierUnservable, KindErrorRate, KindLatencyP95, KindBudget, KindKeysQuarantined,
	KindBreakerOpen, KindRetryBudget, KindConfigCached, KindRedisDegraded, KindKeyExpiring}

// Params are a rule's thresholds; each kind reads the ones it needs.
type Params struct {
	// Percent: KindErrorRate's share of requests, KindBudget's share of the budget.
	Percent float64 `json:"percent,omitempty"`
	// WindowSeconds: KindErrorRate, KindLatencyP95 and KindRetryBudget look back this far.
	WindowSeconds int `json:"window_seconds,omitempty"`
	// MinRequests: KindErrorRate and KindLatencyP95 ignore a window with fewer requests.
	MinRequests int `json:"min_requests,omitempty"`
	// BoundMS: KindLatencyP95's bound.
	BoundMS int64 `json:"bound_ms,omitempty"`
	// OpenSeconds: KindBreakerOpen's bound.
	OpenSeconds int `json:"open_seconds,omitempty"`
	// WithinDays: KindKeyExpiring's horizon.
	WithinDays int `json:"within_days,omitempty"`
}

// Window is the look-back of the windowed kinds.
func (p Params) Window() time.Duration { return time.Duration(p.WindowSeconds) * time.Second }

// Rule is one alerting rule.
type Rule struct {
	ID     int64
	Kind   Kind
	Params Params
	// For is how long a finding must last before it fires.
	For     time.Duration
	Enabled bool
	// SilencedUntil: until then the rule's alerts fire and resolve but no
	// message is sent.
	SilencedUntil time.Time
}

// Silenced reports whether the rule's messages are held back at now.
func (r Rule) Silenced(now time.Time) bool { return now.Before(r.SilencedUntil) }

// Validation errors.
var (
	ErrUnknownKind = errors.New("alert: unknown rule kind")
	ErrParam       = errors.New("alert: parameter out of range")
)

// Validate checks the rule's kind and the parameters it reads.
func (r Rule) Validate() error {
	if !slices.Contains(Kinds, r.Kind) {
		return fmt.Errorf("%w: %q", ErrUnknownKind, r.Kind)
	}
	p := r.Params
	bad := func(field string) error { return fmt.Errorf("%w: %s", ErrParam, field) }
	switch {
	case r.For < 0 || r.For > 24*time.Hour:
		return bad("for_seconds")
	case (r.Kind == KindErrorRate || r.Kind == KindBudget) && (p.Percent <= 0 || p.Percent > 1000):
		return bad("percent")
	case (r.Kind == KindErrorRate || r.Kind == KindLatencyP95 || r.Kind == KindRetryBudget) && (p.WindowSeconds < 10 || p.WindowSeconds > 86400):
		return bad("window_seconds")
	case r.Kind == KindLatencyP95 && p.BoundMS <= 0:
		return bad("bound_ms")
	case r.Kind == KindBreakerOpen && p.OpenSeconds < 0:
		return bad("open_seconds")
	case r.Kind == KindKeyExpiring && (p.WithinDays < 1 || p.WithinDays > 365):
		return bad("within_days")
	case p.MinRequests < 0:
		return bad("min_requests")
	}
	return nil
}

// Defaults are the rules an installation starts with (the migration seeds
// the same).
func Defaults() []Rule {
	return []Rule{
		{Kind: KindTierUnservable, For: 30 * time.Second, Enabled: true},
		{Kind: KindErrorRate, Params: Params{Percent: 20, WindowSeconds: 300, MinRequests: 20}, Enabled: true},
		{Kind: KindLatencyP95, Params: Params{BoundMS: 10000, WindowSeconds: 300, MinRequests: 20}, Enabled: true},
		{Kind: KindBudget, Params: Params{Percent: 80}, Enabled: true},
		{Kind: KindBudget, Params: Params{Percent: 100}, Enabled: true},
		{Kind: KindKeysQuarantined, Enabled: true},
		{Kind: KindBreakerOpen, Params: Params{OpenSeconds: 300}, Enabled: true},
		{Kind: KindRetryBudget, Params: Params{WindowSeconds: 300}, Enabled: true},
		{Kind: KindConfigCached, For: 30 * time.Second, Enabled: true},
		{Kind: KindRedisDegraded, For: 30 * time.Second, Enabled: true},
		{Kind: KindKeyExpiring, Params: Params{WithinDays: 7}, Enabled: true},
	}
}

// SubjectKind is what a finding is about.
type SubjectKind string

// Subject kinds.
const (
	SubjectTier       SubjectKind = "tier"       // route group × tier
	SubjectCaller     SubjectKind = "caller"     // a caller
	SubjectProvider   SubjectKind = "provider"   // a provider
	SubjectDeployment SubjectKind = "deployment" // a deployment
	SubjectCallerKey  SubjectKind = "caller_key" // a caller's key
	SubjectInstance   SubjectKind = "instance"   // the installation
)

// Subject is what one alert is about: "main/deep", "app", "vendor-a", …
// Cause narrows it (an error rate's cause).
type Subject struct {
	Kind  SubjectKind `json:"kind"`
	Name  string      `json:"name"`
	Cause string      `json:"cause,omitempty"`
}

// Key is the subject as one string, stable across passes.
func (s Subject) Key() string {
	k := string(s.Kind) + ":" + s.Name
	if s.Cause != "" {
		k += ":" + s.Cause
	}
	return k
}

// Finding is one subject for which a rule's condition holds now, with the
// value measured (a percentage, milliseconds, seconds; 0 for yes/no kinds).
type Finding struct {
	Subject Subject
	Value   float64
}
