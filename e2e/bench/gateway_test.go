//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
)

// Run with `make bench` (or: go test -tags bench -run TestGateway -v -timeout 30m ./bench/).
// Everything is measured in one run against a baseline taken in the same run
// (the fake vendor called directly), because this machine is noisy.

var (
	rate     = envInt("BENCH_RATE", 1000)           // req/s of the fixed-rate phases
	phase    = envDur("BENCH_PHASE", 8*time.Second) // length of each fixed-rate phase
	rounds   = envInt("BENCH_ROUNDS", 2)            // direct/gateway phases alternate this many times
	workers  = envInt("BENCH_WORKERS", 64)          // closed-loop throughput concurrency
	streams  = envInt("BENCH_STREAMS", 1000)        // concurrent streams for the RSS check
	bodyChat = `{"model":"standard","messages":[{"role":"user","content":"benchmark"}]}`
)

func envInt(k string, d int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return d
}

func envDur(k string, d time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return d
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startProc(t *testing.T, bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), out.String())
		}
	})
	return cmd
}

func waitOK(t *testing.T, url string) {
	for i := 0; i < 300; i++ {
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s not ready", url)
}

func rssKB(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "VmRSS:") {
			n, _ := strconv.Atoi(strings.Fields(sc.Text())[1])
			return n
		}
	}
	return 0
}

type target struct {
	name, url, key string
	hdr            map[string]string
}

func (tg target) request(ctx context.Context, body string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tg.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tg.key)
	for k, v := range tg.hdr {
		req.Header.Set(k, v)
	}
	return req
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute}}

// fixedRate sends rate req/s for d (open loop) and returns latencies.
func fixedRate(tg target, rate int, d time.Duration, body string, ttfb bool) ([]time.Duration, int) {
	var mu sync.Mutex
	lat := make([]time.Duration, 0, int(float64(rate)*d.Seconds()))
	var errs atomic.Int64
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= d {
			break
		}
		if w := time.Until(at); w > 0 {
			time.Sleep(w)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			res, err := client.Do(tg.request(context.Background(), body))
			if err != nil {
				errs.Add(1)
				return
			}
			var el time.Duration
			if ttfb {
				buf := make([]byte, 1)
				_, _ = io.ReadFull(res.Body, buf)
				el = time.Since(t0)
				_, _ = io.Copy(io.Discard, res.Body)
			} else {
				_, _ = io.Copy(io.Discard, res.Body)
				el = time.Since(t0)
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				errs.Add(1)
				return
			}
			mu.Lock()
			lat = append(lat, el)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat, int(errs.Load())
}

func pct(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// closedLoop runs n workers as fast as they go for d and returns req/s.
func closedLoop(tg target, n int, d time.Duration) float64 {
	var done atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				res, err := client.Do(tg.request(context.Background(), bodyChat))
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == 200 && ctx.Err() == nil {
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return float64(done.Load()) / d.Seconds()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Microseconds())/1000) }

func TestGatewayVersusDirect(t *testing.T) {
	bin := os.Getenv("BENCH_BIN")
	if bin == "" {
		bin = "../bin"
	}
	fakeAddr := freeAddr(t)
	fake := startProc(t, filepath.Join(bin, "fakeupstream"), nil, "-addr", fakeAddr, "-reply-chunks", "5")
	_ = fake
	waitOK(t, "http://"+fakeAddr+"/_fake/stats")

	// A fresh database with a realistic configuration: limits, breakers and
	// call logging all on.
	dsn := storetest.NewDatabase(t)
	key, _ := secrets.ParseKey(storetest.TestKey)
	sealer, _ := secrets.NewSealer(key)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, sealer)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(); err != nil {
		t.Fatal(err)
	}
	pid, _ := st.CreateProvider(ctx, config.Provider{Name: "fake", Protocol: config.ProtocolOpenAI, BaseURL: "http://" + fakeAddr + "/v1", Enabled: true, TimeoutMS: 30000})
	for i := range 3 {
		if _, err := st.AddProviderKey(ctx, pid, "", fmt.Sprintf("sk-bench-key-%04d-xxxx", i)); err != nil {
			t.Fatal(err)
		}
	}
	mid, _ := st.CreateLogicModel(ctx, config.LogicModel{Code: "small", Kind: config.KindChat})
	if _, err := st.CreateDeployment(ctx, mid, config.Deployment{Provider: "fake", UpstreamModel: "bench-model", Weight: 100, Enabled: true, Prices: config.Prices{InputMicros: config.Unit, OutputMicros: 2 * config.Unit, Currency: "USD"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRouteGroup(ctx, config.RouteGroup{Name: "default"}); err != nil {
		t.Fatal(err)
	}
	snap, _, _ := st.Draft(ctx)
	for _, tr := range snap.RouteGroups[0].Tiers {
		if _, err := st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: "small", Weight: 100}); err != nil {
			t.Fatal(err)
		}
	}
	limits := []config.TierLimit{}
	for _, tn := range config.TierNames {
		limits = append(limits, config.TierLimit{Tier: tn, RPM: 100_000_000, TPM: 1_000_000_000_000, DailyTokens: 1_000_000_000_000})
	}
	cid, _ := st.CreateCaller(ctx, config.Caller{Name: "bench", RouteGroup: "default", PriorityClass: config.ClassInteractive, Enabled: true, Limits: limits, MonthlyBudgetMicros: 1e8 * config.Unit, BudgetCurrency: "USD"})
	bid, _ := st.CreateCaller(ctx, config.Caller{Name: "batch", RouteGroup: "default", PriorityClass: config.ClassBatch, Enabled: true, Limits: limits})
	callerKey, _, _ := st.CreateCallerKey(ctx, cid, "bench")
	batchKey, _, _ := st.CreateCallerKey(ctx, bid, "batch")
	if _, err := st.Publish(ctx, store.PublishInput{Author: "bench", Message: "bench", Check: func(s config.Snapshot) config.Result { return config.Result{} }}); err != nil {
		t.Fatal(err)
	}

	gwAddr := freeAddr(t)
	gw := startProc(t, filepath.Join(bin, "switchyard"), []string{
		"SWITCHYARD_ADDR=" + gwAddr, "SWITCHYARD_DATABASE_URL=" + dsn, "SWITCHYARD_SECRET_KEY=" + storetest.TestKey,
		"SWITCHYARD_ADMIN_PASSWORD=bench-password-1", "SWITCHYARD_SPILL_DIR=" + t.TempDir(), "SWITCHYARD_LOG_LEVEL=warn",
		"SWITCHYARD_REDIS_URL=" + redisURL(), fmt.Sprintf("SWITCHYARD_REDIS_PREFIX=sybench%d", time.Now().UnixNano()),
	})
	waitOK(t, "http://"+gwAddr+"/healthz")
	direct := target{name: "direct", url: "http://" + fakeAddr + "/v1/chat/completions", key: "sk-bench-key-0000-xxxx"}
	gateway := target{name: "gateway", url: "http://" + gwAddr + "/v1/chat/completions", key: callerKey}
	// The gateway must serve before measuring (the config is loaded).
	for i := 0; ; i++ {
		res, err := client.Do(gateway.request(ctx, bodyChat))
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if i > 100 {
			t.Fatalf("gateway does not serve: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	idleRSS := rssKB(gw.Process.Pid)

	// Warm up both paths (connections, caches, JIT-free but GC-warm).
	fixedRate(direct, rate, 2*time.Second, bodyChat, false)
	fixedRate(gateway, rate, 2*time.Second, bodyChat, false)

	var dl, gl []time.Duration
	var gErrs int
	for range rounds {
		l, _ := fixedRate(direct, rate, phase, bodyChat, false)
		dl = append(dl, l...)
		l, e := fixedRate(gateway, rate, phase, bodyChat, false)
		gl = append(gl, l...)
		gErrs += e
	}
	report := &strings.Builder{}
	fmt.Fprintf(report, "\n=== Switchyard gateway vs direct-to-fakeupstream (same run, %d req/s, %d×%v per side) ===\n", rate, rounds, phase)
	fmt.Fprintf(report, "non-stream latency   direct p50 %s p99 %s | gateway p50 %s p99 %s | added p50 %s p99 %s | ratio p50 %.2fx (gateway errors: %d)\n",
		ms(pct(dl, .5)), ms(pct(dl, .99)), ms(pct(gl, .5)), ms(pct(gl, .99)), ms(pct(gl, .5)-pct(dl, .5)), ms(pct(gl, .99)-pct(dl, .99)),
		float64(pct(gl, .5))/float64(pct(dl, .5)), gErrs)

	streamBody := `{"model":"standard","stream":true,"messages":[{"role":"user","content":"benchmark"}]}`
	var ds, gs []time.Duration
	for range rounds {
		l, _ := fixedRate(direct, rate/5, phase/2, streamBody, true)
		ds = append(ds, l...)
		l, _ = fixedRate(gateway, rate/5, phase/2, streamBody, true)
		gs = append(gs, l...)
	}
	fmt.Fprintf(report, "stream first byte    direct p50 %s | gateway p50 %s | added p50 %s (at %d req/s)\n",
		ms(pct(ds, .5)), ms(pct(gs, .5)), ms(pct(gs, .5)-pct(ds, .5)), rate/5)

	dRPS := closedLoop(direct, workers, phase)
	gRPS := closedLoop(gateway, workers, phase)
	fmt.Fprintf(report, "max throughput       direct %.0f req/s | gateway %.0f req/s | ratio gateway/direct %.2f (%d workers, load generator on the same 2 cores)\n",
		dRPS, gRPS, gRPS/dRPS, workers)

	// RSS idle and with many concurrent streams held open by a slow vendor.
	slow := gateway
	slow.hdr = nil
	var open sync.WaitGroup
	var started atomic.Int64
	streamCtx, stopStreams := context.WithCancel(ctx)
	slowBody := `{"model":"standard","stream":true,"messages":[{"role":"user","content":"slow"}]}`
	// The fake vendor paces this model's chunks by rule.
	rule := `[{"model":"bench-model","fault":{"inter_chunk_delay":"6s","reply_chunks":3}}]`
	req, _ := http.NewRequest(http.MethodPut, "http://"+fakeAddr+"/_fake/rules", strings.NewReader(rule))
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode >= 300 {
		t.Fatalf("set slow rule: %v %v", err, res)
	}
	for range streams {
		open.Add(1)
		go func() {
			defer open.Done()
			res, err := client.Do(slow.request(streamCtx, slowBody))
			if err != nil {
				return
			}
			buf := make([]byte, 1)
			if _, err := res.Body.Read(buf); err == nil {
				started.Add(1)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}()
	}
	deadline := time.Now().Add(20 * time.Second)
	for started.Load() < int64(streams) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	streamRSS := rssKB(gw.Process.Pid)
	stopStreams()
	open.Wait()
	req, _ = http.NewRequest(http.MethodDelete, "http://"+fakeAddr+"/_fake/rules", nil)
	http.DefaultClient.Do(req)
	fmt.Fprintf(report, "gateway RSS          idle %.1f MB | with %d concurrent streams open %.1f MB\n", float64(idleRSS)/1024, started.Load(), float64(streamRSS)/1024)

	// Priority: interactive p99 alone, then under a saturating batch load.
	alone, _ := fixedRate(gateway, 50, phase/2, bodyChat, false)
	batch := target{name: "batch", url: gateway.url, key: batchKey}
	stopBatch := make(chan struct{})
	var bwg sync.WaitGroup
	for range workers * 2 {
		bwg.Add(1)
		go func() {
			defer bwg.Done()
			for {
				select {
				case <-stopBatch:
					return
				default:
				}
				res, err := client.Do(batch.request(ctx, bodyChat))
				if err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			}
		}()
	}
	time.Sleep(time.Second)
	loaded, _ := fixedRate(gateway, 50, phase/2, bodyChat, false)
	close(stopBatch)
	bwg.Wait()
	fmt.Fprintf(report, "priority             interactive p99 alone %s | under a saturating batch load (%d batch workers) %s | ratio %.2fx\n",
		ms(pct(alone, .99)), workers*2, ms(pct(loaded, .99)), float64(pct(loaded, .99))/float64(pct(alone, .99)))

	fmt.Print(report.String())
	if out := os.Getenv("BENCH_REPORT"); out != "" {
		_ = os.WriteFile(out, []byte(report.String()), 0o644)
	}
}

func redisURL() string {
	if v := os.Getenv("SWITCHYARD_TEST_REDIS_URL"); v != "" {
		return v
	}
	return "redis://127.0.0.1:6379/0"
}
