package calllog

import (
	"context"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/record"
)

// outcome_stats counts every request once per minute × route group × tier
// under its outcome — our refusals and 503s as well as the vendors'
// errors — and reads back by minute, hour or day.
func TestOutcomeStats(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	h0 := time.Date(2026, 4, 3, 9, 0, 0, 0, time.UTC)
	if err := EnsurePartitions(ctx, db, h0, 1); err != nil {
		t.Fatal(err)
	}
	var recs []Record
	add := func(at time.Duration, tier config.TierName, status record.Status, code string, httpStatus, latency int) {
		r := Record{At: h0.Add(at), RequestID: record.NewRequestIDAt(h0.Add(at)), RouteGroup: "default", Tier: tier,
			Status: status, ErrorCode: code, HTTPStatus: httpStatus, LatencyMS: latency}
		if err := normalize(&r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	add(10*time.Second, "fast", StatusOK, "", 200, 100)
	add(20*time.Second, "fast", StatusOK, "", 200, 300)
	add(30*time.Second, "deep", StatusRejected, "no_available_model", 503, 1)
	add(40*time.Second, "deep", StatusRejected, "no_available_model", 503, 1)
	add(70*time.Second, "deep", StatusRejected, "rate_limited", 429, 1)
	add(80*time.Second, "fast", StatusUpstreamError, "upstream_error", 502, 900)
	add(90*time.Second, "fast", StatusClientCancelled, "client_cancelled", 499, 50)
	if _, err := insertBatch(ctx, db, recs); err != nil {
		t.Fatal(err)
	}
	if _, err := insertBatch(ctx, db, recs); err != nil { // a replay counts nothing twice
		t.Fatal(err)
	}
	pts, err := OutcomeSeries(ctx, db, OutcomeQuery{From: h0, To: h0.Add(time.Hour), Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		min                  int
		tier, outcome        string
		requests, latencySum int64
	}
	want := []row{
		{0, "deep", "no_available_model", 2, 2},
		{0, "fast", "", 2, 400},
		{1, "deep", "rate_limited", 1, 1},
		{1, "fast", "client_cancelled", 1, 50},
		{1, "fast", "upstream_error", 1, 900},
	}
	if len(pts) != len(want) {
		t.Fatalf("points %+v", pts)
	}
	for i, w := range want {
		p := pts[i]
		if !p.Time.Equal(h0.Add(time.Duration(w.min)*time.Minute)) || p.Group != "default" || p.Tier != w.tier || p.Outcome != w.outcome ||
			p.Requests != w.requests || p.LatencySumMS != w.latencySum {
			t.Errorf("point %d = %+v, want %+v", i, p, w)
		}
	}
	hourly, err := OutcomeSeries(ctx, db, OutcomeQuery{From: h0, To: h0.Add(time.Hour), Step: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(hourly) != 5 || !hourly[0].Time.Equal(h0) || hourly[2].Requests != 2 || hourly[2].Hist[latencyBucket(100)] != 1 {
		t.Fatalf("hourly %+v", hourly)
	}
	if OutcomeOf(404, "") != "http_404" || OutcomeOf(201, "x") != "" {
		t.Fatal("OutcomeOf")
	}
	// The per-minute rows go once older than OutcomeRetention.
	if _, err := DropPartitions(ctx, db, h0.Add(OutcomeRetention+time.Minute), 400*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if pts, _ := OutcomeSeries(ctx, db, OutcomeQuery{From: h0, To: h0.Add(time.Hour), Step: time.Hour}); len(pts) != 3 {
		t.Fatalf("after the first minute ran out of retention: %+v", pts)
	}
	if _, err := DropPartitions(ctx, db, h0.Add(OutcomeRetention+2*time.Minute), 400*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if pts, _ := OutcomeSeries(ctx, db, OutcomeQuery{From: h0, To: h0.Add(time.Hour), Step: time.Hour}); len(pts) != 0 {
		t.Fatalf("after retention: %+v", pts)
	}
}
