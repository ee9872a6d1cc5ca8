package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The retry budget and the degradation ladder of a route group: how much
// failover a group may spend when vendors degrade, and what a caller gets
// when nothing in the chain answers (issue 17).

// Retry budget defaults: attempts beyond a request's first may be at most
// 20 % of the first attempts over the last 10 s, and at least 3 a second.
const (
	DefaultRetryBudgetPercent  = 20
	DefaultRetryBudgetMinPerS  = 3
	DefaultRetryBudgetWindowMS = 10_000
)

// RetryBudget caps a route group's retries, per tier: every attempt after a
// request's first (the next key after a 429 included) spends one, and the
// tier may spend at most Percent % of its first attempts over the last
// WindowMS, with a floor of MinPerS a second so a quiet tier can still fail
// over. Counted across instances. A zero field keeps its default; Off lets
// every request walk its whole chain.
type RetryBudget struct {
	Percent  int  `yaml:"percent,omitempty" json:"percent,omitempty"`
	MinPerS  int  `yaml:"min_per_s,omitempty" json:"min_per_s,omitempty"`
	WindowMS int  `yaml:"window_ms,omitempty" json:"window_ms,omitempty"`
	Off      bool `yaml:"off,omitempty" json:"off,omitempty"`
}

// Effective is the budget with its defaults filled in (b may be nil).
func (b *RetryBudget) Effective() RetryBudget {
	var e RetryBudget
	if b != nil {
		e = *b
	}
	if e.Percent == 0 {
		e.Percent = DefaultRetryBudgetPercent
	}
	if e.MinPerS == 0 {
		e.MinPerS = DefaultRetryBudgetMinPerS
	}
	if e.WindowMS == 0 {
		e.WindowMS = DefaultRetryBudgetWindowMS
	}
	return e
}

// Degradation is a route group's opt-in degradation ladder. Each rung is
// on when it is set: a tier whose recent SLA is violated steps down to a
// lighter tier; when every candidate failed, a cached answer to the same
// request, then the operator's static answer.
type Degradation struct {
	StepDown []StepDown `yaml:"step_down,omitempty" json:"step_down,omitempty"`
	Cache    *Cache     `yaml:"cache,omitempty" json:"cache,omitempty"`
	// StaticAnswer is the reply served last, marked as such (finish_reason
	// "static_answer", X-Switchyard-Degraded: static); "" is no static answer.
	StaticAnswer string `yaml:"static_answer,omitempty" json:"static_answer,omitempty"`
}

// Step-down defaults.
const (
	DefaultStepDownWindowMS = 60_000
	DefaultStepDownMinCalls = 20
	DefaultStepDownHoldMS   = 30_000
)

// StepDown moves a tier's traffic to a lighter tier of the same group while
// the tier's SLA is violated: its p95 latency above P95MS or more than
// ErrorPercent % of its calls failed over the last WindowMS (with at least
// MinCalls calls). The step lasts HoldMS; then the tier serves again and is
// judged on fresh calls. Zero thresholds are not watched (one must be set);
// zero window, minimum and hold keep their defaults.
type StepDown struct {
	Tier         TierName `yaml:"tier" json:"tier"`
	To           TierName `yaml:"to" json:"to"`
	P95MS        int      `yaml:"p95_ms,omitempty" json:"p95_ms,omitempty"`
	ErrorPercent int      `yaml:"error_percent,omitempty" json:"error_percent,omitempty"`
	WindowMS     int      `yaml:"window_ms,omitempty" json:"window_ms,omitempty"`
	MinCalls     int      `yaml:"min_calls,omitempty" json:"min_calls,omitempty"`
	HoldMS       int      `yaml:"hold_ms,omitempty" json:"hold_ms,omitempty"`
}

// Answer-cache scopes: whose answers a request may be served.
const (
	CacheScopeCaller = "caller" // only the same caller's earlier answers
	CacheScopeGroup  = "group"  // any caller's of the route group
)

// Answer-cache defaults.
const (
	DefaultCacheTTLMS      = 600_000
	DefaultCacheMaxEntries = 1000
)

// Cache is the exact-match answer cache of the ladder: answers to
// cacheable requests (X-Switchyard-Cache: allow, or temperature 0) are kept
// for TTLMS, at most MaxEntries per group, and served when every candidate
// failed. A zero field keeps its default; Scope "" is caller.
type Cache struct {
	Scope      string `yaml:"scope,omitempty" json:"scope,omitempty"`
	TTLMS      int    `yaml:"ttl_ms,omitempty" json:"ttl_ms,omitempty"`
	MaxEntries int    `yaml:"max_entries,omitempty" json:"max_entries,omitempty"`
}

// MaxStaticAnswer bounds the operator's static answer.
const MaxStaticAnswer = 8000

// lighter reports whether tier a is lighter than b (fast < standard < deep).
func lighter(a, b TierName) bool { return tierIndex(a) < tierIndex(b) }

func validateResilience(f FieldErrors, g RouteGroup) {
	if b := g.RetryBudget; b != nil {
		if b.Percent < 0 || b.Percent > 1000 {
			f.Add("retry_budget.percent", "must be between 1 and 1000 (0 keeps the default of 20)")
		}
		if b.MinPerS < 0 || b.MinPerS > 100_000 {
			f.Add("retry_budget.min_per_s", "must be between 1 and 100000 (0 keeps the default of 3)")
		}
		if b.WindowMS != 0 && (b.WindowMS < 500 || b.WindowMS > 600_000) {
			f.Add("retry_budget.window_ms", "must be between 500 and 600000 ms (0 keeps the default of 10000)")
		}
	}
	d := g.Degradation
	if d == nil {
		return
	}
	seen := map[TierName]bool{}
	for i, s := range d.StepDown {
		field := func(n string) string { return fmt.Sprintf("degradation.step_down[%d].%s", i, n) }
		switch {
		case !ValidTier(string(s.Tier)):
			f.Add(field("tier"), "must be fast, standard or deep")
		case seen[s.Tier]:
			f.Add(field("tier"), "tier "+string(s.Tier)+" has a step-down rule already")
		}
		seen[s.Tier] = true
		switch {
		case !ValidTier(string(s.To)):
			f.Add(field("to"), "must be fast, standard or deep")
		case ValidTier(string(s.Tier)) && !lighter(s.To, s.Tier):
			f.Add(field("to"), "must be a lighter tier than "+string(s.Tier)+" (fast < standard < deep)")
		}
		if s.P95MS == 0 && s.ErrorPercent == 0 {
			f.Add(field("p95_ms"), "set a p95 latency or an error percent (or both) for the SLA")
		}
		checkPositiveMS(f, field("p95_ms"), s.P95MS, true)
		if s.ErrorPercent < 0 || s.ErrorPercent > 100 {
			f.Add(field("error_percent"), "must be between 1 and 100")
		}
		if s.WindowMS != 0 && (s.WindowMS < 500 || s.WindowMS > 3_600_000) {
			f.Add(field("window_ms"), "must be between 500 ms and one hour (0 keeps the default of 60000)")
		}
		if s.MinCalls < 0 || s.MinCalls > 1_000_000 {
			f.Add(field("min_calls"), "must be between 1 and 1000000 (0 keeps the default of 20)")
		}
		checkPositiveMS(f, field("hold_ms"), s.HoldMS, true)
	}
	if c := d.Cache; c != nil {
		if c.Scope != "" && c.Scope != CacheScopeCaller && c.Scope != CacheScopeGroup {
			f.Add("degradation.cache.scope", "must be caller or group")
		}
		if c.TTLMS < 0 || c.TTLMS > 7*24*3_600_000 {
			f.Add("degradation.cache.ttl_ms", "must be between 1 ms and 7 days (0 keeps the default of 600000)")
		}
		if c.MaxEntries < 0 || c.MaxEntries > 1_000_000 {
			f.Add("degradation.cache.max_entries", "must be between 1 and 1000000 (0 keeps the default of 1000)")
		}
	}
	if len(d.StaticAnswer) > MaxStaticAnswer {
		f.Add("degradation.static_answer", fmt.Sprintf("must be at most %d characters", MaxStaticAnswer))
	}
}

// canonicalResilience orders the step-down rules by tier and drops a
// ladder with no rung (it is the same as none).
func canonicalResilience(g *RouteGroup) {
	if d := g.Degradation; d != nil {
		slices.SortStableFunc(d.StepDown, func(a, b StepDown) int { return cmp.Compare(tierIndex(a.Tier), tierIndex(b.Tier)) })
		if len(d.StepDown) == 0 {
			d.StepDown = nil
		}
		d.StaticAnswer = strings.TrimRight(d.StaticAnswer, " \t\r\n")
		if len(d.StepDown) == 0 && d.Cache == nil && d.StaticAnswer == "" {
			g.Degradation = nil
		}
	}
	if b := g.RetryBudget; b != nil && *b == (RetryBudget{}) {
		g.RetryBudget = nil
	}
}

func cloneResilience(g *RouteGroup) {
	if g.RetryBudget != nil {
		b := *g.RetryBudget
		g.RetryBudget = &b
	}
	if g.Degradation != nil {
		d := *g.Degradation
		d.StepDown = slices.Clone(d.StepDown)
		if d.Cache != nil {
			c := *d.Cache
			d.Cache = &c
		}
		g.Degradation = &d
	}
}

// RBudget is a group's compiled retry budget (defaults filled in).
type RBudget struct {
	Off     bool
	Percent int
	MinPerS int
	Window  time.Duration
}

// RLadder is a group's compiled degradation ladder; nil when not opted in.
type RLadder struct {
	// StepDown is indexed like RGroup.Tiers; nil where the tier has no rule.
	StepDown [3]*RStepDown
	Cache    *RCache // nil: no cached answers
	Static   string  // "": no static answer
}

// RStepDown is one compiled step-down rule.
type RStepDown struct {
	From, To     TierName
	P95          time.Duration // 0: not watched
	ErrorPercent int           // 0: not watched
	Window       time.Duration
	MinCalls     int
	Hold         time.Duration
}

// RCache is the compiled answer-cache setting.
type RCache struct {
	GroupScope bool // answers shared by the group's callers
	TTL        time.Duration
	MaxEntries int
}

// StepDownFor returns the tier's step-down rule, or nil.
func (l *RLadder) StepDownFor(t TierName) *RStepDown {
	if l == nil {
		return nil
	}
	if i := tierIndex(t); i < len(l.StepDown) {
		return l.StepDown[i]
	}
	return nil
}

func compileResilience(g RouteGroup, rg *RGroup) {
	b := g.RetryBudget.Effective()
	rg.Budget = RBudget{Off: b.Off, Percent: b.Percent, MinPerS: b.MinPerS, Window: ms(b.WindowMS)}
	d := g.Degradation
	if d == nil {
		return
	}
	l := &RLadder{Static: d.StaticAnswer}
	for _, s := range d.StepDown {
		i := tierIndex(s.Tier)
		if i >= len(l.StepDown) {
			continue
		}
		r := &RStepDown{From: s.Tier, To: s.To, P95: ms(s.P95MS), ErrorPercent: s.ErrorPercent,
			Window: ms(cmp.Or(s.WindowMS, DefaultStepDownWindowMS)), MinCalls: cmp.Or(s.MinCalls, DefaultStepDownMinCalls),
			Hold: ms(cmp.Or(s.HoldMS, DefaultStepDownHoldMS))}
		l.StepDown[i] = r
	}
	if c := d.Cache; c != nil {
		l.Cache = &RCache{GroupScope: c.Scope == CacheScopeGroup, TTL: ms(cmp.Or(c.TTLMS, DefaultCacheTTLMS)), MaxEntries: cmp.Or(c.MaxEntries, DefaultCacheMaxEntries)}
	}
	rg.Ladder = l
}

// checkStepDownTarget: a step-down rule must move traffic to a lighter tier
// that can serve (it has candidates that are not all parked).
func checkStepDownTarget(s *Snapshot, _ Env) []Finding {
	var out []Finding
	for gi := range s.RouteGroups {
		g := &s.RouteGroups[gi]
		if g.Degradation == nil {
			continue
		}
		for _, sd := range g.Degradation.StepDown {
			// The fix is the rule's target on the group's form.
			ref := ObjectRef{Kind: "route_group", ID: g.ID, Name: g.Name + " / " + string(sd.Tier), Group: g.Name, Tier: sd.Tier,
				Field: "degradation.step_down." + string(sd.Tier) + ".to"}
			to := g.Tier(sd.To)
			switch {
			case !ValidTier(string(sd.To)) || !lighter(sd.To, sd.Tier):
				out = append(out, Finding{Object: ref, Message: fmt.Sprintf("route group %s steps tier %s down to %q, which is not a lighter tier (fast < standard < deep)", g.Name, sd.Tier, sd.To),
					Params: map[string]string{"group": g.Name, "tier": string(sd.Tier), "to": string(sd.To)}})
			case to == nil || !servable(to):
				out = append(out, Finding{Object: ref, Message: fmt.Sprintf("route group %s steps tier %s down to tier %s, which has no candidate that receives traffic", g.Name, sd.Tier, sd.To),
					Params: map[string]string{"group": g.Name, "tier": string(sd.Tier), "to": string(sd.To)}})
			}
		}
	}
	return out
}

func servable(t *Tier) bool {
	for _, c := range t.Candidates {
		if !c.Parked {
			return true
		}
	}
	return false
}
