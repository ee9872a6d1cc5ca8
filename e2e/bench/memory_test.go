//go:build bench

package bench

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The streams scenario's RSS targets: with BENCH_STREAMS (1,000) streams
// open, and BENCH_AFTER_STREAMS (a minute) after they closed.
const (
	rssOpenTargetMB   = 80
	rssClosedTargetMB = 50
)

// agentPromptKB is the prompt make bench also holds the streams with (no
// target): coding agents send tens to hundreds of KB, and a stream's
// request is held as long as its answer lasts. BENCH_PROMPT_KB gives
// TestStreamsMemory's streams one of any size.
const agentPromptKB = 64

// TestStreamsMemory is the streams part of make bench on its own, several
// rounds against one gateway, with the runtime's own accounting beside the
// RSS: what holds memory with the streams open, right after they close and
// BENCH_AFTER_STREAMS later (to find what keeps it, and check it is given
// back round after round):
//
//	BENCH_MEM_ROUNDS=3 BENCH_BIN=$PWD/bin go test -tags bench -run TestStreamsMemory -v ./e2e/bench/
//	BENCH_PROMPT_KB=64 BENCH_MEM_ROUNDS=1 BENCH_BIN=$PWD/bin go test -tags bench -run TestStreamsMemory -v ./e2e/bench/
//	BENCH_STEADY=1 BENCH_MEM_ROUNDS=0 BENCH_BIN=$PWD/bin go test -tags bench -run TestStreamsMemory -v ./e2e/bench/
func TestStreamsMemory(t *testing.T) {
	bin := benchBin()
	w := newBenchWorld(t, bin)
	plainAddr := freeAddr(t) // the floor: the plain Go proxy holding the same streams
	plain := startProc(t, filepath.Join(bin, "plainproxy"), nil, "-addr", plainAddr, "-upstream", "http://"+w.fakeAddr)
	plainTarget := target{name: "plain", url: "http://" + plainAddr + "/v1/chat/completions", key: w.b.callerKey}
	waitServes(t, plainTarget)
	var plainOpen string
	promptKB := envInt("BENCH_PROMPT_KB", 0)
	holdStreamsAt(t, w.fakeAddr, plainTarget, plain.Process.Pid, streamsEnd{promptKB: promptKB, atOpen: func() { plainOpen = rssReading(plain.Process.Pid) }})
	fmt.Printf("plain Go proxy, %d open  %s\n", streams, plainOpen)
	addr := freeAddr(t)
	env := append(gatewayEnv(t, addr, w.dsn), "SWITCHYARD_MAX_INFLIGHT=0")
	profiles, pprofAddr := os.Getenv("BENCH_PROFILE_DIR"), "" // heap and goroutine profiles of each round
	if profiles != "" {
		pprofAddr = freeAddr(t)
		env = append(env, "SWITCHYARD_PPROF_ADDR="+pprofAddr)
	}
	profile := func(path, name string) {
		if profiles != "" {
			fetchProfile(t, pprofAddr, path, filepath.Join(profiles, name))
		}
	}
	gw := startProc(t, filepath.Join(bin, "switchyard"), env)
	base := "http://" + addr
	waitOK(t, base+"/healthz")
	gateway := target{name: "gateway-streams", url: base + "/v1/chat/completions", key: w.b.callerKey}
	waitServes(t, gateway)
	pid := gw.Process.Pid
	fmt.Printf("idle                 %s\n", memReading(pid, base))
	for round := 1; round <= envInt("BENCH_MEM_ROUNDS", 3); round++ {
		var open string
		end := streamsEnd{vendorEnds: round%2 == 0, promptKB: promptKB, atOpen: func() {
			open = memReading(pid, base)
			profile("/debug/pprof/heap?gc=1", fmt.Sprintf("heap-open-%d.pprof", round))
			profile("/debug/pprof/goroutine", fmt.Sprintf("goroutine-open-%d.pprof", round))
		}}
		_, n := holdStreamsAt(t, w.fakeAddr, gateway, pid, end)
		how := "the callers left"
		if end.vendorEnds {
			how = "the vendor ended them"
		}
		fmt.Printf("round %d, %d open    %s\n", round, n, open)
		fmt.Printf("round %d: %s\n", round, how)
		closed := time.Now()
		fmt.Printf("round %d, closed     %s\n", round, memReading(pid, base))
		for _, at := range []time.Duration{afterStreams / 6, afterStreams / 2, afterStreams} {
			time.Sleep(time.Until(closed.Add(at)))
			fmt.Printf("round %d, +%-9s   %s\n", round, at, memReading(pid, base))
		}
		profile("/debug/pprof/heap?gc=1", fmt.Sprintf("heap-after-%d.pprof", round))
	}
	if os.Getenv("BENCH_STEADY") != "" { // steady traffic of agent-sized prompts, as make bench runs it
		fmt.Printf("steady traffic of %d KB prompts: plain Go proxy %s | gateway %s\n", agentPromptKB,
			steadyStreams(t, bin, w.fakeAddr, plainTarget, plain.Process.Pid), steadyStreams(t, bin, w.fakeAddr, gateway, pid))
	}
}

// memReading is the process's RSS and what the Go runtime says of its
// memory (from the gateway's /metrics): heap in use, stacks, heap idle and
// released to the OS, the next collection's goal, and goroutines.
func memReading(pid int, base string) string {
	m := goMetrics(base)
	mb := func(k string) float64 { return m[k] / (1 << 20) }
	return fmt.Sprintf("%s | heap in use %.1f, stacks %.1f, heap idle %.1f (released %.1f), next GC %.1f MB | goroutines %.0f",
		rssReading(pid), mb("go_memstats_heap_inuse_bytes"), mb("go_memstats_stack_inuse_bytes"),
		mb("go_memstats_heap_idle_bytes"), mb("go_memstats_heap_released_bytes"), mb("go_memstats_next_gc_bytes"), m["go_goroutines"])
}

// rssReading is the process's RSS, and how much of it is anonymous memory
// and how much the binary's (and libraries') file pages.
func rssReading(pid int) string {
	return fmt.Sprintf("RSS %.1f MB (anon %.1f, file %.1f)",
		float64(rssKB(pid))/1024, float64(statusKB(pid, "RssAnon"))/1024, float64(statusKB(pid, "RssFile"))/1024)
}

func goMetrics(base string) map[string]float64 {
	out := map[string]float64{}
	res, err := http.Get(base + "/metrics")
	if err != nil {
		return out
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && strings.HasPrefix(f[0], "go_") {
			v, _ := strconv.ParseFloat(f[1], 64)
			out[f[0]] = v
		}
	}
	return out
}
