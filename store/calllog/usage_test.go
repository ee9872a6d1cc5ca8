package calllog

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"switchyard/routing/config"
	"switchyard/routing/record"
)

// Usage counts the local month (a call ten minutes after local midnight
// of the 1st is in it, one twenty minutes before is not), days in the
// limiter's zone, the last hour per minute, and a tenant as the sum of its
// callers.
func TestUsageOf(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 7, 10, 30, 0, 0, time.UTC) // 11:30 in Berlin
	if err := EnsurePartitions(ctx, db, time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC), 28); err != nil {
		t.Fatal(err)
	}
	var recs []Record
	add := func(at time.Time, caller, model string, status record.Status, prompt, completion, cost int64, cur string) {
		r := Record{At: at, RequestID: record.NewRequestIDAt(at), Caller: caller, Tier: config.TierName("fast"), LogicModel: model,
			Status: status, LatencyMS: 100, PromptTokens: &prompt, CompletionTokens: &completion, CostMicros: &cost, Currency: cur}
		if status == StatusRejected {
			r.PromptTokens, r.CompletionTokens, r.CostMicros, r.Currency = nil, nil, nil, ""
		}
		if err := normalize(&r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	add(time.Date(2026, 11, 10, 12, 0, 0, 0, time.UTC), "web", "m1", StatusOK, 1000, 1000, 9_000_000, "USD")    // last month
	add(time.Date(2026, 11, 30, 22, 40, 0, 0, time.UTC), "web", "m1", StatusOK, 7, 3, 1_000_000, "USD")         // Nov 30, 23:40 local
	add(time.Date(2026, 11, 30, 23, 10, 0, 0, time.UTC), "web", "m1", StatusOK, 100, 50, 2_000_000, "USD")      // Dec 1, 00:10 local
	add(time.Date(2026, 12, 7, 10, 5, 0, 0, time.UTC), "web", "m2", StatusOK, 10, 5, 500_000, "USD")            // this hour
	add(time.Date(2026, 12, 7, 10, 5, 30, 0, time.UTC), "web", "m2", StatusOK, 1, 1, 300, "CNY")                // another currency
	add(time.Date(2026, 12, 7, 10, 6, 0, 0, time.UTC), "web", "", StatusRejected, 0, 0, 0, "")                  // refused by a limit
	add(time.Date(2026, 12, 7, 10, 10, 0, 0, time.UTC), "batch", "m1", StatusOK, 20, 20, 7_000_000, "USD")      // the tenant's other caller
	add(time.Date(2026, 12, 7, 10, 11, 0, 0, time.UTC), "elsewhere", "m1", StatusOK, 20, 20, 50_000_000, "USD") // another tenant
	if _, err := insertBatch(ctx, db, recs); err != nil {
		t.Fatal(err)
	}

	u, err := UsageOf(ctx, db, UsageQuery{Callers: []string{"web"}, Now: now, Location: berlin})
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC); !u.MonthStart.Equal(want) || !u.MonthEnd.Equal(time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("month = %s … %s, want the Berlin month from %s", u.MonthStart.UTC(), u.MonthEnd.UTC(), want)
	}
	if diff := cmp.Diff(map[string]int64{"USD": 2_500_000, "CNY": 300}, u.MonthSpend); diff != "" {
		t.Errorf("month spend (-want +got):\n%s", diff)
	}
	wantModels := []ModelUsage{
		{LogicModel: "m1", Requests: 1, PromptTokens: 100, CompletionTokens: 50, CostMicros: map[string]int64{"USD": 2_000_000}},
		{LogicModel: "m2", Requests: 2, PromptTokens: 11, CompletionTokens: 6, CostMicros: map[string]int64{"USD": 500_000, "CNY": 300}},
	}
	if diff := cmp.Diff(wantModels, u.Models); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
	day := func(d int, m time.Month) time.Time { return time.Date(2026, m, d, 0, 0, 0, 0, berlin) }
	wantDays := []DayTokens{
		{Day: day(10, time.November), LogicModel: "m1", PromptTokens: 1000, CompletionTokens: 1000},
		{Day: day(30, time.November), LogicModel: "m1", PromptTokens: 7, CompletionTokens: 3},
		{Day: day(1, time.December), LogicModel: "m1", PromptTokens: 100, CompletionTokens: 50},
		{Day: day(7, time.December), LogicModel: "m2", PromptTokens: 11, CompletionTokens: 6},
	}
	if diff := cmp.Diff(wantDays, u.Days, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("days (-want +got):\n%s", diff)
	}
	if !u.DaysFrom.Equal(day(8, time.November)) {
		t.Errorf("days from %s, want 30 days with today: Nov 8", u.DaysFrom)
	}
	minute := func(m int) time.Time { return time.Date(2026, 12, 7, 10, m, 0, 0, time.UTC) }
	wantMinutes := []MinuteRequests{{Minute: minute(5), Tier: "fast", Requests: 2}, {Minute: minute(6), Tier: "fast", Requests: 1, Rejected: 1}}
	if diff := cmp.Diff(wantMinutes, u.Minutes); diff != "" {
		t.Errorf("minutes (-want +got):\n%s", diff)
	}

	tenant, err := UsageOf(ctx, db, UsageQuery{Callers: []string{"web", "batch"}, Now: now, Location: berlin})
	if err != nil {
		t.Fatal(err)
	}
	if tenant.MonthSpend["USD"] != 9_500_000 || len(tenant.Models) != 2 || tenant.Models[0].LogicModel != "m1" ||
		tenant.Models[0].Requests != 2 || tenant.Models[0].CostMicros["USD"] != 9_000_000 || len(tenant.Minutes) != 3 {
		t.Errorf("tenant usage = %+v, want web's and batch's, not elsewhere's", tenant)
	}

	none, err := UsageOf(ctx, db, UsageQuery{Now: now, Location: berlin})
	if err != nil || len(none.MonthSpend) != 0 || none.Models != nil || none.Days != nil {
		t.Errorf("no callers = %+v, %v; want nothing", none, err)
	}
}

func TestProjection(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	end := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) // 744 hours
	for _, tc := range []struct {
		name  string
		spent int64
		now   time.Time
		want  int64
	}{
		{"a quarter of the month", 1_000_000, start.Add(186 * time.Hour), 4_000_000},
		{"rounded to the micro-unit", 2_500_000, start.Add(155*time.Hour + 30*time.Minute), 11_961_415},
		{"at the month's start", 5, start, 5},
		{"after the month", 7, end.Add(time.Hour), 7},
		{"saturates", 9_000_000_000_000_000_000, start.Add(time.Hour), 9_223_372_036_854_775_807},
		{"nothing spent", 0, start.Add(100 * time.Hour), 0},
	} {
		if got := Projection(tc.spent, start, end, tc.now); got != tc.want {
			t.Errorf("%s: projection = %d, want %d", tc.name, got, tc.want)
		}
	}
}
