package groups

import (
	"slices"
	"strconv"
	"strings"

	"switchyard/routing/config"
	"switchyard/views/components"
)

// AliasesView is a route group's "Model aliases" section: the hx-target of
// every alias action of the group.
type AliasesView struct {
	GroupID int64
	Group   string
	Aliases []config.ModelAlias
	// Models are the chat logic models an alias of this group may name:
	// those its tiers (or its fallback group's) reach.
	Models  []string
	CSRF    string
	CanEdit bool

	// A failed or requested action re-renders with its form filled in:
	// the add form, or the edit form of the alias at EditAt (from 1).
	Add    AliasForm
	EditAt int
	Edit   AliasForm
	// Problem says why an action changed nothing as a whole (the list
	// changed meanwhile).
	Problem string
}

// AliasForm is the add or edit form of an alias. Target is a tier
// ("tier:deep") or a logic model ("logic_model:gpt-5"), as TargetValue
// writes it.
type AliasForm struct {
	Pattern, Target string
	Errors          config.FieldErrors
}

// Target values of the alias forms' select.
const (
	targetTier  = "tier:"
	targetModel = "logic_model:"
)

// TargetValue is the select value naming an alias's tier or logic model.
func TargetValue(a config.ModelAlias) string {
	if a.LogicModel != "" {
		return targetModel + a.LogicModel
	}
	return targetTier + string(a.Tier)
}

// ParseTarget reads a target select value into an alias's tier or logic
// model; both are empty for a value that names neither.
func ParseTarget(v string) (config.TierName, string) {
	if t, ok := strings.CutPrefix(v, targetTier); ok {
		return config.TierName(t), ""
	}
	if m, ok := strings.CutPrefix(v, targetModel); ok {
		return "", m
	}
	return "", ""
}

// AliasFields are the alias forms' fields; the validation's "tier" and
// "logic_model" errors are shown on "target" (see TargetErrors).
var AliasFields = []string{"pattern", "target"}

// TargetErrors moves an alias validation's tier and logic_model messages
// to the form's one target select.
func TargetErrors(errs config.FieldErrors) config.FieldErrors {
	for _, k := range []string{"tier", "logic_model"} {
		if msg, ok := errs[k]; ok {
			delete(errs, k)
			errs.Add("target", msg)
		}
	}
	return errs
}

// aliasesView builds a group's section from the draft.
func aliasesView(s config.Snapshot, g config.RouteGroup, kinds map[string]config.Kind, csrf string, canEdit bool) AliasesView {
	v := AliasesView{GroupID: g.ID, Group: g.Name, Aliases: g.Aliases, CSRF: csrf, CanEdit: canEdit}
	groups := []config.RouteGroup{g}
	if g.Fallback != "" && g.Fallback != config.FallbackNone {
		if i := slices.IndexFunc(s.RouteGroups, func(x config.RouteGroup) bool { return x.Name == g.Fallback }); i >= 0 {
			groups = append(groups, s.RouteGroups[i])
		}
	}
	for _, grp := range groups {
		for _, t := range grp.Tiers {
			for _, c := range t.Candidates {
				if kinds[c.LogicModel] == config.KindChat && !slices.Contains(v.Models, c.LogicModel) {
					v.Models = append(v.Models, c.LogicModel)
				}
			}
		}
	}
	slices.Sort(v.Models)
	return v
}

// OpenAliasEdit opens the edit form of the alias at position (from 1),
// filled with its current values.
func (v *AliasesView) OpenAliasEdit(position int) {
	if position < 1 || position > len(v.Aliases) {
		return
	}
	a := v.Aliases[position-1]
	v.EditAt, v.Edit = position, AliasForm{Pattern: a.Pattern, Target: TargetValue(a)}
}

// FindAliases returns the alias section of a group id (a pointer into rows).
func FindAliases(rows []Row, groupID int64) *AliasesView {
	for i := range rows {
		if rows[i].Group.ID == groupID {
			return &rows[i].Aliases
		}
	}
	return nil
}

// DOMID is the section's element id (the hx-target of its actions).
func (v AliasesView) DOMID() string { return "aliases-" + components.I64(v.GroupID) }

// RowID is the element id of the alias at position (a dry-run finding's
// link lands on it).
func (v AliasesView) RowID(position int) string {
	return AliasRowID(v.GroupID, position)
}

// AliasRowID is the element id of a group's alias at position.
func AliasRowID(groupID int64, position int) string {
	return "alias-" + components.I64(groupID) + "-" + strconv.Itoa(position)
}

// base is the URL of the group's aliases.
func (v AliasesView) base() string { return "/route-groups/" + components.I64(v.GroupID) + "/aliases" }

// at is the URL of the alias at position.
func (v AliasesView) at(position int) string { return v.base() + "/" + strconv.Itoa(position) }

// fieldID makes a form field's element id unique on the page.
func (v AliasesView) fieldID(form, name string) string {
	return "a" + components.I64(v.GroupID) + "-" + form + "-" + name
}

// targetOptions are the tiers, then the logic models the group reaches;
// current is kept as a choice when it is neither (an alias to a logic
// model the group no longer reaches, which the dry-run reports).
func (v AliasesView) targetOptions(current string) []components.Option {
	var out []components.Option
	for _, t := range config.TierNames {
		out = append(out, components.Option{Value: targetTier + string(t), Label: "tier " + string(t)})
	}
	for _, m := range v.Models {
		out = append(out, components.Option{Value: targetModel + m, Label: "logic model " + m + " (explicit)"})
	}
	if current != "" && !slices.ContainsFunc(out, func(o components.Option) bool { return o.Value == current }) {
		tier, model := ParseTarget(current)
		label := "tier " + string(tier)
		if model != "" {
			label = "logic model " + model + " (not reached by this group)"
		}
		out = append(out, components.Option{Value: current, Label: label})
	}
	return out
}

// addTarget is the add form's target: what was submitted, else deep.
func (v AliasesView) addTarget() string {
	if v.Add.Target == "" {
		return targetTier + string(config.TierDeep)
	}
	return v.Add.Target
}

// kindWords says whether an alias is an exact name or a pattern.
func kindWords(a config.ModelAlias) string {
	if a.Exact() {
		return "exact"
	}
	return "pattern"
}

// earlierLater says what moving an alias does: a pattern higher up is
// tried first.
func earlierLater(dir string) string {
	if dir == "up" {
		return "before the one above"
	}
	return "after the one below"
}
