//go:build bench

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Profile-guided optimisation: `make pgo` runs TestProfileForPGO and merges
// the profiles it writes into cmd/switchyard/default.pgo, which `go build`
// of the server uses. TestBinariesAB measures two builds of the server
// against each other with the plain Go proxy as the floor.

// messagesBody is an Anthropic Messages request for the bench's caller.
const messagesBody = `{"model":"standard","max_tokens":64,"messages":[{"role":"user","content":"benchmark"}]}`

// pgoPhase is one part of the profile's mix: a load on the gateway for the
// length of one CPU profile.
type pgoPhase struct {
	name string
	load func(t *testing.T, d time.Duration)
}

// TestProfileForPGO brings up the fake vendor and a gateway with the
// bench's world and configuration (as TestGatewayVersusDirect and TestHold
// do) and takes one CPU profile of the gateway per phase of a
// representative mix: non-stream chat at the fixed rate, the same saturated
// by wrk, streams, and Anthropic Messages translated to the OpenAI vendor.
// The profiles go to BENCH_PGO_DIR (a temporary directory without it), one
// file per phase, BENCH_PGO_PHASE long each (15 s).
func TestProfileForPGO(t *testing.T) {
	dir := os.Getenv("BENCH_PGO_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	d := envDur("BENCH_PGO_PHASE", 15*time.Second)
	bin := benchBin()
	w := newBenchWorld(t, bin)
	gwBase, pprofAddr := startProfiledGateway(t, bin, w)
	chat := target{name: "gateway", url: gwBase + "/v1/chat/completions", key: w.b.callerKey}
	messages := target{name: "gateway-messages", url: gwBase + "/v1/messages", key: w.b.callerKey}
	waitServes(t, chat)
	for _, p := range []pgoPhase{
		{"chat-rate", func(t *testing.T, d time.Duration) {
			wantOK(t, "chat", loadgen(t, bin, chat, bodyChat, rate, d, false))
		}},
		{"chat-saturated", func(t *testing.T, d time.Duration) {
			if _, failed := wrk(t, chat, bodyChat, workers, d); failed > 0 {
				t.Errorf("wrk: %d requests failed", failed)
			}
		}},
		{"stream", func(t *testing.T, d time.Duration) {
			wantOK(t, "streams", loadgen(t, bin, chat, streamBody, rate/5, d, true))
		}},
		{"messages", func(t *testing.T, d time.Duration) {
			wantOK(t, "messages", loadgen(t, bin, messages, messagesBody, rate/2, d, false))
		}},
	} {
		file := filepath.Join(dir, p.name+".pprof")
		profileDuring(t, pprofAddr, file, d, p.load)
		if fi, err := os.Stat(file); err != nil || fi.Size() == 0 {
			t.Fatalf("phase %s: no profile written (%v)", p.name, err)
		}
		fmt.Printf("PGO profile %s: %s\n", p.name, file)
	}
}

// startProfiledGateway starts a gateway on w with a pprof listener and
// returns its base URL and the listener's address.
func startProfiledGateway(t *testing.T, bin string, w benchWorld) (string, string) {
	gwAddr, pprofAddr := freeAddr(t), freeAddr(t)
	env := append(gatewayEnv(t, gwAddr, w.dsn), "SWITCHYARD_PPROF_ADDR="+pprofAddr)
	startProc(t, filepath.Join(bin, "switchyard"), env)
	waitOK(t, "http://"+gwAddr+"/healthz")
	return "http://" + gwAddr, pprofAddr
}

// profileDuring runs load for d plus a second before and after, and writes
// a CPU profile of the d in the middle to file.
func profileDuring(t *testing.T, pprofAddr, file string, d time.Duration, load func(*testing.T, time.Duration)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		load(t, d+2*time.Second)
	}()
	time.Sleep(time.Second)
	fetchProfile(t, pprofAddr, fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(1, int(d.Seconds()))), file)
	<-done
}

// wantOK fails the test when a phase's requests were not all answered 200:
// a profile of refusals would optimise the wrong path.
func wantOK(t *testing.T, what string, r loadResult) {
	if r.Errors > 0 || r.OK == 0 {
		t.Errorf("%s: %d answered, %d failed %v (-1: no answer in time)", what, r.OK, r.Errors, r.Statuses)
	}
}

// abSide is one build of the server under comparison.
type abSide struct {
	name, bin string
	pid       int
	tg        target
}

// TestBinariesAB measures two builds of the server — the switchyard
// binaries in BENCH_BIN_A and BENCH_BIN_B (for instance built with
// -pgo=off and with default.pgo) — side by side in front of one fake
// vendor, with the plain Go proxy as the floor: latency at the fixed rate
// and maximum throughput with wrk, plus each gateway's CPU per request,
// rounds interleaved (A, B, plain), medians. The drivers and the fake
// vendor come from BENCH_BIN.
//
//	BENCH_BIN_A=/tmp/off BENCH_BIN_B=/tmp/pgo BENCH_BIN=$PWD/bin go test -tags bench -run TestBinariesAB -v ./e2e/bench/
func TestBinariesAB(t *testing.T) {
	a, b := os.Getenv("BENCH_BIN_A"), os.Getenv("BENCH_BIN_B")
	if a == "" || b == "" {
		t.Fatal("BENCH_BIN_A and BENCH_BIN_B name the two directories holding the switchyard binaries to compare")
	}
	bin := benchBin()
	w := newBenchWorld(t, bin)
	sides := []*abSide{{name: "A", bin: a}, {name: "B", bin: b}}
	for _, s := range sides {
		addr := freeAddr(t)
		proc := startProc(t, filepath.Join(s.bin, "switchyard"), gatewayEnv(t, addr, w.dsn))
		waitOK(t, "http://"+addr+"/healthz")
		s.pid, s.tg = proc.Process.Pid, target{name: "gateway-" + s.name, url: "http://" + addr + "/v1/chat/completions", key: w.b.callerKey}
		waitServes(t, s.tg)
	}
	plainAddr := freeAddr(t)
	plainProc := startProc(t, filepath.Join(bin, "plainproxy"), nil, "-addr", plainAddr, "-upstream", "http://"+w.fakeAddr)
	plain := &abSide{name: "plain", pid: plainProc.Process.Pid, tg: target{name: "plain", url: "http://" + plainAddr + "/v1/chat/completions", key: "sk-bench-key-0000-xxxx"}}
	waitServes(t, plain.tg)
	all := append(sides, plain)
	for _, s := range all { // warm every path
		loadgen(t, bin, s.tg, bodyChat, rate, 2*time.Second, false)
	}
	m := abRounds(t, bin, all)
	report := &strings.Builder{}
	fmt.Fprintf(report, "\n=== A %s vs B %s, plain Go proxy as the floor (%d rounds interleaved, medians) ===\n", a, b, rounds)
	for _, s := range all {
		fmt.Fprintf(report, "%-6s p50 %s p99 %s @%d req/s (CPU %.0f µs/req) | max %.0f req/s (wrk -c%d; CPU %.0f µs/req)\n", s.name,
			ms(median(m.p50[s.name])), ms(median(m.p99[s.name])), rate, median(m.cpuRate[s.name]), median(m.rps[s.name]), workers, median(m.cpuSat[s.name]))
	}
	pl := plain.name
	for _, s := range sides {
		fmt.Fprintf(report, "%s vs plain: throughput %.3f× | added p50 %+.3f ms\n", s.name,
			median(m.rps[s.name])/median(m.rps[pl]), float64((median(m.p50[s.name])-median(m.p50[pl])).Microseconds())/1000)
	}
	fmt.Fprintf(report, "B/A: throughput %.3f× (within a round %s) | CPU per request saturated %.3f× (within a round %s), at %d req/s %.3f× (%s) | p50 %+.3f ms\n",
		median(m.rps["B"])/median(m.rps["A"]), spread(m.ratio(m.rps)), median(m.cpuSat["B"])/median(m.cpuSat["A"]), spread(m.ratio(m.cpuSat)),
		rate, median(m.cpuRate["B"])/median(m.cpuRate["A"]), spread(m.ratio(m.cpuRate)), float64((median(m.p50["B"])-median(m.p50["A"])).Microseconds())/1000)
	fmt.Print(report.String())
}

// abSamples are each side's rounds, by side name.
type abSamples struct {
	p50, p99             map[string][]time.Duration
	rps, cpuRate, cpuSat map[string][]float64
}

// ratio is B's figure over A's, round by round.
func (m abSamples) ratio(v map[string][]float64) []float64 {
	r := make([]float64, len(v["A"]))
	for i := range r {
		r[i] = v["B"][i] / v["A"][i]
	}
	return r
}

// spread prints the median of ratios and their range.
func spread(r []float64) string {
	if len(r) == 0 {
		return "-"
	}
	return fmt.Sprintf("median %.3f, %.3f–%.3f", median(r), slices.Min(r), slices.Max(r))
}

// abRounds runs the fixed-rate and the saturated phases on every side,
// interleaved, rounds times; every other round takes the sides in the
// reverse order, so neither always follows the other.
func abRounds(t *testing.T, bin string, all []*abSide) abSamples {
	m := abSamples{p50: map[string][]time.Duration{}, p99: map[string][]time.Duration{},
		rps: map[string][]float64{}, cpuRate: map[string][]float64{}, cpuSat: map[string][]float64{}}
	for i := range rounds {
		order := slices.Clone(all)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, s := range order {
			c0 := cpuTicks(s.pid)
			r := loadgen(t, bin, s.tg, bodyChat, rate, phase, false)
			wantOK(t, s.name, r)
			m.cpuRate[s.name] = append(m.cpuRate[s.name], cpuPerReqUS(cpuTicks(s.pid)-c0, float64(r.OK)))
			m.p50[s.name], m.p99[s.name] = append(m.p50[s.name], us(r.Latency.P50US)), append(m.p99[s.name], us(r.Latency.P99US))
		}
		for _, s := range order {
			c0 := cpuTicks(s.pid)
			rps, failed := wrk(t, s.tg, bodyChat, workers, throughputPhase)
			if failed > 0 {
				t.Errorf("%s: %d requests failed under wrk", s.name, failed)
			}
			m.cpuSat[s.name] = append(m.cpuSat[s.name], cpuPerReqUS(cpuTicks(s.pid)-c0, rps*throughputPhase.Seconds()))
			m.rps[s.name] = append(m.rps[s.name], rps)
		}
	}
	return m
}

// cpuPerReqUS is CPU ticks spread over served requests, in microseconds.
func cpuPerReqUS(ticks int64, served float64) float64 {
	if served <= 0 {
		return 0
	}
	return float64(time.Duration(ticks)*clockTick) / served / 1000
}
