package rows

import (
	"database/sql"
	"time"
)

// Outcomes of a job run.
const (
	JobRunning = "running"
	JobOK      = "ok"
	JobError   = "error"
	// JobLost is a run whose worker stopped, or lost its lease, before the
	// run finished.
	JobLost = "lost"
)

// JobRun is one run of a singleton job.
type JobRun struct {
	ID         int64        `db:"id"`
	Job        string       `db:"job"`
	Instance   string       `db:"instance"`
	Slot       int64        `db:"slot"`
	StartedAt  time.Time    `db:"started_at"`
	FinishedAt sql.NullTime `db:"finished_at"`
	DurationMS int64        `db:"duration_ms"`
	Outcome    string       `db:"outcome"`
	Message    string       `db:"message"`
}

// Duration is how long the run took (so far, for a running one).
func (r JobRun) Duration() time.Duration { return time.Duration(r.DurationMS) * time.Millisecond }
