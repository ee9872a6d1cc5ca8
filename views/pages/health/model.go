// Package health renders the Health page: every deployment's health score
// and state, its recent probes and its state history (SPEC §7).
//
// data-testid: health-board (the fragment refreshed by htmx), health-rules,
// health-not-tracking, health-error, health-table, health-<deployment id>
// (row) with health-state, health-score, health-samples, health-since,
// health-probed; health-detail-<deployment id> with probes (table), probe
// (row), history (table), health-event (row), no-probes, no-history.
package health

import (
	"strconv"
	"time"

	"switchyard/store"
	"switchyard/views/layout"
)

// Row is one deployment.
type Row struct {
	ID       int64
	Model    string
	Provider string
	Upstream string
	Kind     string
	// Parked deployments are probed but serve no traffic.
	Parked bool
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
	Probes    []store.Probe
	Events    []store.HealthEvent
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
	Rows []Row
	// Tracking is false when this instance has no health tracker.
	Tracking bool
	Rules    Rules
	// Error is shown when Redis could not be read.
	Error string
	// NoConfig: nothing is published yet.
	NoConfig bool
}

// Page is the Health page.
type Page struct {
	Page  layout.Page
	Board Board
}

// Pct formats a fraction as a whole percentage.
func Pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 0, 64) + "%" }

func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

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
	case store.ProbeOK:
		return "ok"
	case store.ProbeFailed:
		return "bad"
	}
	return "warn"
}

func score(r Row) string {
	if !r.Evaluated || r.Samples == 0 {
		return "no samples"
	}
	return Pct(r.Score)
}

func eventScore(e store.HealthEvent) string {
	if !e.Score.Valid {
		return "—"
	}
	return Pct(e.Score.Float64)
}
