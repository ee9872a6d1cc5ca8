package main

import (
	"log/slog"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// memLimitRatio is the share of the container's memory limit the Go
// runtime aims to stay under: the rest is headroom for memory the
// collector does not count (stacks, the runtime's own, cgo).
const memLimitRatio = 0.9

// setMemoryLimit gives the runtime a soft memory limit of memLimitRatio of
// the memory limit provider reports (the container's cgroup limit), so the
// collector works harder as the process nears it instead of the kernel
// killing it. GOMEMLIMIT, when set, wins; without a limit nothing changes.
// It returns the limit in force.
func setMemoryLimit(log *slog.Logger, provider memlimit.Provider) int64 {
	limit, err := memlimit.Set(memlimit.WithRatio(memLimitRatio), memlimit.WithProvider(provider), memlimit.WithLogger(log))
	if err != nil {
		log.Warn("memory limit: the container's could not be read; the runtime has none", "error", err)
	}
	return limit
}
