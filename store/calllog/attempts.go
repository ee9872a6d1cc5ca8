package calllog

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/lib/pq"
)

// attemptColumns hold what the attempts of a call saw besides the row's own
// final columns (see migration 0013): the classes of its failed attempts,
// and the providers, deployments and key fingerprints of every vendor call
// it made, each set without the value the row's column already holds and
// NULL when empty. They are written at insert from the trail and never
// read back (the trail itself is the record); they exist for the filters.
var attemptColumns = []string{"attempt_classes", "attempt_providers", "attempt_deployment_ids", "attempt_keys"}

// insertColumnList is what a batch copies: the record's columns, then the
// attempt sets computed from it.
var insertColumnList = columnList + ", " + strings.Join(attemptColumns, ", ")

// insertValues returns r's values for insertColumnList.
func insertValues(r *Record) []any {
	s := trailSets(r)
	return append(values(r), textArray(s.classes), textArray(s.providers), int64Array(s.deployments), textArray(s.keys))
}

// attemptSets are a call's attempt values besides its final columns.
type attemptSets struct {
	classes, providers, keys []string
	deployments              []int64
}

// trailAttempt is the part of a trail entry (routing.Attempt) the sets read.
type trailAttempt struct {
	DeploymentID int64  `json:"deployment_id"`
	Provider     string `json:"provider"`
	Key          string `json:"key"`
	Outcome      string `json:"outcome"`
	Class        string `json:"class"`
}

// trailSets reads the attempt sets from r's trail: {"attempts": [...]}, or
// a bare array in the oldest rows. Only a call with a failed attempt can
// have any (without one it made at most one call, the one its own columns
// describe), so most rows are not parsed at all. An unreadable trail has
// none; the row is stored all the same.
func trailSets(r *Record) attemptSets {
	var s attemptSets
	if !bytes.Contains(r.Attempts, []byte(`"failed"`)) {
		return s
	}
	var attempts []trailAttempt
	raw := bytes.TrimSpace(r.Attempts)
	if len(raw) > 0 && raw[0] == '[' {
		if json.Unmarshal(raw, &attempts) != nil {
			return s
		}
	} else {
		var tr struct {
			Attempts []trailAttempt `json:"attempts"`
		}
		if json.Unmarshal(raw, &tr) != nil {
			return s
		}
		attempts = tr.Attempts
	}
	for _, a := range attempts {
		if a.Outcome != "ok" && a.Outcome != "failed" {
			continue // a skip is not a call
		}
		if a.Outcome == "failed" {
			s.classes = addText(s.classes, a.Class, r.ErrorClass)
		}
		s.providers = addText(s.providers, a.Provider, r.Provider)
		s.keys = addText(s.keys, a.Key, r.KeyFingerprint)
		if a.DeploymentID != 0 && (r.DeploymentID == nil || *r.DeploymentID != a.DeploymentID) && !slices.Contains(s.deployments, a.DeploymentID) {
			s.deployments = append(s.deployments, a.DeploymentID)
		}
	}
	slices.Sort(s.classes)
	slices.Sort(s.providers)
	slices.Sort(s.keys)
	slices.Sort(s.deployments)
	return s
}

// addText adds v to set unless it is empty, the row's own value or there.
func addText(set []string, v, own string) []string {
	v = cleanText(v)
	if v == "" || v == own || len(v) > MaxTextLen || slices.Contains(set, v) {
		return set
	}
	return append(set, v)
}

func textArray(v []string) any {
	if len(v) == 0 {
		return nil
	}
	return pq.StringArray(v)
}

func int64Array(v []int64) any {
	if len(v) == 0 {
		return nil
	}
	return pq.Int64Array(v)
}
