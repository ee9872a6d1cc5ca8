package calllog

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/lib/pq"
)

// Kinds of call_log_attempts rows: what an attempt of a call saw besides
// the row's own final columns (see migration 0013).
const (
	attemptClass      = "class"
	attemptProvider   = "provider"
	attemptDeployment = "deployment"
	attemptKey        = "key"
)

// attemptValue is one call_log_attempts row of a call.
type attemptValue struct{ kind, value string }

// trailAttempt is the part of a trail entry (routing.Attempt) read here.
type trailAttempt struct {
	DeploymentID int64  `json:"deployment_id"`
	Provider     string `json:"provider"`
	Key          string `json:"key"`
	Outcome      string `json:"outcome"`
	Class        string `json:"class"`
}

// attemptValues reads from r's trail ({"attempts": [...]}, or a bare array
// in the oldest rows) the class of each failed attempt and the provider,
// deployment and key of every call made, each value once and only when
// r's own column does not hold it. Only a call with a failed attempt can
// have any (without one it made at most one call, the one its own columns
// describe), so most rows are not parsed at all. An unreadable trail has
// none; the row is stored all the same.
func attemptValues(r *Record) []attemptValue {
	if !bytes.Contains(r.Attempts, []byte(`"failed"`)) {
		return nil
	}
	var attempts []trailAttempt
	raw := bytes.TrimSpace(r.Attempts)
	if len(raw) > 0 && raw[0] == '[' {
		if json.Unmarshal(raw, &attempts) != nil {
			return nil
		}
	} else {
		var tr struct {
			Attempts []trailAttempt `json:"attempts"`
		}
		if json.Unmarshal(raw, &tr) != nil {
			return nil
		}
		attempts = tr.Attempts
	}
	ownDeployment := ""
	if r.DeploymentID != nil {
		ownDeployment = strconv.FormatInt(*r.DeploymentID, 10)
	}
	var out []attemptValue
	add := func(kind, v, own string) {
		v = cleanText(v)
		if v == "" || v == own || len(v) > MaxTextLen || slices.Contains(out, attemptValue{kind, v}) {
			return
		}
		out = append(out, attemptValue{kind, v})
	}
	for _, a := range attempts {
		if a.Outcome != "ok" && a.Outcome != "failed" {
			continue // a skip is not a call
		}
		if a.Outcome == "failed" {
			add(attemptClass, a.Class, r.ErrorClass)
		}
		add(attemptProvider, a.Provider, r.Provider)
		add(attemptKey, a.Key, r.KeyFingerprint)
		if a.DeploymentID != 0 {
			add(attemptDeployment, strconv.FormatInt(a.DeploymentID, 10), ownDeployment)
		}
	}
	return out
}

// attemptRows collects a batch's call_log_attempts rows.
type attemptRows struct {
	ats                       []time.Time
	ids, kinds, attemptValues []string
}

func (a *attemptRows) add(r *Record) {
	for _, v := range attemptValues(r) {
		a.ats = append(a.ats, r.At)
		a.ids = append(a.ids, r.RequestID)
		a.kinds = append(a.kinds, v.kind)
		a.attemptValues = append(a.attemptValues, v.value)
	}
}

// attemptsStmt stores a batch's attempt rows; a replayed row is there
// already.
const attemptsStmt = `INSERT INTO call_log_attempts (at, request_id, kind, value)
    SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[])
    ON CONFLICT DO NOTHING`

func (a *attemptRows) store(ctx context.Context, tx *sql.Tx) error {
	if len(a.ats) == 0 {
		return nil
	}
	ats := make([]string, len(a.ats))
	for i, t := range a.ats {
		ats[i] = t.UTC().Format(time.RFC3339Nano)
	}
	if _, err := tx.ExecContext(ctx, attemptsStmt, pq.Array(ats), pq.Array(a.ids), pq.Array(a.kinds), pq.Array(a.attemptValues)); err != nil {
		return fmt.Errorf("calllog: store attempts: %w", err)
	}
	return nil
}
