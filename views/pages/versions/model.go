// Package versions renders the configuration lifecycle pages: dry-run and
// publish, version history, diffs, rollback, export and import.
package versions

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/routing/config/textdiff"
	"switchyard/views/components"
	"switchyard/views/layout"
	"switchyard/views/pages/groups"
)

// ListPage is the version history.
type ListPage struct {
	Page     layout.Page
	Versions []Version
}

// Version is one published configuration.
type Version struct {
	Number    int64
	Author    string
	CreatedAt time.Time
	Message   string
	// Snapshot is the configuration text; empty on the history list.
	Snapshot string
	// Checks is the dry-run result the version was published with.
	Checks config.Result
	// RollbackOf is the version this one restored, nil for a publish.
	RollbackOf *int64
}

// ShowPage is one version.
type ShowPage struct {
	Page    layout.Page
	Version Version
	IsLive  bool
}

// DiffPage compares two versions (or a version and the draft).
type DiffPage struct {
	Page     layout.Page
	From, To string // version numbers or "draft"
	Options  []string
	Lines    []textdiff.Line
	Ins, Del int
	// Changes is the semantic summary, objects matched by name.
	Changes []config.Change
	// ShowIDs shows the raw text with database ids; by default they are
	// hidden, so recreated rows are no change.
	ShowIDs bool
}

// DryRunPage shows the draft's findings, the impact preview and the
// publish form.
type DryRunPage struct {
	Page     layout.Page
	Result   config.Result
	Revision int64
	Message  string
	Error    string // why a publish was refused
	Ins, Del int    // size of the change against the live version
	// Changes against the live version, objects matched by name.
	Changes []config.Change
	// Impact replays the last day's traffic against the draft; nil with
	// ImpactProblem saying why when it could not.
	Impact          *routing.Impact
	ImpactProblem   string
	ImpactTruncated bool
	// Typed holds the acknowledgements the operator typed, by ack, shown
	// again after a refusal.
	Typed map[string]string
	// Rollback, when set, makes this the preview of a rollback: the
	// version's content instead of the draft, published on confirm.
	Rollback *RollbackPreview
	// Standing lists the acknowledgements in force on the live version: a
	// finding one of them names is carried over, not asked again.
	Standing []config.Standing
}

// AckRows lists the acks the page's findings need, those standing on the
// live version marked so.
func (p DryRunPage) AckRows() []AckRow { return AckRows(p.Result, p.Standing) }

// PendingAckRows lists the acks the operator still has to type.
func (p DryRunPage) PendingAckRows() []AckRow {
	var out []AckRow
	for _, a := range p.AckRows() {
		if a.Standing == nil {
			out = append(out, a)
		}
	}
	return out
}

// PendingAcks counts the acks the operator still has to type.
func (p DryRunPage) PendingAcks() int { return len(p.PendingAckRows()) }

// AckRow is one acknowledgement a publish needs: the ack's text form
// (what the operator types), the tier or logic model it gives up and the
// callers who would get 503.
type AckRow struct {
	Key     string
	Group   string
	Target  string
	Callers []string
	Checks  []string
	// Standing, when set, is the acknowledgement given on an earlier
	// version for this same ack: the publish carries it over, no typing.
	Standing *config.Standing
}

// WholeTier reports whether the tier answers 503 to everyone (a static
// finding), not only to the callers whose traffic the replay lost.
func (a AckRow) WholeTier() bool { return slices.Contains(a.Checks, config.CheckTierUnservable) }

// AckRows lists the distinct acks the result's findings need, in order;
// those standing on the live version carry it.
func AckRows(r config.Result, standing []config.Standing) []AckRow {
	var out []AckRow
	for _, f := range r.NeedAck() {
		if f.Ack == nil {
			continue
		}
		key := f.Ack.String()
		i := slices.IndexFunc(out, func(a AckRow) bool { return a.Key == key })
		if i < 0 {
			out = append(out, AckRow{Key: key, Group: f.Ack.RouteGroup, Target: f.Ack.Target()})
			i = len(out) - 1
			if s, ok := config.FindStanding(standing, *f.Ack); ok {
				out[i].Standing = &s
			}
		}
		for _, c := range f.Callers {
			if !slices.Contains(out[i].Callers, c) {
				out[i].Callers = append(out[i].Callers, c)
			}
		}
		if !slices.Contains(out[i].Checks, f.Check) {
			out[i].Checks = append(out[i].Checks, f.Check)
		}
	}
	return out
}

// AckTestID is the data-testid of an acknowledgement input.
func AckTestID(key string) string { return "ack-" + strings.ReplaceAll(key, "/", "-") }

// ImportPage previews an uploaded snapshot before it replaces the draft.
type ImportPage struct {
	Page     layout.Page
	Text     string
	Error    string
	Fields   config.FieldErrors
	Preview  bool
	Lines    []textdiff.Line
	Ins, Del int
	Result   config.Result
}

// Link is where a finding is fixed: the form field or inline control
// that changes the object at fault, which the page highlights (the
// fragment is the control's or its section's element id; a closed
// <details> around it opens).
func Link(f config.Finding) string {
	o := f.Object
	switch o.Kind {
	case "tier":
		if o.Field == "timeout_ms" || o.Field == "first_chunk_timeout_ms" {
			return "/route-groups#t" + components.I64(o.ID) + "-tier-" + o.Field
		}
		return "/route-groups#tier-" + o.Group + "-" + string(o.Tier)
	case "candidate":
		// The candidate's logic model has no usable deployment: enable,
		// unpark or add one on its panel.
		return "/logic-models#model-" + components.I64(o.ModelID)
	case "route_group":
		if o.Field != "" && o.ID != 0 {
			return "/route-groups/" + components.I64(o.ID) + "/edit#f-" + o.Field
		}
		return "/route-groups#group-" + o.Name
	case "logic_model":
		if o.Field == "embedding_dimension" {
			return "/logic-models/" + components.I64(o.ID) + "/edit#f-embedding_dimension"
		}
		// weights_sum, unused_logic_model: the panel with the deployments'
		// weight, enable and park controls.
		return "/logic-models#model-" + components.I64(o.ID)
	case "deployment":
		return "/deployments/" + components.I64(o.ID) + "/edit#f-" + orDefault(o.Field, "provider")
	case "provider":
		return "/providers/" + components.I64(o.ID) + "/edit#f-" + orDefault(o.Field, "protocol")
	case "caller":
		return "/callers/" + components.I64(o.ID) + "/edit#f-" + orDefault(o.Field, "route_group")
	case "model_alias":
		// The alias's row in its group's "Model aliases" section, with its
		// edit, move and remove buttons.
		if n, err := strconv.Atoi(f.Params["position"]); err == nil && o.ID != 0 {
			return "/route-groups#" + groups.AliasRowID(o.ID, n)
		}
		return "/route-groups#group-" + o.Group
	}
	return "/"
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// ChangeVerb is what happened to the object, in one word: added, removed,
// parked, unparked, enabled, disabled, or changed (any other field).
func ChangeVerb(c config.Change) string {
	switch {
	case c.Op != config.Changed:
		return string(c.Op)
	case c.Field == "parked" && c.To == "true":
		return "parked"
	case c.Field == "parked":
		return "unparked"
	case c.Field == "enabled" && c.To == "true":
		return "enabled"
	case c.Field == "enabled":
		return "disabled"
	}
	return "changed"
}

// ChangeObject names the object changed, placed in its parent, e.g.
// "candidate fake-deep in route group default, tier deep"; for a change of
// another field than parked or enabled it adds the field and its values,
// e.g. ": weight 100 → 50".
func ChangeObject(c config.Change) string {
	o := c.Object
	var what string
	switch o.Kind {
	case "provider_key":
		what = "key " + o.Name + " of provider " + o.Group
	case "provider_header":
		what = "header " + o.Name + " of provider " + o.Group
	case "deployment":
		what = "deployment " + o.Name + " of logic model " + o.Model
	case "tier":
		what = "tier " + string(o.Tier) + " of route group " + o.Group
	case "candidate":
		what = "candidate " + o.Name + " in route group " + o.Group + ", tier " + string(o.Tier)
	case "model_alias":
		what = "model alias " + o.Name + " of route group " + o.Group
	case "caller_key":
		what = "key " + o.Name + " of caller " + o.Group
	default:
		what = strings.ReplaceAll(o.Kind, "_", " ") + " " + o.Name
	}
	if ChangeVerb(c) == "changed" {
		what += ": " + c.Field + " " + orNone(c.From) + " → " + orNone(c.To)
	}
	return what
}

// ChangeWords is one semantic change as one plain phrase, e.g. "removed
// caller tiny-app", "parked candidate fake-deep in route group default,
// tier deep", "changed caller app: limits.deep.rpm 0 → 60".
func ChangeWords(c config.Change) string { return ChangeVerb(c) + " " + ChangeObject(c) }

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func changeKind(c config.Change) string {
	switch ChangeVerb(c) {
	case "added", "unparked", "enabled":
		return "ok"
	case "removed":
		return "bad"
	case "parked", "disabled":
		return "warn"
	}
	return "info"
}

// lostBy sums the impact's lost requests.
func lostTotals(im *routing.Impact) (requests, served int64) {
	for _, l := range im.Lost {
		requests += l.Requests
		served += l.Served
	}
	return requests, served
}

// perDay formats an expected count of requests per day.
func perDay(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// shareOf is v as a percentage of the total of the side.
func shareOf(v, total float64) string {
	if total <= 0 {
		return "0 %"
	}
	return strconv.FormatFloat(100*v/total, 'f', 0, 64) + " %"
}

func totals(ss []routing.Shift) (before, after float64) {
	for _, s := range ss {
		before += s.Before
		after += s.After
	}
	return before, after
}

// shiftLabel names a deployment or provider row.
func shiftLabel(s routing.Shift) string {
	if s.LogicModel == "" {
		return s.Provider
	}
	return s.LogicModel + " on " + s.Provider + " (" + s.Upstream + ")"
}

// Bars is a paired bar chart, live → draft, one pair per row.
type Bars struct {
	TestID string
	Label  string
	Rows   []BarRow
	Height int
}

// BarRow is one row of a Bars chart; widths are in chart units (0–300).
type BarRow struct {
	Label         string
	Before, After string // the values in words
	WB, WA        int
	Y             int
}

// bars lays out shifts as a chart.
func bars(testID, label string, ss []routing.Shift) Bars {
	b := Bars{TestID: testID, Label: label}
	tb, ta := totals(ss)
	maxv := 0.0
	for _, s := range ss {
		maxv = max(maxv, s.Before, s.After)
	}
	for i, s := range ss {
		r := BarRow{Label: shiftLabel(s), Before: perDay(s.Before) + " (" + shareOf(s.Before, tb) + ")", After: perDay(s.After) + " (" + shareOf(s.After, ta) + ")", Y: i * 34}
		if maxv > 0 {
			r.WB, r.WA = int(300*s.Before/maxv+0.5), int(300*s.After/maxv+0.5)
		}
		b.Rows = append(b.Rows, r)
	}
	b.Height = len(ss)*34 + 4
	return b
}

func (b Bars) viewBox() string { return fmt.Sprintf("0 0 620 %d", b.Height) }

func (b Bars) aria() string {
	var parts []string
	for _, r := range b.Rows {
		parts = append(parts, r.Label+": "+r.Before+" → "+r.After)
	}
	return b.Label + ", requests per day live → draft: " + strings.Join(parts, "; ")
}

// moneyDelta is after − before in words with its sign.
func moneyDelta(c routing.CostShift) string {
	d := c.After - c.Before
	if d >= 0 {
		return "+" + components.Money(d, c.Currency)
	}
	return "−" + components.Money(-d, c.Currency)
}

func diffURL(from, to string) string {
	return "/versions/diff?from=" + url.QueryEscape(from) + "&to=" + url.QueryEscape(to)
}

func errorCount(r config.Result) int { return len(r.Errors()) }

func ackCount(r config.Result) int { return len(r.NeedAck()) }

func warningCount(r config.Result) int { return len(r.Warnings()) }
