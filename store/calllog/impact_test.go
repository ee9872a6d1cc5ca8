package calllog

import (
	"context"
	"testing"
	"time"

	"switchyard/routing"
	"switchyard/routing/record"
)

// TestShapesGroupTheWindowInSQL writes a day of requests and reads them
// back as distinct shapes with counts and token sums; rows outside the
// window, without a caller or a model, and idempotent replays are left out.
func TestShapesGroupTheWindowInSQL(t *testing.T) {
	t.Parallel()
	db, _ := newTestDB(t)
	ctx := context.Background()
	now := time.Now().UTC()
	if err := EnsurePartitions(ctx, db, now.Add(-48*time.Hour), 3); err != nil {
		t.Fatal(err)
	}
	var recs []Record
	add := func(at time.Time, callerID int64, model string, needs record.Needs, status record.Status, prompt *int64, mut ...func(*Record)) {
		r := Record{At: at, RequestID: record.NewRequestIDAt(at), Caller: "app", RequestedModel: model, Needs: needs,
			Status: status, PromptTokens: prompt, CompletionTokens: prompt}
		if callerID != 0 {
			r.CallerID = &callerID
		}
		for _, m := range mut {
			m(&r)
		}
		if err := normalize(&r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	in := now.Add(-time.Hour)
	for i := range 30 {
		add(in.Add(time.Duration(i)*time.Second), 1, "deep", 0, StatusOK, new(int64(100)))
	}
	add(in, 1, "deep", 0, StatusUpstreamError, nil)
	add(in, 1, "deep", 0, StatusRejected, nil)
	for i := range 5 {
		add(in.Add(time.Duration(i)*time.Second), 1, "fast", record.NeedVision, StatusOK, new(int64(10)), func(r *Record) { r.Stream, r.Fields = true, 1<<16 })
	}
	add(now.Add(-30*time.Hour), 1, "deep", 0, StatusOK, new(int64(1)))                             // outside the window
	add(in, 0, "", 0, StatusRejected, nil)                                                         // no caller (bad key)
	add(in, 1, "", 0, StatusRejected, nil)                                                         // no model (bad body)
	add(in, 1, "deep", 0, StatusOK, new(int64(7)), func(r *Record) { r.IdempotencyReplay = true }) // a replay routes nothing
	if _, err := insertBatch(ctx, db, recs); err != nil {
		t.Fatal(err)
	}
	shapes, truncated, err := Shapes(ctx, db, now.Add(-24*time.Hour), now)
	if err != nil || truncated {
		t.Fatalf("Shapes: %v (truncated %v)", err, truncated)
	}
	want := []routing.TrafficShape{
		{CallerID: 1, Caller: "app", Model: "deep", Requests: 32, Served: 30, Usage: 30, PromptTokens: 3000, CompletionTokens: 3000},
		{CallerID: 1, Caller: "app", Model: "fast", Stream: true, Needs: record.NeedVision, Fields: 1 << 16, Requests: 5, Served: 5, Usage: 5, PromptTokens: 50, CompletionTokens: 50},
	}
	if len(shapes) != len(want) {
		t.Fatalf("shapes %+v", shapes)
	}
	for i := range want {
		if shapes[i] != want[i] {
			t.Errorf("shape %d = %+v, want %+v", i, shapes[i], want[i])
		}
	}
}
