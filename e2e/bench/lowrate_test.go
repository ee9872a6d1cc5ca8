//go:build bench

package bench

import (
	"fmt"
	"io"
	"testing"
	"time"
)

// lowRate is the fixed rate of the low-rate CPU figure: at it each request
// pays the scheduler's wake-ups and the background work (call-log batches,
// limit settlements) with few others to share them.
const lowRate = 200

// lowRateFigures are the CPU per request at lowRate of the gateway and of
// the plain Go proxy, its floor (medians of the rounds).
type lowRateFigures struct{ gateway, plain time.Duration }

// lowRateCPU drives the gateway and the plain proxy in turn at lowRate,
// rounds times, and reads each process's CPU time around its phase.
func lowRateCPU(t *testing.T, bin string, gateway target, gatewayPid int, plain floor) lowRateFigures {
	var g, p []time.Duration
	for range rounds {
		g = append(g, cpuPerRequest(t, bin, gateway, gatewayPid))
		p = append(p, cpuPerRequest(t, bin, plain.target, plain.cpu.pid))
	}
	return lowRateFigures{gateway: median(g), plain: median(p)}
}

// cpuPerRequest is pid's CPU time over one phase of tg at lowRate, divided
// by the requests served.
func cpuPerRequest(t *testing.T, bin string, tg target, pid int) time.Duration {
	c0 := cpuTicks(pid)
	r := loadgen(t, bin, tg, bodyChat, lowRate, phase, false)
	used := cpuTicks(pid) - c0
	if r.OK == 0 {
		t.Errorf("%s served nothing at %d req/s (%d errors)", tg.name, lowRate, r.Errors)
		return 0
	}
	return time.Duration(used) * clockTick / time.Duration(r.OK)
}

func (f lowRateFigures) print(w io.Writer) {
	ratio := 0.0
	if f.plain > 0 {
		ratio = float64(f.gateway) / float64(f.plain)
	}
	fmt.Fprintf(w, "CPU per request at %d req/s: gateway %.3f ms | plain Go proxy %.3f ms (the floor) | gateway/plain %.2f×\n",
		lowRate, f.gateway.Seconds()*1000, f.plain.Seconds()*1000, ratio)
}
