package groups

import (
	"strconv"

	"github.com/a-h/templ"

	"switchyard/routing/config"
	"switchyard/views/components"
)

// Form field names of a group's retry budget and degradation ladder; they
// are the keys of the validation's field errors (a step-down rule's by
// tier: StepDownField).
const (
	FieldBudgetPercent  = "retry_budget.percent"
	FieldBudgetMinPerS  = "retry_budget.min_per_s"
	FieldBudgetWindowMS = "retry_budget.window_ms"
	FieldBudgetOff      = "retry_budget.off"
	FieldCacheOn        = "degradation.cache"
	FieldCacheScope     = "degradation.cache.scope"
	FieldCacheTTLMS     = "degradation.cache.ttl_ms"
	FieldCacheMax       = "degradation.cache.max_entries"
	FieldStatic         = "degradation.static_answer"
)

// StepDownParts are the fields of one tier's step-down rule.
var StepDownParts = []string{"to", "p95_ms", "error_percent", "window_ms", "min_calls", "hold_ms"}

// StepDownField is the form field of part of tier t's step-down rule.
func StepDownField(t config.TierName, part string) string {
	return "degradation.step_down." + string(t) + "." + part
}

// ResilienceFields lists every field the resilience part of the form shows.
func ResilienceFields() []string {
	out := []string{FieldBudgetPercent, FieldBudgetMinPerS, FieldBudgetWindowMS, FieldBudgetOff, FieldCacheOn, FieldCacheScope, FieldCacheTTLMS, FieldCacheMax, FieldStatic}
	for _, t := range config.TierNames {
		for _, p := range StepDownParts {
			out = append(out, StepDownField(t, p))
		}
	}
	return out
}

func num(v int) string {
	if v == 0 {
		return ""
	}
	return strconv.Itoa(v)
}

func (f Form) budget() config.RetryBudget {
	if f.V.RetryBudget == nil {
		return config.RetryBudget{}
	}
	return *f.V.RetryBudget
}

func (f Form) ladder() config.Degradation {
	if f.V.Degradation == nil {
		return config.Degradation{}
	}
	return *f.V.Degradation
}

func (f Form) stepDown(t config.TierName) config.StepDown {
	for _, s := range f.ladder().StepDown {
		if s.Tier == t {
			return s
		}
	}
	return config.StepDown{Tier: t}
}

func (f Form) cache() (config.Cache, bool) {
	if c := f.ladder().Cache; c != nil {
		return *c, true
	}
	return config.Cache{}, false
}

// lighterOptions are the tiers t may step down to.
func lighterOptions(t config.TierName) []components.Option {
	out := []components.Option{{Value: "", Label: "never"}}
	for _, o := range config.TierNames {
		if o == t {
			break
		}
		out = append(out, components.Option{Value: string(o), Label: "step down to " + string(o)})
	}
	return out
}

// steppable are the tiers that have a lighter tier.
func steppable() []config.TierName { return config.TierNames[1:] }

func cacheScopeOptions() []components.Option {
	return []components.Option{
		{Value: config.CacheScopeCaller, Label: "caller: a caller's own earlier answers"},
		{Value: config.CacheScopeGroup, Label: "group: any caller of this group"},
	}
}

func placeholder(v int) templ.Attributes {
	return templ.Attributes{"placeholder": strconv.Itoa(v), "inputmode": "numeric"}
}

func placeholderText(v int) string {
	if v == 0 {
		return "—"
	}
	return strconv.Itoa(v)
}

func cacheOn(f Form) bool { _, on := f.cache(); return on }

func cacheScope(f Form) string {
	if c, _ := f.cache(); c.Scope != "" {
		return c.Scope
	}
	return config.CacheScopeCaller
}

func cacheNum(f Form, which string) string {
	c, _ := f.cache()
	if which == "ttl" {
		return num(c.TTLMS)
	}
	return num(c.MaxEntries)
}

// BudgetWords is a retry budget in a few words: "retries ≤ 20% (≥ 3/s, 10s)".
func BudgetWords(b *config.RetryBudget) string {
	e := b.Effective()
	if e.Off {
		return "retry budget off"
	}
	return "retries ≤ " + strconv.Itoa(e.Percent) + "% of first attempts (≥ " + strconv.Itoa(e.MinPerS) + "/s, over " + msWords(e.WindowMS) + ")"
}

// LadderWords are the rungs a group opted in to, one phrase each.
func LadderWords(d *config.Degradation) []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, s := range d.StepDown {
		out = append(out, "step-down "+string(s.Tier)+" → "+string(s.To))
	}
	if c := d.Cache; c != nil {
		scope := c.Scope
		if scope == "" {
			scope = config.CacheScopeCaller
		}
		out = append(out, "cached answers ("+scope+")")
	}
	if d.StaticAnswer != "" {
		out = append(out, "static answer")
	}
	return out
}

func msWords(ms int) string {
	if ms%1000 == 0 {
		return strconv.Itoa(ms/1000) + "s"
	}
	return strconv.Itoa(ms) + "ms"
}
