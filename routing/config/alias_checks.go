package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The dry-run checks of model aliases (aliases.go).
const (
	// CheckAliasTarget: an alias names nothing its group can serve.
	CheckAliasTarget = "alias_target"
	// CheckAliasDuplicate: an exact alias is listed twice in one group.
	CheckAliasDuplicate = "alias_duplicate"
	// CheckAliasShadowed: an earlier pattern of the group matches every
	// name a later one does, so the later one never applies.
	CheckAliasShadowed = "alias_shadowed"
	// CheckAliasOverridden: an alias for a tier name, or whose pattern
	// matches a logic-model code the group reaches; those names resolve
	// before any alias, so the alias never applies to them.
	CheckAliasOverridden = "alias_overridden"
)

// Causes of an alias_target finding (Params["cause"]).
const (
	AliasUnknownTier  = "unknown_tier"        // Params["tier"] is not fast, standard or deep
	AliasUnknownModel = "unknown_logic_model" // Params["logic_model"] does not exist
	AliasNotChat      = "not_chat"            // Params["logic_model"] is an embedding model
	AliasUnreachable  = "unreachable"         // Params["logic_model"] is in no tier of the group or its fallback group
)

// Causes of an alias_overridden finding (Params["cause"]).
const (
	AliasTierName  = "tier_name"        // the pattern is a tier name or auto
	AliasModelCode = "logic_model_code" // Params["codes"]: the reachable codes it matches
)

// aliasFinding is a finding about the alias at index i of g; the fix is
// that alias's row on the Route groups page (Params["position"]).
func aliasFinding(g *RouteGroup, i int, field, msg string, params map[string]string) Finding {
	a := g.Aliases[i]
	if params == nil {
		params = map[string]string{}
	}
	params["route_group"], params["pattern"], params["position"] = g.Name, a.Pattern, strconv.Itoa(i+1)
	return Finding{Object: ObjectRef{Kind: "model_alias", ID: g.ID, Name: g.Name + " / alias " + a.Pattern, Group: g.Name, Field: field},
		Message: msg, Params: params}
}

// reachable lists the logic-model codes a group's callers may name
// explicitly: its candidates' and its fallback group's (routing.Resolve).
func (s *Snapshot) reachable(g *RouteGroup) map[string]bool {
	out := map[string]bool{}
	groups := []*RouteGroup{g}
	if g.Fallback != "" && g.Fallback != FallbackNone {
		for i := range s.RouteGroups {
			if s.RouteGroups[i].Name == g.Fallback {
				groups = append(groups, &s.RouteGroups[i])
			}
		}
	}
	for _, grp := range groups {
		for _, t := range grp.Tiers {
			for _, c := range t.Candidates {
				out[c.LogicModel] = true
			}
		}
	}
	return out
}

func checkAliasTarget(s *Snapshot, _ Env) []Finding {
	models := s.modelIndex()
	var out []Finding
	for gi := range s.RouteGroups {
		g := &s.RouteGroups[gi]
		if len(g.Aliases) == 0 {
			continue
		}
		reach := s.reachable(g)
		for i, a := range g.Aliases {
			name := "alias " + a.Pattern + " of route group " + g.Name
			if a.LogicModel == "" {
				if !ValidTier(string(a.Tier)) {
					out = append(out, aliasFinding(g, i, "tier", fmt.Sprintf("%s names tier %q, which is not fast, standard or deep", name, a.Tier),
						map[string]string{"cause": AliasUnknownTier, "tier": string(a.Tier)}))
				}
				continue
			}
			params := map[string]string{"logic_model": a.LogicModel}
			m := models[a.LogicModel]
			switch {
			case m == nil:
				params["cause"] = AliasUnknownModel
				out = append(out, aliasFinding(g, i, "logic_model", fmt.Sprintf("%s names logic model %q, which does not exist", name, a.LogicModel), params))
			case m.Kind != KindChat:
				params["cause"] = AliasNotChat
				out = append(out, aliasFinding(g, i, "logic_model", fmt.Sprintf("%s names %s, a %s logic model; an alias serves the chat requests of clients that name models, so it names a chat logic model", name, m.Code, m.Kind), params))
			case !reach[m.Code]:
				params["cause"] = AliasUnreachable
				out = append(out, aliasFinding(g, i, "logic_model", fmt.Sprintf("%s names logic model %s, which is a candidate in no tier of the group (or of its fallback group): requests it matches would get 404 model_not_found", name, m.Code), params))
			}
		}
	}
	return out
}

func checkAliasDuplicate(s *Snapshot, _ Env) []Finding {
	var out []Finding
	for gi := range s.RouteGroups {
		g := &s.RouteGroups[gi]
		first := map[string]int{}
		for i, a := range g.Aliases {
			if !a.Exact() {
				continue
			}
			j, dup := first[a.Pattern]
			if !dup {
				first[a.Pattern] = i
				continue
			}
			out = append(out, aliasFinding(g, i, "pattern", fmt.Sprintf("route group %s lists the exact alias %s twice (at %d and %d); only the first one applies", g.Name, a.Pattern, j+1, i+1),
				map[string]string{"first_position": strconv.Itoa(j + 1)}))
		}
	}
	return out
}

func checkAliasShadowed(s *Snapshot, _ Env) []Finding {
	// Groups often share their patterns (onboarding's defaults): each pair
	// is decided once.
	covers := map[[2]string]bool{}
	var out []Finding
	for gi := range s.RouteGroups {
		g := &s.RouteGroups[gi]
		for i, a := range g.Aliases {
			if a.Exact() || patternProblem(a.Pattern) != "" {
				continue
			}
			for j, e := range g.Aliases[:i] {
				if e.Exact() || patternProblem(e.Pattern) != "" {
					continue
				}
				k := [2]string{e.Pattern, a.Pattern}
				c, ok := covers[k]
				if !ok {
					c = PatternCovers(e.Pattern, a.Pattern)
					covers[k] = c
				}
				if c {
					out = append(out, aliasFinding(g, i, "pattern", fmt.Sprintf("alias %s of route group %s never applies: every name it matches is matched first by the earlier alias %s (at %d)", a.Pattern, g.Name, e.Pattern, j+1),
						map[string]string{"earlier": e.Pattern, "earlier_position": strconv.Itoa(j + 1)}))
					break
				}
			}
		}
	}
	return out
}

func checkAliasOverridden(s *Snapshot, _ Env) []Finding {
	var out []Finding
	for gi := range s.RouteGroups {
		g := &s.RouteGroups[gi]
		if len(g.Aliases) == 0 {
			continue
		}
		reach := s.reachable(g)
		for i, a := range g.Aliases {
			if a.Exact() && (ValidTier(a.Pattern) || a.Pattern == "auto") {
				out = append(out, aliasFinding(g, i, "pattern", fmt.Sprintf("alias %s of route group %s never applies: %s always names a tier", a.Pattern, g.Name, a.Pattern),
					map[string]string{"cause": AliasTierName}))
				continue
			}
			var codes []string
			for code := range reach {
				if MatchPattern(a.Pattern, code) {
					codes = append(codes, code)
				}
			}
			if len(codes) == 0 {
				continue
			}
			slices.Sort(codes)
			out = append(out, aliasFinding(g, i, "pattern", fmt.Sprintf("alias %s of route group %s matches %s, which the group reaches: a request naming %s is an explicit request for that logic model, and the alias never applies to it",
				a.Pattern, g.Name, strings.Join(codes, ", "), strings.Join(codes, " or ")),
				map[string]string{"cause": AliasModelCode, "codes": strings.Join(codes, ",")}))
		}
	}
	return out
}
