package calllog

import (
	"context"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/record"
)

// The degraded column round-trips, and ladder_stats counts the retry
// budget's retries and refusals and the ladder's answers per group × tier.
func TestLadderStats(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	h0 := time.Date(2026, 4, 2, 9, 0, 0, 0, time.UTC)
	if err := EnsurePartitions(ctx, db, h0, 1); err != nil {
		t.Fatal(err)
	}
	var recs []Record
	add := func(at time.Duration, group string, tier config.TierName, status record.Status, code, degraded string, retries int) {
		r := Record{At: h0.Add(at), RequestID: record.NewRequestIDAt(h0.Add(at)), RouteGroup: group, Tier: tier,
			Status: status, ErrorCode: code, Degraded: degraded, Retries: retries, HTTPStatus: 200}
		if err := normalize(&r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	add(time.Minute, "default", "fast", StatusOK, "", "", 0)
	add(2*time.Minute, "default", "fast", StatusOK, "", "", 2)
	add(3*time.Minute, "default", "fast", StatusUpstreamError, "retry_budget_exhausted", "static", 1)
	add(4*time.Minute, "default", "fast", StatusUpstreamError, "retry_budget_exhausted", "", 1)
	add(5*time.Minute, "default", "fast", StatusUpstreamError, "upstream_error", "cached", 3)
	add(6*time.Minute, "default", "standard", StatusOK, "", "step_down", 0)
	add(7*time.Minute, "default", "fast", StatusRejected, "rate_limited", "", 0) // refused by us: not counted
	add(70*time.Minute, "other", "deep", StatusOK, "", "", 1)
	if _, err := insertBatch(ctx, db, recs); err != nil {
		t.Fatal(err)
	}
	// Replaying the batch counts nothing twice.
	if _, err := insertBatch(ctx, db, recs); err != nil {
		t.Fatal(err)
	}
	pts, err := LadderSeries(ctx, db, LadderQuery{From: h0, To: h0.Add(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	want := []LadderPoint{
		{Time: h0, Group: "default", Tier: "fast", Requests: 5, Retries: 7, Exhausted: 2, Cached: 1, Static: 1},
		{Time: h0, Group: "default", Tier: "standard", Requests: 1, StepDown: 1},
		{Time: h0.Add(time.Hour), Group: "other", Tier: "deep", Requests: 1, Retries: 1},
	}
	if len(pts) != len(want) {
		t.Fatalf("points %+v", pts)
	}
	for i := range want {
		if pts[i] != want[i] {
			t.Errorf("point %d = %+v, want %+v", i, pts[i], want[i])
		}
	}
	var degraded string
	if err := db.QueryRowContext(ctx, `SELECT degraded FROM call_logs WHERE request_id=$1`, recs[2].RequestID).Scan(&degraded); err != nil || degraded != "static" {
		t.Fatalf("degraded column: %q %v", degraded, err)
	}
	got, err := Get(ctx, db, recs[4].RequestID, recs[4].At)
	if err != nil || got.Degraded != "cached" {
		t.Fatalf("read back: %+v %v", got.Degraded, err)
	}
}
