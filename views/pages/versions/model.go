// Package versions renders the configuration lifecycle pages: dry-run and
// publish, version history, diffs, rollback, export and import.
package versions

import (
	"net/url"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/config/textdiff"
	"switchyard/views/components"
	"switchyard/views/layout"
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
}

// DryRunPage shows the draft's findings and the publish form.
type DryRunPage struct {
	Page     layout.Page
	Result   config.Result
	Revision int64
	Message  string
	Error    string // why a publish was refused
	Ins, Del int    // size of the change against the live version
}

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

// Link is where a finding's object is edited.
func Link(o config.ObjectRef) string {
	switch o.Kind {
	case "tier", "candidate":
		return "/route-groups#tier-" + o.Group + "-" + string(o.Tier)
	case "route_group":
		return "/route-groups#group-" + o.Name
	case "logic_model":
		return "/logic-models/" + components.I64(o.ID) + "/edit"
	case "deployment":
		return "/deployments/" + components.I64(o.ID) + "/edit"
	case "provider":
		return "/providers/" + components.I64(o.ID) + "/edit"
	case "caller":
		return "/callers/" + components.I64(o.ID) + "/edit"
	}
	return "/"
}

func diffURL(from, to string) string {
	return "/versions/diff?from=" + url.QueryEscape(from) + "&to=" + url.QueryEscape(to)
}

func errorCount(r config.Result) int { return len(r.Errors()) }

func warningCount(r config.Result) int { return len(r.Findings) - len(r.Errors()) }
