//go:build bench

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFirstContent splits a stream's first content added by the gateway
// into what holding the answer costs and what the gateway's own work
// costs. The gateway sends nothing — not even its status line — before the
// vendor's first content, so that until then it can still switch vendors
// unseen; a caller then reads head and content together instead of having
// the head in hand while the content is on its way. Three floors beside the
// direct path: the plain Go proxy forwarding as it comes, the same proxy
// holding the answer as the gateway does (-hold), and the gateway, driven
// in turn at the bench's stream rate, BENCH_ROUNDS rounds, medians:
//
//	BENCH_BIN=$PWD/bin go test -tags bench -run TestFirstContent -v ./e2e/bench/
func TestFirstContent(t *testing.T) {
	bin := benchBin()
	w := newBenchWorld(t, bin)
	upstream := "http://" + w.fakeAddr
	plainAddr, holdAddr, gwAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	plain := startProc(t, filepath.Join(bin, "plainproxy"), nil, "-addr", plainAddr, "-upstream", upstream)
	hold := startProc(t, filepath.Join(bin, "plainproxy"), nil, "-addr", holdAddr, "-upstream", upstream, "-hold")
	gw := startProc(t, filepath.Join(bin, "switchyard"), gatewayEnv(t, gwAddr, w.dsn))
	waitOK(t, "http://"+gwAddr+"/healthz")
	direct := target{name: "direct", url: w.fakeBase + "/chat/completions", key: "sk-bench-key-0000-xxxx"}
	targets := []target{
		direct,
		{name: "plain proxy", url: "http://" + plainAddr + "/v1/chat/completions", key: direct.key},
		{name: "plain proxy, holding", url: "http://" + holdAddr + "/v1/chat/completions", key: direct.key},
		{name: "gateway", url: "http://" + gwAddr + "/v1/chat/completions", key: w.b.callerKey},
	}
	pids := []int{0, plain.Process.Pid, hold.Process.Pid, gw.Process.Pid}
	// A second gateway to compare with: another build (BENCH_GATEWAY_B_BIN)
	// or other settings (BENCH_GATEWAY_B_ENV, space-separated).
	bBin, bEnv := os.Getenv("BENCH_GATEWAY_B_BIN"), os.Getenv("BENCH_GATEWAY_B_ENV")
	if bBin != "" || bEnv != "" {
		if bBin == "" {
			bBin = filepath.Join(bin, "switchyard")
		}
		bAddr := freeAddr(t)
		gwB := startProc(t, bBin, append(gatewayEnv(t, bAddr, w.dsn), strings.Fields(bEnv)...))
		waitOK(t, "http://"+bAddr+"/healthz")
		targets = append(targets, target{name: "gateway B", url: "http://" + bAddr + "/v1/chat/completions", key: w.b.callerKey})
		pids = append(pids, gwB.Process.Pid)
	}
	for _, tg := range targets {
		waitServes(t, tg)
		loadgen(t, bin, tg, streamBody, rate/5, time.Second, true) // warm its connections
	}
	fb, fc, fc99 := make([][]time.Duration, len(targets)), make([][]time.Duration, len(targets)), make([][]time.Duration, len(targets))
	cpu := make([][]time.Duration, len(targets))
	for range rounds {
		for i, tg := range targets {
			c0 := cpuTicks(pids[i])
			r := loadgen(t, bin, tg, streamBody, rate/5, phase/2, true)
			if pids[i] != 0 && r.OK > 0 {
				cpu[i] = append(cpu[i], time.Duration(cpuTicks(pids[i])-c0)*clockTick/time.Duration(r.OK))
			}
			if r.Errors > 0 {
				t.Errorf("%s: %d errors", tg.name, r.Errors)
			}
			fb[i] = append(fb[i], us(r.FirstByte.P50US))
			fc[i] = append(fc[i], us(r.Content.P50US))
			fc99[i] = append(fc99[i], us(r.Content.P99US))
		}
	}
	fmt.Fprintf(os.Stdout, "\n=== stream first content at %d req/s (%d rounds interleaved, medians; the fake vendor pauses 2 ms between the role chunk and the first content) ===\n", rate/5, rounds)
	d := median(fc[0])
	for i, tg := range targets {
		fmt.Fprintf(os.Stdout, "%-22s first byte %s | first content %s, added %s (p99 added %s) | CPU per stream %s\n",
			tg.name, ms(median(fb[i])), ms(median(fc[i])), ms(median(fc[i])-d), ms(median(fc99[i])-median(fc99[0])), ms(median(cpu[i])))
	}
	plainFC, holdFC, gwFC := median(fc[1]), median(fc[2]), median(fc[3])
	fmt.Fprintf(os.Stdout, "holding the answer until the first content costs %s (holding proxy − plain proxy); the gateway adds %s over the plain proxy, %s over the holding one\n",
		ms(holdFC-plainFC), ms(gwFC-plainFC), ms(gwFC-holdFC))
}
