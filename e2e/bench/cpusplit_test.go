//go:build bench

package bench

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Where the machine's CPU goes while one path is saturated: every process
// that takes part (the server under test, the fake vendor, PostgreSQL,
// Redis, the load driver) is read from /proc before and after a window in
// the middle of a wrk run, and its share is reported per request served.

// cores is how many CPUs the processes share.
var cores = runtime.NumCPU()

// cpuGroup names a set of processes: by pid, or by command name.
type cpuGroup struct {
	name string
	pid  int    // 0: match comm
	comm string // the process name in /proc/<pid>/comm
}

// procSnapshot is the CPU ticks of every process.
type procSnapshot map[int]procTicks

type procTicks struct {
	comm  string
	ticks int64
}

func snapshotProcs() procSnapshot {
	s := procSnapshot{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(d + "/comm")
		if err != nil {
			continue
		}
		s[pid] = procTicks{comm: strings.TrimSpace(string(comm)), ticks: cpuTicks(pid)}
	}
	return s
}

// cpuSplit is each group's CPU per request over a window.
type cpuSplit struct {
	perReq []time.Duration // in the order of the groups
	groups []cpuGroup
	budget time.Duration // what two cores give one request at this rate
}

// split turns two snapshots taken window apart, while rps requests a
// second were served, into each group's CPU per request. A process that
// exited in between counts what it used until its last reading.
func split(before, after procSnapshot, window time.Duration, rps float64, groups []cpuGroup) cpuSplit {
	out := cpuSplit{groups: groups, perReq: make([]time.Duration, len(groups))}
	served := rps * window.Seconds()
	if served <= 0 {
		return out
	}
	out.budget = time.Duration(float64(time.Duration(cores)*window) / served)
	for pid, a := range after {
		used := a.ticks - before[pid].ticks
		if used <= 0 {
			continue
		}
		for i, g := range groups {
			if (g.pid != 0 && g.pid == pid) || (g.pid == 0 && g.comm == a.comm) {
				out.perReq[i] += time.Duration(float64(time.Duration(used)*clockTick) / served)
				break
			}
		}
	}
	return out
}

func (c cpuSplit) String() string {
	var b strings.Builder
	var sum time.Duration
	for i, g := range c.groups {
		if i > 0 {
			b.WriteString(" | ")
		}
		fmt.Fprintf(&b, "%s %.0f µs", g.name, float64(c.perReq[i].Nanoseconds())/1000)
		sum += c.perReq[i]
	}
	fmt.Fprintf(&b, " (together %.0f of the %.0f µs the machine's %d cores have per request at this rate)", float64(sum.Nanoseconds())/1000, float64(c.budget.Nanoseconds())/1000, cores)
	return b.String()
}

func (c cpuSplit) total() (t time.Duration) {
	for _, v := range c.perReq {
		t += v
	}
	return t
}

// medianSplit is the split whose total is the median of several rounds'.
func medianSplit(s []cpuSplit) cpuSplit {
	if len(s) == 0 {
		return cpuSplit{}
	}
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b cpuSplit) int { return cmp.Compare(a.total(), b.total()) })
	return s[len(s)/2]
}

// wrkSplit runs wrk like wrk() and reads the CPU split over the middle of
// the run (a second in from each end).
func wrkSplit(t *testing.T, tg target, body string, conns int, d time.Duration, groups []cpuGroup) (float64, int, cpuSplit) {
	t.Helper()
	window := d - 2*time.Second
	if window < time.Second {
		window = d / 2
	}
	snaps := make(chan [2]procSnapshot, 1)
	go func() {
		time.Sleep((d - window) / 2)
		a := snapshotProcs()
		time.Sleep(window)
		snaps <- [2]procSnapshot{a, snapshotProcs()}
	}()
	rps, failed := wrk(t, tg, body, conns, d)
	s := <-snaps
	return rps, failed, split(s[0], s[1], window, rps, groups)
}
