package handlers

import (
	"database/sql"
	"testing"
	"time"

	"switchyard/store"
)

// The console's view models carry what the store rows mean: a missing
// score, an unfinished run or a revoked key must not turn into a zero value
// the page would show as a real one.
func TestStoreRowsBecomeViewModels(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

	ev := healthEventViews([]store.HealthEvent{
		{At: at, From: "healthy", To: "down", Score: sql.NullFloat64{Float64: 0, Valid: true}, Samples: 3, Reason: "r"},
		{At: at, From: "down", To: "degraded"},
	})
	if len(ev) != 2 || !ev[0].HasScore || ev[0].Score != 0 || ev[0].Samples != 3 || ev[0].From != "healthy" || ev[0].To != "down" {
		t.Fatalf("scored event %+v", ev)
	}
	if ev[1].HasScore {
		t.Fatalf("an event without a score has one: %+v", ev[1])
	}

	pr := probeViews([]store.Probe{{At: at, Outcome: store.ProbeFailed, LatencyMS: 12, Class: "server", HTTPStatus: 500, Message: "m"}})
	if len(pr) != 1 || pr[0].Outcome != "failed" || pr[0].LatencyMS != 12 || pr[0].HTTPStatus != 500 || !pr[0].At.Equal(at) {
		t.Fatalf("probe %+v", pr)
	}

	runs := jobRunViews([]store.JobRun{
		{StartedAt: at, Instance: "w1", Outcome: store.JobRunning, DurationMS: 1500},
		{StartedAt: at, Instance: "w2", Outcome: store.JobOK, DurationMS: 20, FinishedAt: sql.NullTime{Time: at, Valid: true}},
	})
	if runs[0].Finished || runs[0].Duration != 1500*time.Millisecond || runs[0].Outcome != "running" {
		t.Fatalf("running job %+v", runs[0])
	}
	if !runs[1].Finished || runs[1].Duration != 20*time.Millisecond || runs[1].Instance != "w2" {
		t.Fatalf("finished job %+v", runs[1])
	}

	keys := callerKeyViews([]store.CallerKeyInfo{{ID: 7, Name: "ci", Prefix: "sk-ab", CreatedAt: at}, {ID: 8, Prefix: "sk-cd", CreatedAt: at, RevokedAt: &at}})
	if keys[0].RevokedAt != nil || keys[0].ID != 7 || keys[0].Prefix != "sk-ab" || keys[1].RevokedAt == nil {
		t.Fatalf("keys %+v", keys)
	}

	tok := adminTokenViews([]store.AdminToken{{ID: 3, Name: "deploy", Prefix: "sya-x", Role: store.RoleAdmin, CreatedBy: "root", CreatedAt: at, LastUsedAt: &at}})
	if len(tok) != 1 || tok[0].Role != "admin" || tok[0].LastUsedAt == nil || tok[0].RevokedAt != nil || tok[0].CreatedBy != "root" {
		t.Fatalf("tokens %+v", tok)
	}

	back := int64(2)
	v := versionView(store.Version{Number: 4, Author: "a", Message: "m", Snapshot: "s", RollbackOf: &back,
		Checks: []byte(`{"findings":[{"check":"x","severity":"error","message":"boom"}]}`)})
	if v.Number != 4 || v.RollbackOf == nil || *v.RollbackOf != 2 || v.Snapshot != "s" || len(v.Checks.Findings) != 1 {
		t.Fatalf("version %+v", v)
	}
}
