package calllog

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkUsage reads one caller's and a ten-caller tenant's usage on the
// search data set (default 100k rows; -rows=1000000 for a million over 30
// days, 50 callers), its call_stats rolled up from the rows as the writer
// would have, with and without call_stats' covering (caller, hour) index:
//
//	go test -run XXX -bench Usage ./store/calllog/ -args -rows=1000000
func BenchmarkUsage(b *testing.B) {
	ctx := context.Background()
	db, _ := benchSearchDB(b, *benchRows)
	var stats int64
	if err := db.QueryRow(`SELECT count(*) FROM call_stats`).Scan(&stats); err != nil {
		b.Fatal(err)
	}
	if stats == 0 {
		if _, err := db.Exec(`
			INSERT INTO call_stats (hour, caller, tier, logic_model, currency, requests, errors, rejected, cancelled,
				prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_micros, latency_sum_ms, latency_hist)
			SELECT date_trunc('hour', at), coalesce(caller, ''), coalesce(tier, ''), coalesce(logic_model, ''), coalesce(currency, ''),
				count(*), count(*) FILTER (WHERE status = 'upstream_error'), count(*) FILTER (WHERE status = 'rejected'),
				count(*) FILTER (WHERE status = 'client_cancelled'), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
				coalesce(sum(cached_tokens), 0), coalesce(sum(reasoning_tokens), 0), coalesce(sum(cost_micros), 0), sum(latency_ms),
				array_fill(0::bigint, ARRAY[25])
			FROM call_logs GROUP BY 1, 2, 3, 4, 5`); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(`VACUUM (ANALYZE) call_stats`); err != nil {
			b.Fatal(err)
		}
		if err := db.QueryRow(`SELECT count(*) FROM call_stats`).Scan(&stats); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d call_stats rows", stats)
	end := benchBase.AddDate(0, 0, benchDays).Add(-time.Minute)
	tenant := make([]string, 10)
	for i := range tenant {
		tenant[i] = fmt.Sprintf("caller-%d", i+10)
	}
	run := func(name string, callers []string) {
		b.Run(name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				u, err := UsageOf(ctx, db, UsageQuery{Callers: callers, Now: end})
				if err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
				if len(u.Days) == 0 || len(u.Minutes) == 0 {
					b.Fatalf("no usage for %v: %+v", callers, u)
				}
			}
			reportPercentiles(b, took)
		})
	}
	run("caller", []string{"caller-7"})
	run("tenant_10_callers", tenant)
	if _, err := db.Exec(`DROP INDEX call_stats_caller`); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if _, err := db.Exec(`CREATE INDEX call_stats_caller ON call_stats (caller, hour)
			INCLUDE (logic_model, currency, requests, errors, prompt_tokens, completion_tokens, cost_micros)`); err != nil {
			b.Error(err)
		}
	})
	run("caller_without_index", []string{"caller-7"})
	run("tenant_10_callers_without_index", tenant)
}
