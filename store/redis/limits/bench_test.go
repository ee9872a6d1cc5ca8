package limits

import (
	"context"
	"testing"
)

var benchLimits = Limits{RPM: 1e9, TPM: 1e12, DailyTokens: 1e15, MonthlyBudgetMicros: 1e15}

// BenchmarkCheck is one Check with all four limits set: one Redis round trip.
func BenchmarkCheck(b *testing.B) {
	rdb, prefix := testRedis(b)
	l := testLimiter(b, rdb, prefix, Options{})
	ctx := context.Background()
	req := Request{CallerID: 1, Tier: "standard", Limits: benchLimits, EstimatedTokens: 500}
	b.ReportAllocs()
	for b.Loop() {
		d, err := l.Check(ctx, req)
		if err != nil || !d.Allowed || d.Local {
			b.Fatalf("%+v %v", d, err)
		}
	}
}

// BenchmarkCheckParallel spreads Checks of 64 callers over GOMAXPROCS
// goroutines, as concurrent requests do.
func BenchmarkCheckParallel(b *testing.B) { benchParallel(b, false) }

// BenchmarkCheckAndSettle is a request's whole limit traffic: the check,
// and the settlement that rides the next check's round trip.
func BenchmarkCheckAndSettle(b *testing.B) {
	rdb, prefix := testRedis(b)
	l := testLimiter(b, rdb, prefix, Options{})
	ctx := context.Background()
	req := Request{CallerID: 1, Tier: "standard", Limits: benchLimits, EstimatedTokens: 500}
	b.ReportAllocs()
	for b.Loop() {
		d, err := l.Check(ctx, req)
		if err != nil || !d.Allowed {
			b.Fatalf("%+v %v", d, err)
		}
		if err := l.Settle(ctx, d.Reservation, 400, 1234); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckAndSettleParallel is the limit traffic of concurrent
// requests of 64 callers: checks and settlements share pipelines, and a
// caller's settlement shares a script run with its next check when both
// wait for the same pipeline.
func BenchmarkCheckAndSettleParallel(b *testing.B) { benchParallel(b, true) }

// benchParallel checks (and settles) for 64 callers from GOMAXPROCS×8
// goroutines.
func benchParallel(b *testing.B, settle bool) {
	rdb, prefix := testRedis(b)
	l := testLimiter(b, rdb, prefix, Options{})
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := int64(0)
		for pb.Next() {
			i++
			d, err := l.Check(ctx, Request{CallerID: i % 64, Tier: "standard", Limits: benchLimits, EstimatedTokens: 500})
			if err != nil || !d.Allowed || d.Local {
				b.Fatalf("%+v %v", d, err)
			}
			if !settle {
				continue
			}
			if err := l.Settle(ctx, d.Reservation, 400, 1234); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCheckLocal is the fallback's cost per decision.
func BenchmarkCheckLocal(b *testing.B) {
	l := localLimiter(b)
	ctx := context.Background()
	req := Request{CallerID: 1, Tier: "standard", Limits: benchLimits, EstimatedTokens: 500}
	l.Check(ctx, req) // the one attempt at the refused Redis
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := l.Check(ctx, req); !d.Allowed || !d.Local {
			b.Fatalf("%+v", d)
		}
	}
}

// BenchmarkPingBaseline is a bare PING on the same client: the round trip
// that BenchmarkCheck should cost little more than.
func BenchmarkPingBaseline(b *testing.B) {
	rdb, _ := testRedis(b)
	ctx := context.Background()
	for b.Loop() {
		if err := rdb.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
}
