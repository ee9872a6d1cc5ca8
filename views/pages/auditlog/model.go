// Package auditlog renders the Audit page: the audit trail with its filter,
// each row's before/after, and the check of the hash chain.
//
// data-testid: audit-filter-form, audit-filter-actor, audit-filter-action,
// audit-filter-object, audit-filter-q, audit-filter-since,
// audit-filter-until, audit-filter-apply, audit-filter-error,
// audit-results (the swapped fragment), audit-row-<id>, audit-action,
// audit-actor, audit-outcome, audit-object, audit-detail-<id>,
// audit-before, audit-after, audit-empty, audit-older, audit-verify
// (button), audit-verify-result (the swapped fragment), audit-verify-ok,
// audit-verify-broken.
package auditlog

import (
	"strconv"
	"time"

	"switchyard/views/layout"
)

// Page is the Audit page.
type Page struct {
	Page    layout.Page
	Filter  Filter
	Results Results
	// Actions are the known action codes, offered in the filter.
	Actions []string
}

// Filter is the filter form as typed.
type Filter struct {
	Actor, Action, Object, Q string
	// Since and Until are datetime-local values, read as UTC.
	Since, Until string
	Error        string
}

// Results is one page of rows, newest first.
type Results struct {
	Rows []Row
	// Older is the URL of the next (older) page; "" on the last.
	Older string
}

// Row is one audit row.
type Row struct {
	ID         int64
	At         time.Time
	Actor      string
	ActorKind  string
	Addr       string
	Action     string
	ObjectKind string
	ObjectID   string
	ObjectName string
	Outcome    string
	Status     int
	Method     string
	Route      string
	Note       string
	Before     string
	After      string
	Hash       string
}

// Verify is the result of checking the chain.
type Verify struct {
	Checked  int64
	HeadID   int64
	HeadHash string
	// Broken is set when the chain breaks: at BreakID, of kind BreakKind
	// (edited, deleted, reordered, truncated), Other as for rows.AuditBreak.
	Broken    bool
	BreakID   int64
	BreakKind string
	Other     int64
	// Err is set when the check itself failed.
	Err string
}

// BreakWords says what a break means.
func BreakWords(v Verify) string {
	id := "#" + strconv.FormatInt(v.BreakID, 10)
	switch v.BreakKind {
	case "edited":
		return "Row " + id + " was edited: its fields no longer give its hash."
	case "deleted":
		return "The row before " + id + " was deleted (or rewritten): " + id + " points to a hash no row has."
	case "reordered":
		return "Rows were reordered: " + id + " points to row #" + strconv.FormatInt(v.Other, 10) + ", which should stand just before it."
	case "truncated":
		return "Rows were cut from the end: the last row is " + id + ", but the chain's head records #" + strconv.FormatInt(v.Other, 10) + "."
	}
	return "The chain breaks at " + id + "."
}

// objectText is "caller #7 billing".
func objectText(r Row) string {
	s := r.ObjectKind
	if r.ObjectID != "" {
		s += " #" + r.ObjectID
	}
	if r.ObjectName != "" {
		s += " " + r.ObjectName
	}
	return s
}

func outcomeBadge(o string) string {
	switch o {
	case "ok":
		return "ok"
	case "refused":
		return "warn"
	}
	return "bad"
}
