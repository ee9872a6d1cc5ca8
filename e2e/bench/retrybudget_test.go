//go:build bench

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// The retry budget under a vendor outage (issue 17): the same outage at
// BENCH_OUTAGE_RATE req/s (default 500), once through a route group with
// the retry budget off and once with the default budget (20 % of first
// attempts, at least 3/s, over 10 s), printing the upstream attempts per
// caller request of each. Every call of the vendor fails (HTTP 500) and
// the chain has three candidates. The deployments' breakers are set never
// to open, so the figures isolate the budget: a real breaker would cut the
// storm after its window too, but only per instance and only once it has
// seen enough failures, which a vendor failing under its threshold never
// gives it.
//
// Run alone: go test -tags bench -run TestRetryBudgetOutage -v ./e2e/bench/
// (BENCH_BIN: the directory holding the switchyard and fakeupstream binaries).

func TestRetryBudgetOutage(t *testing.T) {
	bin := os.Getenv("BENCH_BIN")
	if bin == "" {
		bin = "../../bin"
	}
	outRate := rbEnvInt("BENCH_OUTAGE_RATE", 500)
	outPhase := rbEnvDur("BENCH_OUTAGE_PHASE", 6*time.Second)

	fakeAddr := rbFreeAddr(t)
	rbStart(t, filepath.Join(bin, "fakeupstream"), nil, "-addr", fakeAddr)
	rbWaitOK(t, "http://"+fakeAddr+"/_fake/stats")

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
	must := func(_ int64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	pid, err := st.CreateProvider(ctx, config.Provider{Name: "fake", Protocol: config.ProtocolOpenAI, BaseURL: "http://" + fakeAddr + "/v1", Enabled: true, TimeoutMS: 30000})
	must(pid, err)
	if _, err := st.AddProviderKey(ctx, pid, "", "sk-bench-outage-key-0001"); err != nil {
		t.Fatal(err)
	}
	// Each phase has deployments of its own: the first phase leaves its
	// deployments marked down on the health board, and a second phase
	// sharing them would measure that state instead of the budget.
	never := &config.BreakerSettings{Window: 1_000_000, MinCalls: 1_000_000}
	chains := map[string][]config.Candidate{}
	keys := map[string]string{}
	for _, name := range []string{"storm", "budgeted"} {
		for i := 1; i <= 3; i++ {
			code := fmt.Sprintf("%s-m%d", name, i)
			mid, err := st.CreateLogicModel(ctx, config.LogicModel{Code: code, Kind: config.KindChat})
			must(mid, err)
			must(st.CreateDeployment(ctx, mid, config.Deployment{Provider: "fake", UpstreamModel: "outage-" + code, Weight: 100, Enabled: true, Breaker: never}))
			chains[name] = append(chains[name], config.Candidate{LogicModel: code, Priority: i, Weight: 100})
		}
		g := config.RouteGroup{Name: name}
		if name == "storm" {
			g.RetryBudget = &config.RetryBudget{Off: true}
		}
		must(st.CreateRouteGroup(ctx, g))
		cid, err := st.CreateCaller(ctx, config.Caller{Name: name + "-app", RouteGroup: name, PriorityClass: config.ClassInteractive, Enabled: true})
		must(cid, err)
		k, _, err := st.CreateCallerKey(ctx, name+"-app", "bench", "bench")
		if err != nil {
			t.Fatal(err)
		}
		keys[name] = k
	}
	snap, _, _ := st.Draft(ctx)
	for _, g := range snap.RouteGroups {
		for _, tr := range g.Tiers {
			for _, c := range chains[g.Name] {
				must(st.AddCandidate(ctx, tr.ID, c))
			}
		}
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "bench", Message: "outage", Check: func(config.Snapshot) config.Result { return config.Result{} }}); err != nil {
		t.Fatal(err)
	}
	gwAddr := rbFreeAddr(t)
	rbStart(t, filepath.Join(bin, "switchyard"), []string{
		"SWITCHYARD_ADDR=" + gwAddr, "SWITCHYARD_DATABASE_URL=" + dsn, "SWITCHYARD_SECRET_KEY=" + storetest.TestKey,
		"SWITCHYARD_ADMIN_PASSWORD=bench-password-1", "SWITCHYARD_SPILL_DIR=" + t.TempDir(), "SWITCHYARD_LOG_LEVEL=error",
		// Health probes would find the outage and mark the deployments down,
		// so that later requests skip them without a call: the figure is the
		// budget's alone.
		"SWITCHYARD_PROBE_INTERVAL=1h",
		"SWITCHYARD_REDIS_URL=" + rbRedisURL(), fmt.Sprintf("SWITCHYARD_REDIS_PREFIX=sybench%d", time.Now().UnixNano()),
	})
	rbWaitOK(t, "http://"+gwAddr+"/healthz")
	url := "http://" + gwAddr + "/v1/chat/completions"
	const body = `{"model":"fast","messages":[{"role":"user","content":"outage"}]}`
	for _, caller := range []string{"storm", "budgeted"} { // both serving once the configuration is loaded
		for i := 0; ; i++ {
			if ok, _ := rbSend(url, keys[caller], body); ok == 200 {
				break
			}
			if i > 100 {
				t.Fatalf("the gateway does not serve %s", caller)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	req, _ := http.NewRequest(http.MethodPut, "http://"+fakeAddr+"/_fake/rules", strings.NewReader(`[{"fault":{"status":500}}]`))
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode >= 300 {
		t.Fatalf("set the outage: %v %v", err, res)
	}
	type result struct {
		requests, upstream, stopped int64
	}
	run := func(caller string) result {
		before := rbUpstream(t, fakeAddr)
		var n, stopped atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for i := 0; time.Duration(i)*time.Second/time.Duration(outRate) < outPhase; i++ {
			time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(outRate))))
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, code := rbSend(url, keys[caller], body)
				if status == 0 {
					return
				}
				n.Add(1)
				if code == "retry_budget_exhausted" {
					stopped.Add(1)
				}
			}()
		}
		wg.Wait()
		return result{n.Load(), rbUpstream(t, fakeAddr) - before, stopped.Load()}
	}
	storm := run("storm")
	budgeted := run("budgeted")
	per := func(r result) float64 { return float64(r.upstream) / float64(max(r.requests, 1)) }
	report := &strings.Builder{}
	fmt.Fprintf(report, "\n=== Retry budget: vendor outage (every call fails), %d req/s for %v, a chain of 3 candidates ===\n", outRate, outPhase)
	fmt.Fprintf(report, "without the retry budget  %d requests, %d upstream attempts: %.2f attempts per caller request\n", storm.requests, storm.upstream, per(storm))
	fmt.Fprintf(report, "with the default budget   %d requests, %d upstream attempts: %.2f attempts per caller request (%d answered 503 retry_budget_exhausted)\n",
		budgeted.requests, budgeted.upstream, per(budgeted), budgeted.stopped)
	fmt.Fprintf(report, "ratio                     %.2fx the upstream load without the budget (retries %.0f%% vs %.0f%% of first attempts)\n",
		per(storm)/per(budgeted), 100*(per(storm)-1), 100*(per(budgeted)-1))
	fmt.Print(report.String())
	if out := os.Getenv("BENCH_REPORT"); out != "" {
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, _ = f.WriteString(report.String())
			_ = f.Close()
		}
	}
}

var rbClient = &http.Client{Transport: &http.Transport{MaxIdleConns: 2048, MaxIdleConnsPerHost: 2048, IdleConnTimeout: time.Minute}, Timeout: 30 * time.Second}

// rbSend posts body and returns the status and the error code, if any.
func rbSend(url, key, body string) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := rbClient.Do(req)
	if err != nil {
		return 0, ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	return res.StatusCode, e.Error.Code
}

// rbUpstream is the fake vendor's request count.
func rbUpstream(t *testing.T, addr string) int64 {
	res, err := http.Get("http://" + addr + "/_fake/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var s struct {
		Requests int64 `json:"requests"`
	}
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s.Requests
}

func rbFreeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func rbStart(t *testing.T, bin string, env []string, args ...string) {
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
}

func rbWaitOK(t *testing.T, url string) {
	for range 300 {
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

func rbRedisURL() string {
	if v := os.Getenv("SWITCHYARD_TEST_REDIS_URL"); v != "" {
		return v
	}
	return "redis://127.0.0.1:6379/0"
}

func rbEnvInt(k string, d int) int {
	var v int
	if _, err := fmt.Sscan(os.Getenv(k), &v); err == nil && v > 0 {
		return v
	}
	return d
}

func rbEnvDur(k string, d time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return d
}
