package rows

import (
	"database/sql"
	"time"
)

// Probe outcomes.
const (
	ProbeOK = "ok"
	// ProbeFailed is a server, timeout or network failure: it counts against
	// the deployment's health score.
	ProbeFailed = "failed"
	// ProbeInconclusive is a key or request problem (rate limited, auth,
	// billing, bad request) that says nothing about the deployment.
	ProbeInconclusive = "inconclusive"
)

// Probe is one health probe of a deployment.
type Probe struct {
	ID           int64     `db:"id"`
	DeploymentID int64     `db:"deployment_id"`
	At           time.Time `db:"at"`
	Outcome      string    `db:"outcome"`
	LatencyMS    int64     `db:"latency_ms"`
	Class        string    `db:"class"`
	HTTPStatus   int       `db:"http_status"`
	Message      string    `db:"message"`
}

// HealthEvent is one change of a deployment's health state.
type HealthEvent struct {
	ID           int64           `db:"id"`
	DeploymentID int64           `db:"deployment_id"`
	At           time.Time       `db:"at"`
	From         string          `db:"from_state"`
	To           string          `db:"to_state"`
	Score        sql.NullFloat64 `db:"score"`
	Samples      int64           `db:"samples"`
	Reason       string          `db:"reason"`
}
