package calllog

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
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
			add(attemptClass, a.Class, string(r.ErrorClass))
		}
		add(attemptProvider, a.Provider, r.Provider)
		add(attemptKey, a.Key, r.KeyFingerprint)
		if a.DeploymentID != 0 {
			add(attemptDeployment, strconv.FormatInt(a.DeploymentID, 10), ownDeployment)
		}
	}
	return out
}

// attemptRow is one call_log_attempts row.
type attemptRow struct {
	r *Record
	v attemptValue
}

// appendAttemptRows appends the attempt rows of r, a new row.
func appendAttemptRows(rows []attemptRow, r *Record) []attemptRow {
	for _, v := range attemptValues(r) {
		rows = append(rows, attemptRow{r, v})
	}
	return rows
}

func appendAttemptsJSON(b []byte, rows []attemptRow) []byte {
	b = append(b, '[')
	for i, a := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"at":"`...)
		b = appendCopyTime(b, a.r.At)
		b = append(b, '"')
		b = appendJSONField(b, "request_id", a.r.RequestID)
		b = appendJSONField(b, "kind", a.v.kind)
		b = appendJSONField(b, "value", a.v.value)
		b = append(b, '}')
	}
	return append(b, ']')
}

// attemptsInsert stores the attempt rows of a batch's new rows.
const attemptsInsert = `
    INSERT INTO call_log_attempts (at, request_id, kind, value)
    SELECT * FROM json_to_recordset($ARG::json) AS x(at timestamptz, request_id text, kind text, value text)
    ON CONFLICT DO NOTHING`
