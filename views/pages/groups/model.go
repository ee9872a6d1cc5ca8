// Package groups renders the Route groups page: each group with its three
// tiers side by side, each tier an ordered chain of candidate tags.
package groups

import (
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"switchyard/routing/config"
	"switchyard/views/components"
	"switchyard/views/layout"
)

// ListPage is the Route groups page.
type ListPage struct {
	Page layout.Page
	Rows []Row
}

// Row is one route group on the list page.
type Row struct {
	Group   config.RouteGroup
	Callers []string
	Same    SameModels
	Tiers   []TierView
	Aliases AliasesView
}

// SameModels is the "all three tiers use the same models" warning of one
// group. Models is empty when the tiers differ (or are all empty).
type SameModels struct {
	GroupID int64
	Models  []string
}

// ModelInfo is what a candidate tag shows about its logic model.
type ModelInfo struct {
	Kind      config.Kind
	Dimension int
	// Unusable says why the logic model has no usable deployment; "" when
	// at least one deployment can serve.
	Unusable string
}

// TierView is one tier's fragment: the hx-target of every candidate and
// timeout action of that tier.
type TierView struct {
	GroupID int64
	Group   string
	Tier    config.Tier
	// Models describes every logic model of the draft, by code.
	Models map[string]ModelInfo
	// Choices are the draft's logic models not yet in this tier.
	Choices []string
	// AnyModels is false when the draft has no logic model at all.
	AnyModels bool
	CSRF      string
	CanEdit   bool

	// A failed or requested action re-renders with its form filled in.
	Add      AddForm
	Timeouts TimeoutForm
	EditID   int64 // candidate whose priority/weight form is open
	Edit     CandidateForm
}

// where names the tier for a control's accessible name ("main / standard").
func (v TierView) where() string { return v.Group + " / " + string(v.Tier.Name) }

// AddForm is the add-candidate form of a tier.
type AddForm struct {
	LogicModel, Priority, Weight string
	Errors                       config.FieldErrors
}

// TimeoutForm is the tier timeouts form.
type TimeoutForm struct {
	TimeoutMS, FirstChunkTimeoutMS string
	Errors                         config.FieldErrors
}

// CandidateForm edits one candidate's priority and weight.
type CandidateForm struct {
	Priority, Weight string
	Errors           config.FieldErrors
}

// Level is a set of candidates sharing one priority: tried together, traffic
// split among them by weight.
type Level struct {
	Priority int
	Members  []Member
}

// Member is a candidate placed in its level.
type Member struct {
	config.Candidate
	// Share is the percentage of the level's traffic this candidate gets.
	Share int
	// CanUp and CanDown say whether moving changes anything.
	CanUp, CanDown bool
}

// Rows builds the list page's rows from a draft snapshot (in canonical order).
func Rows(s config.Snapshot, csrf string, canEdit bool) []Row {
	providers := map[string]*config.Provider{}
	for i := range s.Providers {
		providers[s.Providers[i].Name] = &s.Providers[i]
	}
	models := map[string]ModelInfo{}
	kinds := map[string]config.Kind{}
	var codes []string
	for _, m := range s.LogicModels {
		models[m.Code] = ModelInfo{Kind: m.Kind, Dimension: m.EmbeddingDimension, Unusable: unusable(m, providers)}
		kinds[m.Code] = m.Kind
		codes = append(codes, m.Code)
	}
	callers := map[string][]string{}
	for _, c := range s.Callers {
		callers[c.RouteGroup] = append(callers[c.RouteGroup], c.Name)
	}
	rows := make([]Row, 0, len(s.RouteGroups))
	for _, g := range s.RouteGroups {
		r := Row{Group: g, Callers: callers[g.Name], Same: sameModels(g), Aliases: aliasesView(s, g, kinds, csrf, canEdit)}
		for _, name := range config.TierNames {
			t := g.Tier(name)
			if t == nil {
				continue // the store always creates all three
			}
			in := map[string]bool{}
			for _, c := range t.Candidates {
				in[c.LogicModel] = true
			}
			var choices []string
			for _, code := range codes {
				if !in[code] {
					choices = append(choices, code)
				}
			}
			r.Tiers = append(r.Tiers, TierView{GroupID: g.ID, Group: g.Name, Tier: *t, Models: models, Choices: choices,
				AnyModels: len(codes) > 0, CSRF: csrf, CanEdit: canEdit})
		}
		rows = append(rows, r)
	}
	return rows
}

// FindTier returns the row and tier view (a pointer into rows) of a tier id.
func FindTier(rows []Row, tierID int64) (*Row, *TierView) {
	for i := range rows {
		for j := range rows[i].Tiers {
			if rows[i].Tiers[j].Tier.ID == tierID {
				return &rows[i], &rows[i].Tiers[j]
			}
		}
	}
	return nil, nil
}

// OpenEdit opens the priority/weight form of candidate id, wherever it is.
func OpenEdit(rows []Row, id int64) {
	for i := range rows {
		for j := range rows[i].Tiers {
			rows[i].Tiers[j].OpenEdit(id)
		}
	}
}

// OpenEdit opens the priority/weight form of candidate id if it is in this
// tier, filled with its current values.
func (v *TierView) OpenEdit(id int64) {
	for _, c := range v.Tier.Candidates {
		if c.ID == id {
			v.EditID = id
			v.Edit = CandidateForm{Priority: strconv.Itoa(c.Priority), Weight: strconv.Itoa(c.Weight)}
		}
	}
}

// unusable explains why no deployment of m can serve, or returns "".
func unusable(m config.LogicModel, providers map[string]*config.Provider) string {
	if len(m.Deployments) == 0 {
		return "no usable deployment: " + m.Code + " has no deployments"
	}
	var why []string
	for i := range m.Deployments {
		d := &m.Deployments[i]
		r := config.Unusable(d, providers)
		if r == "" {
			return ""
		}
		why = append(why, d.Provider+"/"+d.UpstreamModel+": "+r)
	}
	return "no usable deployment: " + strings.Join(why, "; ")
}

// sameModels reports the models when all three tiers have the same
// candidate chain (the dry-run's same_model_all_tiers warning).
func sameModels(g config.RouteGroup) SameModels {
	s := SameModels{GroupID: g.ID}
	if len(g.Tiers) != len(config.TierNames) {
		return s
	}
	var first []string
	for i, t := range g.Tiers {
		var codes []string
		for _, c := range t.Candidates {
			codes = append(codes, c.LogicModel)
		}
		if i == 0 {
			first = codes
		} else if !slices.Equal(first, codes) {
			return s
		}
	}
	s.Models = first
	return s
}

// Levels groups the tier's candidates (already in priority order) by
// priority, with each one's share of its level's traffic.
func (v TierView) Levels() []Level {
	var out []Level
	for _, c := range v.Tier.Candidates {
		if len(out) == 0 || out[len(out)-1].Priority != c.Priority {
			out = append(out, Level{Priority: c.Priority})
		}
		l := &out[len(out)-1]
		l.Members = append(l.Members, Member{Candidate: c})
	}
	for i := range out {
		l := &out[i]
		total := 0
		for _, m := range l.Members {
			if !m.Parked {
				total += m.Weight
			}
		}
		for j := range l.Members {
			m := &l.Members[j]
			if !m.Parked && total > 0 {
				m.Share = (m.Weight*100 + total/2) / total
			}
			m.CanUp = i > 0 || len(l.Members) > 1
			m.CanDown = i < len(out)-1 || len(l.Members) > 1
		}
	}
	return out
}

// Label describes how a level of several candidates splits its traffic,
// e.g. "canary 90/10".
func (l Level) Label() string {
	shares := make([]string, len(l.Members))
	for i, m := range l.Members {
		shares[i] = strconv.Itoa(m.Share)
	}
	word := "split"
	if len(l.Members) == 2 && l.Members[0].Share != l.Members[1].Share {
		word = "canary"
	}
	return word + " " + strings.Join(shares, "/")
}

// AllParked reports a non-empty tier whose every candidate is parked.
func (v TierView) AllParked() bool {
	if len(v.Tier.Candidates) == 0 {
		return false
	}
	for _, c := range v.Tier.Candidates {
		if !c.Parked {
			return false
		}
	}
	return true
}

// DOMID is the tier fragment's element id (the hx-target of its actions).
func (v TierView) DOMID() string { return "tier-" + components.I64(v.Tier.ID) }

// TestID is the tier's data-testid: tier-<group>-<tier>.
func (v TierView) TestID() string { return "tier-" + v.Group + "-" + string(v.Tier.Name) }

// fieldID makes a form field's element id unique on the page.
func (v TierView) fieldID(form, name string) string {
	return "t" + components.I64(v.Tier.ID) + "-" + form + "-" + name
}

// addWeight is the add form's weight: what was submitted, or the default
// 100 a blank weight stands for.
func (v TierView) addWeight() string {
	if v.Add.Weight == "" {
		return "100"
	}
	return v.Add.Weight
}

func (v TierView) timeoutValue() string {
	if v.Timeouts.Errors == nil {
		return strconv.Itoa(v.Tier.TimeoutMS)
	}
	return v.Timeouts.TimeoutMS
}

func (v TierView) firstChunkValue() string {
	if v.Timeouts.Errors == nil {
		return strconv.Itoa(v.Tier.FirstChunkTimeoutMS)
	}
	return v.Timeouts.FirstChunkTimeoutMS
}

func (v TierView) choiceLabel(code string) string {
	m := v.Models[code]
	label := code
	if m.Kind == config.KindEmbedding {
		label += " (embedding)"
	}
	if m.Unusable != "" {
		label += " ⚠ no usable deployment"
	}
	return label
}

// Form is the route group create/edit form.
type Form struct {
	ID     int64
	V      config.RouteGroup
	Errors config.FieldErrors
	CSRF   string
	// Tenants are the tenant names a group may be dedicated to.
	Tenants []string
	// SharedGroups are the groups a dedicated group may fall back to.
	SharedGroups []string
}

// Action is where the form posts.
func (f Form) Action() string {
	if f.ID == 0 {
		return "/route-groups"
	}
	return "/route-groups/" + components.I64(f.ID)
}

func (f Form) tenantOptions() []components.Option {
	out := []components.Option{{Value: "", Label: "none: a shared group"}}
	for _, t := range f.Tenants {
		out = append(out, components.Option{Value: t, Label: "dedicated to " + t})
	}
	return out
}

func (f Form) fallbackOptions() []components.Option {
	out := []components.Option{{Value: config.FallbackNone, Label: "none: fail when this group cannot serve"}}
	for _, g := range f.SharedGroups {
		out = append(out, components.Option{Value: g, Label: "→ shared group " + g})
	}
	return out
}

func (f Form) fallbackValue() string {
	if f.V.Fallback == "" {
		return config.FallbackNone
	}
	return f.V.Fallback
}

// duration shows milliseconds as seconds when whole ("15 s"), else as ms.
func duration(ms int) string {
	if ms%1000 == 0 {
		return strconv.Itoa(ms/1000) + " s"
	}
	if ms > 1000 {
		return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + " s"
	}
	return strconv.Itoa(ms) + " ms"
}

func callerList(names []string) string { return strings.Join(names, ", ") }

func isFallbackNone(f string) bool { return f == "" || f == config.FallbackNone }

// oob marks an element for an htmx out-of-band swap.
func oob(on bool) templ.Attributes {
	if on {
		return templ.Attributes{"hx-swap-oob": "true"}
	}
	return templ.Attributes{}
}
