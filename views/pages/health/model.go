// Package health renders the Health page: first whether each route group ×
// tier can serve now (servable, degraded with what is degraded, or
// unservable with the reason), then whether each deployment of
// the live version can serve now and, when not, why (disabled, parked, its
// provider disabled, no usable key, breaker open, down by score); then its
// health score and state, recent probes and state history (the worker
// role).
//
// data-testid: health-board (the fragment refreshed by htmx), health-tiers
// (the servability table, see components.VerdictTable), health-rules,
// health-summary, health-not-tracking, health-error, health-table,
// health-<deployment id> (row, data-serving="yes|no|parked") with
// health-serving, health-why (one per reason, data-reason=<code>),
// health-state, health-score, health-samples, health-since, health-probed,
// health-probe-cost; health-probe-total (the 24 h total, with
// health-probe-total-cost); health-detail-<deployment id> (a <details>
// kept open across refreshes) with probes (table), probe (row), history
// (table), health-event (row), no-probes, no-history.
package health

import (
	"strconv"
	"time"

	"switchyard/routing"
	"switchyard/routing/reason"
	"switchyard/views/layout"
)

// Row is one deployment.
type Row struct {
	ID       int64
	Model    string
	Provider string
	Upstream string
	Kind     string
	// ModelID and ProviderID are for the links that fix a block.
	ModelID    int64
	ProviderID int64
	// Parked deployments are probed but serve no traffic.
	Parked bool
	// Blocks are why it cannot serve now, the configuration's reason
	// first (disabled, parked, provider disabled, no active key), then the
	// key pool's, the breaker's and the health score's. Empty: it serves.
	Blocks []reason.Reason
	// Keys are the provider's active keys when none of them is usable
	// (the keys behind a KeysQuarantined or KeysCooling block).
	Keys []KeyBlock
	// BreakerOpenOn is how many of Instances have its breaker open.
	BreakerOpenOn, Instances int
	// NotProbed says why the worker does not probe it, "" when it does.
	NotProbed string
	// Evaluated is false until the worker scored it once.
	Evaluated bool
	State     string
	Score     float64
	Samples   int64
	LiveOK    int64
	LiveFail  int64
	ProbeOK   int64
	ProbeFail int64
	Since     time.Time
	Reason    string
	Probes    []Probe
	Events    []Event
	// Cost is its probing over the last 24 hours.
	Cost ProbeCost
	// Skip is set when the latest due probe was left out (newer than the
	// latest probe in Probes).
	Skip Skip
}

// KeyBlock is one provider key that cannot be used now.
type KeyBlock struct {
	Label       string
	Fingerprint string
	// Status is "quarantined" or "cooling".
	Status string
	// Fault is why the vendor refused a quarantined key; Legacy the text
	// of states recorded before faults were typed.
	Fault  *routing.KeyFault
	Legacy string
	// Until is when a cooling key is usable again.
	Until time.Time
}

// Serving reports whether the deployment can take traffic now.
func (r Row) Serving() bool { return len(r.Blocks) == 0 }

// Has reports whether one of the row's blocks has that code.
func (r Row) Has(c reason.Code) bool {
	for _, b := range r.Blocks {
		if b.Code == c {
			return true
		}
	}
	return false
}

// ProbeCost is probing over the last 24 hours (whole hours): probes actually
// sent and their cost (the usage the vendor reported at the deployment's
// prices), and probes skipped.
type ProbeCost struct {
	Sent, Skipped int64
	Micros        int64
	Currency      string
}

// Skip is a probe left out.
type Skip struct {
	// Code is why: "live_traffic" (a live request succeeded within the
	// probe interval). "" when the latest probe was sent.
	Code string
	At   time.Time
	// LiveOK is the latest live success, zero when unknown.
	LiveOK time.Time
}

// Totals are every deployment's probing over the last 24 hours.
type Totals struct {
	Sent, Skipped int64
	// Micros is the cost by currency (never added across currencies).
	Micros map[string]int64
}

// Probe is one health probe of a deployment, newest first in Row.Probes.
type Probe struct {
	At time.Time
	// Outcome is the probe's outcome code: "ok", "failed" (counts against
	// the score) or "inconclusive".
	Outcome    string
	LatencyMS  int64
	Class      string
	HTTPStatus int
	Message    string
}

// Event is one change of a deployment's health state.
type Event struct {
	At       time.Time
	From, To string
	// HasScore is false when the change carried no score.
	HasScore bool
	Score    float64
	Samples  int64
	Reason   string
}

// Rules are the scoring window and thresholds, for the page's explanation.
type Rules struct {
	Window        time.Duration
	MinSamples    int64
	DegradedBelow float64
	DownBelow     float64
	RecoverProbes int
}

// Board is the part of the page htmx refreshes.
type Board struct {
	// Tiers is every route group × tier's servability, shown first.
	Tiers []routing.TierVerdict
	Rows  []Row
	// Tracking is false when this instance has no health tracker.
	Tracking bool
	Rules    Rules
	// Error is shown when Redis could not be read.
	Error string
	// NoConfig: nothing is published yet.
	NoConfig bool
	// Total is the probe count and cost over the last 24 hours.
	Total Totals
}

// Page is the Health page.
type Page struct {
	Page  layout.Page
	Board Board
}

// Pct formats a fraction as a whole percentage.
func Pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 0, 64) + "%" }

func stateKind(s string) string {
	switch s {
	case "healthy":
		return "ok"
	case "degraded":
		return "warn"
	case "down":
		return "bad"
	}
	return ""
}

func outcomeKind(s string) string {
	switch s {
	case "ok":
		return "ok"
	case "failed":
		return "bad"
	}
	return "warn"
}

// skipWords says why a probe was left out.
func skipWords(code string) string {
	switch code {
	case "live_traffic":
		return "skipped: live traffic succeeded"
	}
	return "skipped"
}

func score(r Row) string {
	if !r.Evaluated || r.Samples == 0 {
		return "no samples"
	}
	return Pct(r.Score)
}

func eventScore(e Event) string {
	if !e.HasScore {
		return "—"
	}
	return Pct(e.Score)
}
