package retrybudget

import (
	"log/slog"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/store/storetest"
)

// First is on every request's path: no network, no allocation.
func BenchmarkFirst(b *testing.B) {
	rdb, prefix := storetest.TestRedis(b, "retrybudget")
	bud := New(rdb, Options{Prefix: prefix, Logger: slog.New(slog.DiscardHandler)})
	b.Cleanup(bud.Close)
	s := config.RBudget{Percent: 20, MinPerS: 3, Window: 10 * time.Second}
	bud.First(key, s)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bud.First(key, s)
		}
	})
}
