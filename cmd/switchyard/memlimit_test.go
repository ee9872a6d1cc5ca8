package main

import (
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// A container limit becomes a runtime limit at 90 % of it; GOMEMLIMIT set
// by the operator wins; no limit leaves the runtime without one.
func TestMemoryLimitFollowsTheContainer(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Setenv("GOMEMLIMIT", "")

	gib, ratio := float64(1<<30), memLimitRatio
	want := int64(gib * ratio)
	if got := setMemoryLimit(log, memlimit.Limit(1<<30)); got != want || debug.SetMemoryLimit(-1) != got {
		t.Errorf("1 GiB container: limit %d, runtime %d; want %d", got, debug.SetMemoryLimit(-1), want)
	}
	if got := setMemoryLimit(log, func() (uint64, error) { return 0, memlimit.ErrNoLimit }); got != math.MaxInt64 {
		t.Errorf("no container limit: runtime limit %d, want none", got)
	}
	debug.SetMemoryLimit(200 << 20)
	t.Setenv("GOMEMLIMIT", "200MiB")
	if got := setMemoryLimit(log, memlimit.Limit(1<<30)); got != 200<<20 {
		t.Errorf("GOMEMLIMIT=200MiB: limit %d, want the operator's", got)
	}
}
