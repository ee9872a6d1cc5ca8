package store_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"switchyard/store"
	"switchyard/store/storetest"
)

func TestProbesAndHealthEvents(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Microsecond)

	var probes []store.Probe
	for i := range 12 {
		probes = append(probes, store.Probe{DeploymentID: 1, At: t0.Add(time.Duration(i) * time.Minute), Outcome: store.ProbeOK, LatencyMS: int64(10 + i)})
	}
	probes = append(probes, store.Probe{DeploymentID: 2, At: t0, Outcome: store.ProbeFailed, LatencyMS: 5, Class: "server", HTTPStatus: 500,
		Message: "server (HTTP 500): " + strings.Repeat("x", 900)})
	if err := st.AddProbes(ctx, probes); err != nil {
		t.Fatal(err)
	}
	if err := st.AddProbes(ctx, nil); err != nil {
		t.Fatal(err)
	}
	got, err := st.RecentProbes(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got[1]) != 10 || got[1][0].LatencyMS != 21 || !got[1][0].At.Equal(t0.Add(11*time.Minute)) {
		t.Fatalf("deployment 1: %d probes, newest %+v", len(got[1]), got[1][0])
	}
	if p := got[2]; len(p) != 1 || p[0].Outcome != store.ProbeFailed || p[0].Class != "server" || p[0].HTTPStatus != 500 || len(p[0].Message) > 510 {
		t.Fatalf("deployment 2: %+v", p)
	}

	events := []store.HealthEvent{
		{DeploymentID: 2, At: t0, From: "healthy", To: "down", Score: sql.NullFloat64{Float64: 0.25, Valid: true}, Samples: 4, Reason: "score 25%"},
		{DeploymentID: 2, At: t0.Add(time.Minute), From: "down", To: "degraded", Reason: "2 probes in a row succeeded"},
	}
	if err := st.AddHealthEvents(ctx, events); err != nil {
		t.Fatal(err)
	}
	ev, err := st.HealthEvents(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if e := ev[2]; len(e) != 2 || e[0].To != "degraded" || e[0].Score.Valid || e[1].Score.Float64 != 0.25 || e[1].Samples != 4 {
		t.Fatalf("events %+v", e)
	}
	if err := st.AddHealthEvents(ctx, []store.HealthEvent{{DeploymentID: 1, At: t0, From: "fine", To: "down"}}); err == nil {
		t.Fatal("an unknown state was stored")
	}

	n, err := st.PruneProbes(ctx, t0.Add(5*time.Minute))
	if err != nil || n != 6 {
		t.Fatalf("pruned %d, %v; want 6", n, err)
	}
}
