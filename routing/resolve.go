// Package routing is the data plane's core: it resolves what a caller asked
// for into a tier or an explicit logic model, expands the candidate chain
// into an ordered plan of deployments with skip reasons, and executes the
// plan attempt by attempt following the failure-classification table.
//
// It imports no HTTP framework and no database driver: runtime state
// (breakers, key pools, load counters, health) reaches it through the small
// interfaces in state.go, so it can be tested and benchmarked alone.
package routing

import (
	"slices"
	"strings"

	"switchyard/routing/config"
)

// Target is what a request resolved to: a tier, or an explicit logic model.
type Target struct {
	Tier     config.TierName
	Explicit *config.RModel
	// Forced is set when a reasoning request was moved to the deep tier.
	Forced bool
	// Alias is the pattern of the route group's model alias the name
	// resolved through; "" when the name was a tier or a logic-model code.
	Alias string
}

// Name is the tier or the logic model code.
func (t Target) Name() string {
	if t.Explicit != nil {
		return t.Explicit.Code
	}
	return string(t.Tier)
}

// ModelNotFoundError says which models a caller may use instead.
type ModelNotFoundError struct {
	Requested string
	Available []string
}

func (e *ModelNotFoundError) Error() string {
	return "model " + quote(e.Requested) + " does not exist or is not available to this caller; use one of: " + strings.Join(e.Available, ", ")
}

func quote(s string) string { return `"` + s + `"` }

// tierAliases are the names accepted for tiers besides the tiers themselves.
var tierAliases = map[string]config.TierName{"auto": config.TierStandard}

// Resolve turns the request's model field into a Target (the data-plane
// contract), in this order:
//
//  1. fast | standard | deep (and "auto" = standard) name a tier;
//  2. a logic model code is an explicit request for that model only, and
//     must be reachable from the caller's route group (directly or through
//     its fallback group); no alias ever substitutes it;
//  3. else the group's model aliases: an exact alias, or the first of its
//     patterns that matches. An alias to a tier is a request for the tier;
//     an alias to a logic model an explicit request for it, with the same
//     reachability rule as a code.
//
// A request asking for reasoning always goes to deep, when it names a tier
// directly or through an alias.
func Resolve(caller *config.RCaller, model string, kind config.Kind, reasoning bool) (Target, error) {
	if t, ok := tierOf(model); ok {
		return tierTarget(t, kind, reasoning), nil
	}
	if m := reachableModel(caller.Group, model, kind); m != nil {
		return Target{Explicit: m}, nil
	}
	if a := caller.Group.Alias(model); a != nil {
		if a.Model == nil {
			t := tierTarget(a.Tier, kind, reasoning)
			t.Alias = a.Pattern
			return t, nil
		}
		if m := reachableModel(caller.Group, a.Model.Code, kind); m != nil {
			return Target{Explicit: m, Alias: a.Pattern}, nil
		}
	}
	return Target{}, &ModelNotFoundError{Requested: model, Available: Available(caller, kind)}
}

// tierTarget is a request for tier t; one asking for reasoning goes to deep.
func tierTarget(t config.TierName, kind config.Kind, reasoning bool) Target {
	if reasoning && kind == config.KindChat && t != config.TierDeep {
		return Target{Tier: config.TierDeep, Forced: true}
	}
	return Target{Tier: t}
}

func tierOf(model string) (config.TierName, bool) {
	if config.ValidTier(model) {
		return config.TierName(model), true
	}
	t, ok := tierAliases[model]
	return t, ok
}

func reachableModel(g *config.RGroup, code string, kind config.Kind) *config.RModel {
	for _, grp := range []*config.RGroup{g, g.Fallback} {
		if grp == nil {
			continue
		}
		for _, t := range grp.Tiers {
			for _, l := range t.Levels {
				for _, c := range l.Candidates {
					if c.Model.Code == code && c.Model.Kind == kind {
						return c.Model
					}
				}
			}
		}
	}
	return nil
}

// Available lists what a caller may put in the model field for a kind: the
// tiers, then the logic models its group (and fallback group) reach.
func Available(caller *config.RCaller, kind config.Kind) []string {
	out := []string{string(config.TierFast), string(config.TierStandard), string(config.TierDeep)}
	var codes []string
	for _, grp := range []*config.RGroup{caller.Group, caller.Group.Fallback} {
		if grp == nil {
			continue
		}
		for _, t := range grp.Tiers {
			for _, l := range t.Levels {
				for _, c := range l.Candidates {
					if c.Model.Kind == kind && !slices.Contains(codes, c.Model.Code) {
						codes = append(codes, c.Model.Code)
					}
				}
			}
		}
	}
	slices.Sort(codes)
	return append(out, codes...)
}
