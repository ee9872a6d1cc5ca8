// Package jobs renders the Jobs page: the worker role's singleton jobs with
// their lease holder, schedule and recent runs (the worker role).
//
// data-testid: jobs-board, jobs-not-running, jobs-error, rollups-note,
// jobs-table, job-<name> (row) with job-every, job-holder, job-last,
// job-duration, job-next, job-run-now; job-runs-<name> with job-run (row),
// no-runs.
package jobs

import (
	"strconv"
	"time"

	"switchyard/views/layout"
)

// Row is one job.
type Row struct {
	Name        string
	Description string
	Every       time.Duration
	// Holder is the worker holding the lease now, "" when free.
	Holder    string
	LeaseLeft time.Duration
	Requested bool
	// NextRun is when the next tick starts; zero when due now.
	NextRun time.Time
	Runs    []Run
}

// Run is one run of a job, newest first in Row.Runs.
type Run struct {
	StartedAt time.Time
	Instance  string
	// Finished is false while the run is going.
	Finished bool
	// Duration is how long the run took (so far, for a running one).
	Duration time.Duration
	// Outcome is the run's outcome code: "running", "ok", "error" or
	// "lost" (its worker stopped before it finished).
	Outcome string
	Message string
}

// Board is the part of the page htmx refreshes.
type Board struct {
	Rows []Row
	// Running is false when this instance knows no jobs.
	Running bool
	Error   string
	CanEdit bool
	CSRF    string
}

// Page is the Jobs page.
type Page struct {
	Page  layout.Page
	Board Board
}

func until(t time.Time) string {
	d := time.Until(t).Round(time.Second)
	if d <= 0 {
		return "due now"
	}
	return "in " + d.String()
}

func dur(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
	return d.Round(time.Second).String()
}

func outcomeKind(s string) string {
	switch s {
	case "ok":
		return "ok"
	case "error", "lost":
		return "bad"
	case "running":
		return "info"
	}
	return ""
}

// costRollupsNote explains why the list has no roll-up job.
const costRollupsNote = "Cost roll-ups (per day × caller × tier × logic model) need no job: the call-log writer updates them in the same transaction that inserts each batch of call logs, so they are always as current as the call logs themselves."
