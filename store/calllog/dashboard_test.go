package calllog

import (
	"context"
	"math"
	"regexp"
	"slices"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/record"
)

func TestSeriesAndCosts(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	h0 := time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC)
	if err := EnsurePartitions(ctx, db, h0, 1); err != nil {
		t.Fatal(err)
	}
	var recs []Record
	add := func(at time.Time, caller string, tier config.TierName, model string, status record.Status, latency int, prompt *int64, cost *int64, cur string) {
		r := Record{At: at, RequestID: record.NewRequestIDAt(at), Caller: caller, Tier: tier, LogicModel: model,
			Status: status, LatencyMS: latency, PromptTokens: prompt, CompletionTokens: prompt, CostMicros: cost, Currency: cur}
		if err := normalize(&r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	// Hour 10: 100 ok calls of "web" at 120..219 ms (bucket 100-200 and
	// 200-300), one upstream error, one rejection at 1 ms.
	for i := range 100 {
		add(h0.Add(time.Duration(i)*time.Second), "web", "fast", "qwen3-max", StatusOK, 120+i, new(int64(10)), new(int64(10_000)), "CNY")
	}
	add(h0.Add(30*time.Minute), "web", "fast", "qwen3-max", StatusUpstreamError, 5000, nil, nil, "")
	add(h0.Add(31*time.Minute), "web", "fast", "", StatusRejected, 1, nil, nil, "")
	// Hour 11: "batch" on two currencies.
	add(h0.Add(70*time.Minute), "batch", "deep", "gpt-4.1", StatusOK, 20000, new(int64(1000)), new(int64(500_000)), "USD")
	add(h0.Add(71*time.Minute), "batch", "deep", "qwen3-max", StatusClientCancelled, 800, nil, new(int64(250_000)), "CNY")
	if _, err := insertBatch(ctx, db, recs); err != nil {
		t.Fatal(err)
	}

	points, err := Series(ctx, db, SeriesQuery{From: h0, To: h0.Add(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 2 {
		t.Fatalf("points = %d, want 2: %+v", len(points), points)
	}
	p := points[0]
	if !p.Time.Equal(h0) || p.Requests != 102 || p.Errors != 1 || p.Rejected != 1 || p.PromptTokens != 1000 {
		t.Errorf("hour 10 = %+v", p)
	}
	if p.CostMicros["CNY"] != 1_000_000 || len(p.CostMicros) != 1 {
		t.Errorf("hour 10 cost = %v, want CNY 1000000 micros", p.CostMicros)
	}
	// 101 non-rejected latencies: 80 in [100,200), 20 in [200,300), 1 at 5000.
	if p.P50MS < 100 || p.P50MS > 200 || p.P95MS < 200 || p.P95MS > 300 {
		t.Errorf("hour 10 p50 %.1f p95 %.1f, want within [100,200) and [200,300)", p.P50MS, p.P95MS)
	}
	q := points[1]
	if q.Requests != 2 || q.Cancelled != 1 || q.CostMicros["USD"] != 500_000 || q.CostMicros["CNY"] != 250_000 {
		t.Errorf("hour 11 = %+v", q)
	}

	byCaller, err := Series(ctx, db, SeriesQuery{From: h0, To: h0.Add(2 * time.Hour), Step: 24 * time.Hour, GroupBy: GroupCaller})
	if err != nil {
		t.Fatal(err)
	}
	var groups []string
	for _, p := range byCaller {
		groups = append(groups, p.Group)
		if !p.Time.Equal(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("daily point at %s", p.Time)
		}
	}
	if !slices.Equal(groups, []string{"batch", "web"}) {
		t.Errorf("groups = %v", groups)
	}
	filtered, err := Series(ctx, db, SeriesQuery{From: h0, To: h0.Add(2 * time.Hour), Tier: "deep"})
	if err != nil || len(filtered) != 1 || filtered[0].Requests != 2 {
		t.Errorf("tier filter = %+v, %v", filtered, err)
	}
	if _, err := Series(ctx, db, SeriesQuery{GroupBy: "provider; drop table x"}); err == nil {
		t.Error("unknown grouping accepted")
	}

	costs, err := Costs(ctx, db, h0, h0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ caller, model, cur string }
	got := map[key]CostRow{}
	for _, c := range costs {
		got[key{c.Caller, c.LogicModel, c.Currency}] = c
		if !c.Day.Equal(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("cost row day %s", c.Day)
		}
	}
	if c := got[key{"web", "qwen3-max", "CNY"}]; c.Requests != 100 || c.PromptTokens != 1000 || c.CostMicros != 1_000_000 {
		t.Errorf("web CNY = %+v", c)
	}
	if c := got[key{"web", "qwen3-max", ""}]; c.Requests != 1 || c.Errors != 1 {
		t.Errorf("web error row = %+v", c)
	}
	if c := got[key{"web", "", ""}]; c.Requests != 1 || c.Tier != "fast" {
		t.Errorf("web rejected row = %+v", c)
	}
	if c := got[key{"batch", "gpt-4.1", "USD"}]; c.Requests != 1 || c.CostMicros != 500_000 {
		t.Errorf("batch USD = %+v", c)
	}
	if none, err := Costs(ctx, db, h0.AddDate(0, 0, 1), h0.AddDate(0, 0, 2)); err != nil || len(none) != 0 {
		t.Errorf("next day costs = %+v, %v", none, err)
	}
}

func TestHistogramQuantile(t *testing.T) {
	hist := func(pairs ...int64) []int64 { // bucket, count, bucket, count...
		h := make([]int64, latencyBuckets)
		for i := 0; i < len(pairs); i += 2 {
			h[pairs[i]] = pairs[i+1]
		}
		return h
	}
	tests := []struct {
		name string
		h    []int64
		q    float64
		want float64
	}{
		{"empty", hist(), 0.5, 0},
		{"one bucket, median mid-bucket", hist(4, 10), 0.5, 150},   // [100,200)
		{"first bucket", hist(0, 4), 0.5, 5},                       // [0,10)
		{"spread", hist(1, 50, 3, 50), 0.5, 25},                    // all of [10,25)
		{"p95 into second", hist(1, 50, 3, 50), 0.95, 50 + 50*0.9}, // 45 of 50 into [50,100)
		{"overflow bucket", hist(int64(latencyBuckets-1), 3), 0.5, 180000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HistogramQuantile(tt.h, tt.q); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRequestID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	base := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	var ids []string
	for i := range 20000 {
		at := base.Add(time.Duration(i) * 300 * time.Microsecond)
		id := record.NewRequestIDAt(at)
		if !re.MatchString(id) {
			t.Fatalf("id %q is not a UUIDv7", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		ids = append(ids, id)
		got, ok := record.RequestIDTime(id)
		if !ok || !got.Equal(at.Truncate(time.Millisecond)) {
			t.Fatalf("record.RequestIDTime(%s) = %v, %t; want %v", id, got, ok, at.Truncate(time.Millisecond))
		}
	}
	if !slices.IsSorted(ids) {
		t.Error("ids minted at increasing times do not sort in time order")
	}
	if id := record.NewRequestID(); !re.MatchString(id) {
		t.Errorf("NewRequestID = %q", id)
	}
	for _, bad := range []string{"", "caller-supplied-id", "0190f2c4-0000-4000-8000-000000000000", "zzzzzzzz-zzzz-7zzz-8zzz-zzzzzzzzzzzz"} {
		if _, ok := record.RequestIDTime(bad); ok {
			t.Errorf("record.RequestIDTime(%q) ok", bad)
		}
	}
}

func TestLatencyBucket(t *testing.T) {
	for _, tt := range []struct{ ms, want int }{
		{-5, 0}, {0, 0}, {9, 0}, {10, 1}, {24, 1}, {25, 2}, {999, 8}, {1000, 9},
		{179999, 23}, {180000, 24}, {1 << 30, 24},
	} {
		if got := latencyBucket(tt.ms); got != tt.want {
			t.Errorf("latencyBucket(%d) = %d, want %d", tt.ms, got, tt.want)
		}
	}
}

// Roll-up costs are bigint micro-units that saturate instead of failing the
// batch: a roll-up already near the bigint maximum absorbs another call.
func TestCostRollupsSaturate(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	at := time.Date(2026, 4, 2, 10, 0, 0, 0, time.UTC)
	if err := EnsurePartitions(ctx, db, at, 1); err != nil {
		t.Fatal(err)
	}
	rec := func(i int, cost int64) Record {
		t0 := at.Add(time.Duration(i) * time.Second)
		r := Record{At: t0, RequestID: record.NewRequestIDAt(t0), Caller: "big", Tier: "fast",
			LogicModel: "m", Status: StatusOK, CostMicros: &cost, Currency: "USD"}
		if err := normalize(&r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r0 := rec(0, math.MaxInt64) // clamped to MaxCallCostMicros
	if *r0.CostMicros != MaxCallCostMicros {
		t.Fatalf("cost not clamped: %d", *r0.CostMicros)
	}
	if _, err := insertBatch(ctx, db, []Record{r0}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE cost_rollups SET cost_micros = 9223372036854775000 WHERE caller = 'big';
		UPDATE call_stats SET cost_micros = 9223372036854775000 WHERE caller = 'big'`); err != nil {
		t.Fatal(err)
	}
	if _, err := insertBatch(ctx, db, []Record{rec(1, 5000)}); err != nil {
		t.Fatalf("a roll-up near the maximum must saturate, not fail: %v", err)
	}
	costs, err := Costs(ctx, db, at, at.Add(time.Hour))
	if err != nil || len(costs) != 1 || costs[0].CostMicros != math.MaxInt64 {
		t.Fatalf("costs = %+v, %v", costs, err)
	}
	pts, err := Series(ctx, db, SeriesQuery{From: at, To: at.Add(time.Hour)})
	if err != nil || len(pts) != 1 || pts[0].CostMicros["USD"] != math.MaxInt64 {
		t.Fatalf("series = %+v, %v", pts, err)
	}
	if addMicros(math.MaxInt64-1, 2) != math.MaxInt64 || addMicros(1, 2) != 3 {
		t.Error("addMicros does not saturate")
	}
}

// TestQueueSeries: rows that waited in a class's queue, or that the queue
// refused, add up per hour and class in queue_stats with the calls; a
// replayed batch counts once; rows that never queued add nothing.
func TestQueueSeries(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	h0 := time.Date(2026, 4, 2, 10, 0, 0, 0, time.UTC)
	if err := EnsurePartitions(ctx, db, h0, 1); err != nil {
		t.Fatal(err)
	}
	var recs []Record
	add := func(at time.Time, class config.PriorityClass, status record.Status, code string, wait *int) {
		r := Record{At: at, RequestID: record.NewRequestIDAt(at), Caller: "c-" + string(class), Tier: "fast", Status: status,
			ErrorCode: code, PriorityClass: class, QueueWaitMS: wait, HTTPStatus: 200}
		if err := normalize(&r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	for i, w := range []int{10, 20, 900} {
		add(h0.Add(time.Duration(i)*time.Minute), "interactive", StatusOK, "", new(w))
	}
	add(h0.Add(5*time.Minute), "batch", StatusOK, "", new(5000))
	add(h0.Add(6*time.Minute), "batch", StatusRejected, "queue_full", nil)
	add(h0.Add(7*time.Minute), "batch", StatusRejected, "queue_shed", new(300))
	add(h0.Add(8*time.Minute), "normal", StatusOK, "", nil)                    // never queued
	add(h0.Add(65*time.Minute), "normal", StatusOK, "", new(0))                // queued for under a millisecond
	add(h0.Add(66*time.Minute), "normal", StatusRejected, "rate_limited", nil) // refused by a limit, not a queue
	for range 2 {                                                              // the second insert is a replay
		if _, err := insertBatch(ctx, db, recs); err != nil {
			t.Fatal(err)
		}
	}
	points, err := QueueSeries(ctx, db, h0, h0.Add(2*time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		hour            int
		class           string
		queued, refused int64
		waitSum         int64
	}
	var got []row
	for _, p := range points {
		got = append(got, row{int(p.Time.Sub(h0).Hours()), p.Class, p.Queued, p.Refused, p.WaitSumMS})
	}
	want := []row{{0, "batch", 2, 2, 5300}, {0, "interactive", 3, 0, 930}, {1, "normal", 1, 0, 0}}
	if !slices.Equal(got, want) {
		t.Fatalf("queue series = %+v, want %+v", got, want)
	}
	inter := points[1]
	if inter.P95MS < 750 || inter.P95MS > 1000 {
		t.Errorf("interactive wait p95 = %.0f ms, want in the 750-1000 bucket", inter.P95MS)
	}
	if d := inter.MeanDepth; math.Abs(d-930.0/3600000) > 1e-9 {
		t.Errorf("interactive mean depth = %g, want 930 ms / 1 h", d)
	}
	days, err := QueueSeries(ctx, db, h0.Truncate(24*time.Hour), h0.Add(24*time.Hour), 24*time.Hour)
	if err != nil || len(days) != 3 || days[2].Class != "normal" || days[2].Queued != 1 {
		t.Fatalf("daily queue series = %+v, %v", days, err)
	}
	if _, err := QueueSeries(ctx, db, h0, h0.Add(time.Hour), time.Minute); err == nil {
		t.Fatal("a minute step was accepted")
	}
	// The row keeps its class and wait.
	page, err := Search(ctx, db, Filter{From: h0, To: h0.Add(time.Hour), Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	for _, r := range page.Rows {
		if r.PriorityClass == "batch" && r.QueueWaitMS != nil && *r.QueueWaitMS == 5000 {
			seen++
		}
	}
	if seen != 1 {
		t.Fatalf("the batch row with a 5000 ms wait read back %d times", seen)
	}
}
