package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"switchyard/store"
	"switchyard/store/storetest"
)

func TestJobRuns(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)

	// A worker starts a run and dies.
	dead, err := st.StartJobRun(ctx, "health-probe", "w1", 10, t0)
	if err != nil {
		t.Fatal(err)
	}
	// The next holder of the lease starts the job: the dead run is lost.
	id, err := st.StartJobRun(ctx, "health-probe", "w2", 10, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.FinishJobRun(ctx, id, store.JobOK, "probed 3", t0.Add(time.Minute+1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	// Another job's runs are separate.
	if _, err := st.StartJobRun(ctx, "load-repair", "w1", 99, t0); err != nil {
		t.Fatal(err)
	}

	rs, err := st.JobRuns(ctx, "health-probe", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].ID != id || rs[1].ID != dead {
		t.Fatalf("runs %+v", rs)
	}
	if r := rs[0]; r.Outcome != store.JobOK || r.Instance != "w2" || r.Slot != 10 || r.Duration() != 1500*time.Millisecond || r.Message != "probed 3" || !r.FinishedAt.Valid {
		t.Fatalf("finished run %+v", r)
	}
	if r := rs[1]; r.Outcome != store.JobLost || !r.FinishedAt.Valid || r.Duration() != time.Minute || r.Message == "" {
		t.Fatalf("dead run %+v", r)
	}
	if rs, _ := st.JobRuns(ctx, "load-repair", 10); len(rs) != 1 || rs[0].Outcome != store.JobRunning || rs[0].FinishedAt.Valid {
		t.Fatalf("running run %+v", rs)
	}
	if rs, _ := st.JobRuns(ctx, "health-probe", 1); len(rs) != 1 || rs[0].ID != id {
		t.Fatalf("limit 1: %+v", rs)
	}
	if err := st.FinishJobRun(ctx, 987654, store.JobOK, "", time.Now()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("finish unknown run: %v", err)
	}

	n, err := st.PruneJobRuns(ctx, t0.Add(30*time.Second))
	if err != nil || n != 2 {
		t.Fatalf("pruned %d, %v; want the two runs started at t0", n, err)
	}
	if rs, _ := st.JobRuns(ctx, "health-probe", 10); len(rs) != 1 {
		t.Fatalf("after prune %+v", rs)
	}
}
