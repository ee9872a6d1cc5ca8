package worker

import (
	"context"
	"testing"
	"time"

	"switchyard/store"
	"switchyard/store/storetest"
)

// A run longer than the bound on writing its records is still recorded as
// finished: each record write has its own bound, counted from the write.
func TestARunLongerThanTheRecordBoundIsRecordedFinished(t *testing.T) {
	st, _ := storetest.New(t)
	rdb, prefix := storetest.Redis(t, "worker")
	old := recordTimeout
	recordTimeout = 200 * time.Millisecond
	t.Cleanup(func() { recordTimeout = old })
	job := Job{Name: "slow", Every: time.Hour, Run: func(context.Context) (string, error) {
		time.Sleep(3 * recordTimeout)
		return "done slowly", nil
	}}
	r := New(Options{Redis: rdb, Prefix: prefix, Instance: "w", LeaseTTL: 5 * time.Second, Runs: st}, job)
	if ran, err := r.Check(context.Background(), "slow"); !ran || err != nil {
		t.Fatalf("Check = %v, %v", ran, err)
	}
	rs, err := st.JobRuns(context.Background(), "slow", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Outcome != store.JobOK || rs[0].Message != "done slowly" || !rs[0].FinishedAt.Valid {
		t.Fatalf("runs %+v, want one finished run", rs)
	}
	if ran, _ := r.Check(context.Background(), "slow"); ran {
		t.Fatal("the tick ran again: it was not marked done")
	}
}
