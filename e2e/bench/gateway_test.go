//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/config/configtest"
	"switchyard/store"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
)

// TestGatewayVersusDirect is `make bench`: the gateway binary against the
// fake vendor called directly, both driven by the same external drivers in
// the same run, interleaved, several rounds, medians. Limits, breakers and
// call logging are on. The three scenarios (latency at a fixed rate,
// maximum throughput, stream timings) run with the bench's one route group
// and again with a configuration of 500 route groups, 5,000 deployments and
// 500 callers, which is imported, published and rolled back through the
// admin API in between (timed, with the server's peak RSS).
func TestGatewayVersusDirect(t *testing.T) {
	bin := benchBin()
	profiles := os.Getenv("BENCH_PROFILE_DIR") // collect CPU and allocation profiles of the gateway here
	w := newBenchWorld(t, bin)
	fake, fakeAddr, fakeBase, st, b := w.fake, w.fakeAddr, w.fakeBase, w.st, w.b
	// The floors: one net/http hop with nothing else, and nginx, in front
	// of the same vendor.
	plainAddr := freeAddr(t)
	plainProc := startProc(t, filepath.Join(bin, "plainproxy"), nil, "-addr", plainAddr, "-upstream", "http://"+fakeAddr)
	nginxAddr := freeAddr(t)
	nginxOn := startNginx(t, nginxAddr, fakeAddr)

	gwAddr := freeAddr(t)
	env := gatewayEnv(t, gwAddr, w.dsn)
	pprofAddr := ""
	if profiles != "" {
		pprofAddr = freeAddr(t)
		env = append(env, "SWITCHYARD_PPROF_ADDR="+pprofAddr)
	}
	gw := startProc(t, filepath.Join(bin, "switchyard"), env)
	gwBase := "http://" + gwAddr
	waitOK(t, gwBase+"/healthz")
	direct := target{name: "direct", url: fakeBase + "/chat/completions", key: "sk-bench-key-0000-xxxx"}
	gateway := target{name: "gateway", url: gwBase + "/v1/chat/completions", key: b.callerKey}
	floors := []floor{{target: target{name: "plain proxy", url: "http://" + plainAddr + "/v1/chat/completions", key: direct.key},
		what: "Go net/http, one hop and nothing else", cpu: cpuGroup{name: "plain proxy", pid: plainProc.Process.Pid}}}
	if nginxOn {
		floors = append(floors, floor{target: target{name: "nginx", url: "http://" + nginxAddr + "/v1/chat/completions", key: direct.key},
			what: "Debian's nginx, upstream keep-alive", cpu: cpuGroup{name: "nginx", comm: "nginx"}})
	}
	waitServes(t, gateway)
	for _, f := range floors {
		waitServes(t, f.target)
	}
	idleRSS := rssKB(gw.Process.Pid)

	report := &strings.Builder{}
	fmt.Fprintf(report, "\n=== Switchyard gateway vs direct to the fake vendor (same run, same drivers: wrk and loadgen in their own processes; %d rounds interleaved, medians) ===\n", rounds)
	fmt.Fprintf(report, "the fake vendor pauses 2 ms between a stream's role chunk and its first content chunk; limits, breakers, call logging on; SWITCHYARD_MAX_INFLIGHT=%d\n", inflightCap)

	pid := gw.Process.Pid
	procs := benchProcs{gateway: pid, fake: fake.Process.Pid}
	idleSmall := idleCPU(pid)

	// Configuration at scale first, on a fresh instance, so its RSS peak is
	// its own. The large configuration is live afterwards.
	var scaleProfile chan struct{}
	if profiles != "" { // a CPU profile of the configuration at scale, and its allocations
		fetchProfile(t, pprofAddr, "/debug/pprof/allocs", filepath.Join(profiles, "allocs-config-before.pprof"))
		scaleProfile = make(chan struct{})
		go func() {
			defer close(scaleProfile)
			fetchProfile(t, pprofAddr, "/debug/pprof/profile?seconds=20", filepath.Join(profiles, "cpu-config.pprof"))
		}()
		time.Sleep(200 * time.Millisecond)
	}
	scale := atScale(t, st, b, gwBase, pid)
	if scaleProfile != nil {
		fetchProfile(t, pprofAddr, "/debug/pprof/allocs?gc=1", filepath.Join(profiles, "allocs-config.pprof"))
		<-scaleProfile
	}
	fmt.Fprintf(report, "config at scale      %d route groups, %d deployments, %d callers, %.1f MB of text: import %s | publish %s (live on the instance after %s) | rollback %s (live after %s) | server RSS peak %.1f MB (idle before: %.1f MB)\n",
		scale.groups, scale.deployments, scale.callers, float64(scale.bytes)/(1<<20), ms(scale.imp), ms(scale.publish), ms(scale.publishLive), ms(scale.rollback), ms(scale.rollbackLive),
		float64(scale.peakKB)/1024, float64(scale.beforeKB)/1024)
	if scaleOnly {
		fmt.Print(report.String())
		return
	}
	idleLarge := idleCPU(pid)

	var large figures
	if scenariosOn {
		loadgen(t, bin, direct, bodyChat, rate, 2*time.Second, false) // warm both paths
		loadgen(t, bin, gateway, bodyChat, rate, 2*time.Second, false)
		large = scenarios(t, bin, procs, direct, gateway, nil)
	}
	fmt.Fprintf(report, "gateway RSS with the large configuration live, after its scenarios: %.1f MB\n", float64(rssKB(pid))/1024)

	// Back to the bench's one route group (a rollback to version 1).
	code, out := adminCall(t, gwBase, b.adminToken, http.MethodPost, "/admin/api/versions/1/rollback", "application/json", []byte(`{"message":"back to one group"}`))
	if code != http.StatusCreated {
		t.Fatalf("rollback to version 1: %d %s", code, out)
	}
	waitLive(t, gwBase, scale.lastVersion+1)
	var small figures
	if scenariosOn {
		small = scenarios(t, bin, procs, direct, gateway, floors)
		small.print(report, "1 route group")
		fmt.Fprintf(report, "gateway CPU per request at %d req/s: %.3f ms\n", rate, small.cpuPerReq.Seconds()*1000)
		lowRateCPU(t, bin, gateway, pid, floors[0]).print(report)
		large.print(report, fmt.Sprintf("%d route groups, %d deployments, %d callers", scale.groups, scale.deployments, scale.callers))
		fmt.Fprintf(report, "gateway CPU per request at %d req/s: %.3f ms\n", rate, large.cpuPerReq.Seconds()*1000)
	}
	fmt.Fprintf(report, "gateway idle CPU     1 route group %.1f%% of a core | %d route groups %.1f%% (background work: reloads, health probes, boards)\n", idleSmall*100, scale.groups, idleLarge*100)

	if profiles != "" {
		collectProfiles(t, bin, profiles, pprofAddr, direct, gateway)
		fmt.Fprintf(report, "profiles of the gateway under %d req/s written to %s (cpu.pprof, allocs.pprof, allocs-before.pprof)\n", rate, profiles)
	}

	// RSS with many concurrent streams held open by a slow vendor, on an
	// instance of its own without the in-flight cap the priority scenario
	// needs (at a cap of 400 most of the streams would queue or be refused).
	streamsEnv := append(slices.Clone(env[:len(env):len(env)]), "SWITCHYARD_MAX_INFLIGHT=0")
	streamsAddr := freeAddr(t)
	streamsEnv = append(streamsEnv, "SWITCHYARD_ADDR="+streamsAddr, "SWITCHYARD_SPILL_DIR="+t.TempDir(), "SWITCHYARD_PPROF_ADDR=")
	gw2 := startProc(t, filepath.Join(bin, "switchyard"), streamsEnv)
	waitOK(t, "http://"+streamsAddr+"/healthz")
	streamsGW := target{name: "gateway-streams", url: "http://" + streamsAddr + "/v1/chat/completions", key: b.callerKey}
	waitServes(t, streamsGW)
	idle2 := rssKB(gw2.Process.Pid)
	streamRSS, open := holdStreams(t, fakeAddr, streamsGW, gw2.Process.Pid)
	time.Sleep(afterStreams) // what the process gives back once they have closed
	closedRSS := rssKB(gw2.Process.Pid)
	fmt.Fprintf(report, "gateway RSS          idle %.1f MB | with %d concurrent streams open %.1f MB (target %d MB) | %s after they closed %.1f MB (target %d MB) (a second instance without the in-flight cap: idle %.1f MB)\n",
		float64(idleRSS)/1024, open, float64(streamRSS)/1024, rssOpenTargetMB, afterStreams, float64(closedRSS)/1024, rssClosedTargetMB, float64(idle2)/1024)
	// The floor: the plain Go proxy holding as many streams, and how much
	// of each RSS is the binary's own pages.
	var plainOpen, gwOpen string
	holdStreamsAt(t, fakeAddr, floors[0].target, plainProc.Process.Pid, streamsEnd{atOpen: func() { plainOpen = rssReading(plainProc.Process.Pid) }})
	holdStreamsAt(t, fakeAddr, streamsGW, gw2.Process.Pid, streamsEnd{atOpen: func() { gwOpen = rssReading(gw2.Process.Pid) }})
	fmt.Fprintf(report, "RSS with %d streams open, again: plain Go proxy %s | gateway %s\n", streams, plainOpen, gwOpen)
	fmt.Fprintf(report, "RSS in steady traffic of %d KB prompts (%d streams a second, each open %s: ~%d at once, for %s): plain Go proxy %s | gateway %s\n",
		agentPromptKB, steadyRate, steadyStreamLife, steadyRate*int(steadyStreamLife/time.Second), steadyFor,
		steadyStreams(t, bin, fakeAddr, floors[0].target, plainProc.Process.Pid), steadyStreams(t, bin, fakeAddr, streamsGW, gw2.Process.Pid))

	prioritisation(t, bin, fakeAddr, b, gwBase, report)

	fmt.Print(report.String())
	if out := os.Getenv("BENCH_REPORT"); out != "" {
		_ = os.WriteFile(out, []byte(report.String()), 0o644)
	}
}

const inflightCap = 400

func benchBin() string {
	if bin := os.Getenv("BENCH_BIN"); bin != "" {
		return bin
	}
	return "../../bin"
}

// benchWorld is what every bench scenario starts from: the fake vendor in
// a process of its own and a database holding the bench's configuration.
type benchWorld struct {
	fake               *exec.Cmd
	fakeAddr, fakeBase string
	dsn                string
	st                 *store.Store
	b                  benchConfig
}

func newBenchWorld(t *testing.T, bin string) benchWorld {
	var w benchWorld
	w.fakeAddr = freeAddr(t)
	// The fake vendor pauses between a stream's role chunk and its first
	// content chunk, as real vendors do, so first byte and first content
	// differ on the direct path too.
	w.fake = startProc(t, filepath.Join(bin, "fakeupstream"), nil, "-addr", w.fakeAddr, "-reply-chunks", "5", "-first-chunk-delay", "2ms")
	waitOK(t, "http://"+w.fakeAddr+"/_fake/stats")
	w.fakeBase = "http://" + w.fakeAddr + "/v1"
	w.dsn = storetest.NewDatabase(t)
	key, _ := secrets.ParseKey(storetest.TestKey)
	sealer, _ := secrets.NewSealer(key)
	st, err := store.Open(context.Background(), w.dsn, sealer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(); err != nil {
		t.Fatal(err)
	}
	w.st = st
	w.b = newBenchConfig(t, st, w.fakeBase)
	return w
}

// gatewayEnv is the environment of a bench gateway listening on addr.
func gatewayEnv(t *testing.T, addr, dsn string) []string {
	return []string{
		"SWITCHYARD_ADDR=" + addr, "SWITCHYARD_DATABASE_URL=" + dsn, "SWITCHYARD_SECRET_KEY=" + storetest.TestKey,
		"SWITCHYARD_ADMIN_PASSWORD=bench-password-1", "SWITCHYARD_SPILL_DIR=" + t.TempDir(), "SWITCHYARD_LOG_LEVEL=warn",
		"SWITCHYARD_REDIS_URL=" + redisURL(), fmt.Sprintf("SWITCHYARD_REDIS_PREFIX=sybench%d", time.Now().UnixNano()),
		// A cap, so the priority scenario measures the queues: at the cap
		// requests wait in their class's queue, let in 10:3:1.
		fmt.Sprintf("SWITCHYARD_MAX_INFLIGHT=%d", inflightCap),
		// Every driver connects from 127.0.0.1, like clients behind a load
		// balancer: the per-address caps would refuse the load itself.
		// The streams scenario opens its 1,000 connections at once: accepted
		// and not yet sending, they count as idle.
		"SWITCHYARD_MAX_PENDING_PER_IP=0", "SWITCHYARD_MAX_CONNS_PER_IP=0", "SWITCHYARD_MAX_IDLE_CONNS_PER_IP=0",
	}
}

// scenariosOn is false with BENCH_SCENARIOS=0: only the configuration at
// scale, idle CPU, streams RSS and priority run (to iterate on those).
var scenariosOn = os.Getenv("BENCH_SCENARIOS") != "0"

// scaleOnly is true with BENCH_SCALE_ONLY=1: the configuration at scale
// alone (to iterate on it; go test -tags bench -run TestGatewayVersusDirect).
var scaleOnly = os.Getenv("BENCH_SCALE_ONLY") == "1"

// idleCPU is the share of a core the process uses over a few seconds of no
// traffic.
func idleCPU(pid int) float64 {
	const window = 3 * time.Second
	c0 := cpuTicks(pid)
	time.Sleep(window)
	return float64(time.Duration(cpuTicks(pid)-c0)*clockTick) / float64(window)
}

var streamBody = `{"model":"standard","stream":true,"messages":[{"role":"user","content":"benchmark"}]}`

// benchConfig is the bench's own configuration: what its callers use.
type benchConfig struct {
	callerKey, batchKey string
	prioKey, prioBatch  string
	adminToken          string
}

// newBenchConfig stores and publishes the bench's configuration: provider
// "fake" with three keys, logic model "small" on it, route group "default",
// an interactive caller (the measured one) and a batch caller, plus a "prio"
// group whose vendor answers after 100 ms for the priority scenario. The
// providers of the large configuration are created too (with their keys,
// which are credentials, not configuration), so importing it later keeps
// them.
func newBenchConfig(t *testing.T, st *store.Store, fakeBase string) benchConfig {
	ctx := context.Background()
	var b benchConfig
	pid, err := st.CreateProvider(ctx, config.Provider{Name: "fake", Protocol: config.ProtocolOpenAI, BaseURL: fakeBase, Enabled: true, TimeoutMS: 30000})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := st.AddProviderKey(ctx, pid, "", fmt.Sprintf("sk-bench-key-%04d-xxxx", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range configtest.Generate(largeSize, fakeBase).Providers {
		p.Keys = nil
		id, err := st.CreateProvider(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if _, err := st.AddProviderKey(ctx, id, "", fmt.Sprintf("sk-%s-%d-xxxxxxxx", p.Name, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, m := range []struct{ code, upstream string }{{"small", "bench-model"}, {"prio", "prio-model"}} {
		mid, err := st.CreateLogicModel(ctx, config.LogicModel{Code: m.code, Kind: config.KindChat})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateDeployment(ctx, mid, config.Deployment{Provider: "fake", UpstreamModel: m.upstream, Weight: 100, Enabled: true, Prices: config.Prices{InputMicros: config.Unit, OutputMicros: 2 * config.Unit, Currency: "USD"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []struct{ name, model string }{{"default", "small"}, {"prio", "prio"}} {
		if _, err := st.CreateRouteGroup(ctx, config.RouteGroup{Name: g.name}); err != nil {
			t.Fatal(err)
		}
		snap, _, _ := st.Draft(ctx)
		for _, rg := range snap.RouteGroups {
			if rg.Name != g.name {
				continue
			}
			for _, tr := range rg.Tiers {
				if _, err := st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: g.model, Weight: 100}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	limits := []config.TierLimit{}
	for _, tn := range config.TierNames {
		limits = append(limits, config.TierLimit{Tier: tn, RPM: 100_000_000, TPM: 1_000_000_000_000, DailyTokens: 1_000_000_000_000})
	}
	caller := func(name, group string, class config.PriorityClass) string {
		_, err := st.CreateCaller(ctx, config.Caller{Name: name, RouteGroup: group, PriorityClass: class, Enabled: true, Limits: limits, MonthlyBudgetMicros: 1e8 * config.Unit, BudgetCurrency: "USD"})
		if err != nil {
			t.Fatal(err)
		}
		k, _, err := st.CreateCallerKey(ctx, name, name, "bench")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	b.callerKey = caller("bench", "default", config.ClassInteractive)
	b.batchKey = caller("batch", "default", config.ClassBatch)
	b.prioKey = caller("prio-interactive", "prio", config.ClassInteractive)
	b.prioBatch = caller("prio-batch", "prio", config.ClassBatch)
	if _, err := st.Publish(ctx, store.PublishInput{Author: "bench", Message: "bench", Check: func(s config.Snapshot) config.Result { return config.Result{} }}); err != nil {
		t.Fatal(err)
	}
	tok, _, err := st.CreateAdminToken(ctx, "bench", "admin", "bench")
	if err != nil {
		t.Fatal(err)
	}
	b.adminToken = tok
	return b
}

// waitServes waits until the gateway answers 200 (its configuration is loaded).
func waitServes(t *testing.T, tg target) {
	t.Helper()
	for i := 0; ; i++ {
		res, err := client.Do(tg.request(context.Background(), bodyChat))
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		if i > 100 {
			t.Fatalf("gateway does not serve: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// figures are the three scenarios' results for one configuration.
type figures struct {
	dP50, dP99, gP50, gP99 time.Duration // latency at the fixed rate
	gErrors                int
	statuses               map[string]int // gateway failures by status (-1: no answer)
	dRPS, gRPS             float64
	gFailed                int
	dFB, gFB, dFC, gFC     time.Duration // stream first byte and first content, p50
	dFC99, gFC99           time.Duration
	cpuPerReq              time.Duration
	maxLag                 time.Duration
	// The floors, when measured: latency at the fixed rate, maximum
	// throughput, stream first content.
	floors []floorFigures
	// Where the CPU went while each path was saturated.
	dSplit, gSplit cpuSplit
}

// benchProcs are the processes the CPU split names by pid.
type benchProcs struct{ gateway, fake int }

// scenarios measures latency at the fixed rate, maximum throughput and
// stream timings, direct, through the gateway and through each floor,
// interleaved.
func scenarios(t *testing.T, bin string, procs benchProcs, direct, gateway target, floors []floor) figures {
	var f figures
	var dp50, dp99, gp50, gp99, dfb, gfb, dfc, gfc, dfc99, gfc99 []time.Duration
	fs := make([]floorSamples, len(floors))
	var drps, grps []float64
	var dsplits, gsplits []cpuSplit
	var cpu, served int64
	pid := procs.gateway
	for range rounds {
		d := loadgen(t, bin, direct, bodyChat, rate, phase, false)
		c0 := cpuTicks(pid)
		g := loadgen(t, bin, gateway, bodyChat, rate, phase, false)
		cpu += cpuTicks(pid) - c0
		served += int64(g.OK)
		dp50, dp99 = append(dp50, us(d.Latency.P50US)), append(dp99, us(d.Latency.P99US))
		gp50, gp99 = append(gp50, us(g.Latency.P50US)), append(gp99, us(g.Latency.P99US))
		f.gErrors += g.Errors
		f.countStatuses(g)
		f.maxLag = max(f.maxLag, us(d.MaxLagUS), us(g.MaxLagUS))
		for i, fl := range floors {
			p := loadgen(t, bin, fl.target, bodyChat, rate, phase, false)
			fs[i].p50, fs[i].p99 = append(fs[i].p50, us(p.Latency.P50US)), append(fs[i].p99, us(p.Latency.P99US))
		}
	}
	vendor, driver := cpuGroup{name: "fake vendor", pid: procs.fake}, cpuGroup{name: "wrk", comm: "wrk"}
	for range rounds {
		r, _, s := wrkSplit(t, direct, bodyChat, workers, throughputPhase, []cpuGroup{vendor, driver})
		drps, dsplits = append(drps, r), append(dsplits, s)
		r, failed, s := wrkSplit(t, gateway, bodyChat, workers, throughputPhase, []cpuGroup{{name: "gateway", pid: pid}, vendor,
			{name: "PostgreSQL", comm: "postgres"}, {name: "Redis", comm: "redis-server"}, driver})
		grps, gsplits = append(grps, r), append(gsplits, s)
		f.gFailed += failed
		for i, fl := range floors {
			r, _, s := wrkSplit(t, fl.target, bodyChat, workers, throughputPhase, []cpuGroup{fl.cpu, vendor, driver})
			fs[i].rps, fs[i].splits = append(fs[i].rps, r), append(fs[i].splits, s)
		}
	}
	for range rounds {
		d := loadgen(t, bin, direct, streamBody, rate/5, phase/2, true)
		g := loadgen(t, bin, gateway, streamBody, rate/5, phase/2, true)
		dfb, gfb = append(dfb, us(d.FirstByte.P50US)), append(gfb, us(g.FirstByte.P50US))
		dfc, gfc = append(dfc, us(d.Content.P50US)), append(gfc, us(g.Content.P50US))
		dfc99, gfc99 = append(dfc99, us(d.Content.P99US)), append(gfc99, us(g.Content.P99US))
		f.gErrors += g.Errors
		f.countStatuses(g)
		for i, fl := range floors {
			p := loadgen(t, bin, fl.target, streamBody, rate/5, phase/2, true)
			fs[i].fc, fs[i].fc99 = append(fs[i].fc, us(p.Content.P50US)), append(fs[i].fc99, us(p.Content.P99US))
		}
	}
	f.dP50, f.dP99, f.gP50, f.gP99 = median(dp50), median(dp99), median(gp50), median(gp99)
	f.dRPS, f.gRPS = median(drps), median(grps)
	f.dFB, f.gFB, f.dFC, f.gFC, f.dFC99, f.gFC99 = median(dfb), median(gfb), median(dfc), median(gfc), median(dfc99), median(gfc99)
	f.dSplit, f.gSplit = medianSplit(dsplits), medianSplit(gsplits)
	for i, fl := range floors {
		f.floors = append(f.floors, fs[i].figures(fl))
	}
	if served > 0 {
		f.cpuPerReq = time.Duration(cpu) * clockTick / time.Duration(served)
	}
	return f
}

var throughputPhase = envDur("BENCH_THROUGHPUT_PHASE", 5*time.Second)

func (f *figures) countStatuses(r loadResult) {
	if f.statuses == nil {
		f.statuses = map[string]int{}
	}
	for k, v := range r.Statuses {
		f.statuses[k] += v
	}
}

func (f figures) print(w io.Writer, what string) {
	fmt.Fprintf(w, "--- %s ---\n", what)
	fmt.Fprintf(w, "latency @%d req/s   direct p50 %s p99 %s | gateway p50 %s p99 %s | added p50 %s p99 %s (gateway errors %d %v; driver lag max %s)\n",
		rate, ms(f.dP50), ms(f.dP99), ms(f.gP50), ms(f.gP99), ms(f.gP50-f.dP50), ms(f.gP99-f.dP99), f.gErrors, f.statuses, ms(f.maxLag))
	fmt.Fprintf(w, "max throughput       direct %.0f req/s | gateway %.0f req/s | ratio gateway/direct %.3f (wrk, %d connections; gateway failures %d)\n",
		f.dRPS, f.gRPS, f.gRPS/f.dRPS, workers, f.gFailed)
	fmt.Fprintf(w, "stream @%d req/s     first byte direct %s gateway %s added %s | first content direct %s gateway %s added %s (p99 added %s)\n",
		rate/5, ms(f.dFB), ms(f.gFB), ms(f.gFB-f.dFB), ms(f.dFC), ms(f.gFC), ms(f.gFC-f.dFC), ms(f.gFC99-f.dFC99))
	f.printFloors(w)
	fmt.Fprintf(w, "CPU per request while saturated (wrk, medians)\n")
	fmt.Fprintf(w, "  direct             %s\n", f.dSplit)
	for _, fl := range f.floors {
		fmt.Fprintf(w, "  %-18s %s\n", fl.name, fl.split)
	}
	fmt.Fprintf(w, "  gateway            %s\n", f.gSplit)
}

// holdStreams opens many streams that the vendor paces slowly and returns
// the gateway's RSS while they are open, and how many were open: answered
// 200 with their first content on the way (the gateway sends nothing
// before a stream's first content chunk).
func holdStreams(t *testing.T, fakeAddr string, gateway target, pid int) (int, int64) {
	return holdStreamsAt(t, fakeAddr, gateway, pid, streamsEnd{})
}

// streamsEnd is how holdStreamsAt's streams end: atOpen (when not nil) is
// called while they are open, after the RSS is read; then the callers leave
// (their upstream connections are closed), or with vendorEnds they wait
// for the vendor to finish each stream (the connections go back to the
// pool, idle).
type streamsEnd struct {
	atOpen     func()
	vendorEnds bool
	promptKB   int // the prompt's size, beyond a word: a coding agent's run to hundreds of KB
}

func holdStreamsAt(t *testing.T, fakeAddr string, gateway target, pid int, end streamsEnd) (int, int64) {
	var open sync.WaitGroup
	var started, refused atomic.Int64
	streamCtx, stopStreams := context.WithCancel(context.Background())
	slowBody := slowStreamBody(end.promptKB)
	setRules(t, fakeAddr, slowStreams("6s"))
	for range streams {
		open.Add(1)
		go func() {
			defer open.Done()
			res, err := client.Do(gateway.request(streamCtx, slowBody))
			if err != nil {
				refused.Add(1)
				return
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				refused.Add(1)
				return
			}
			buf := make([]byte, 1)
			if _, err := res.Body.Read(buf); err == nil {
				started.Add(1)
			}
			_, _ = io.Copy(io.Discard, res.Body)
		}()
	}
	deadline := time.Now().Add(15 * time.Second) // the vendor ends each stream after 18 s
	for started.Load()+refused.Load() < int64(streams) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	rss := rssKB(pid)
	if end.atOpen != nil {
		end.atOpen()
	}
	if n := started.Load(); n < int64(streams) {
		t.Errorf("only %d of %d streams opened (%d refused or failed): the RSS figure is not for %d streams", n, streams, refused.Load(), streams)
	}
	if !end.vendorEnds {
		stopStreams()
	}
	open.Wait()
	stopStreams()
	setRules(t, fakeAddr, "")
	return rss, started.Load()
}

// Steady traffic of coding-agent streams: steadyRate a second, each held
// open by the vendor for steadyStreamLife (three chunks 3 s apart), for
// steadyFor. Unlike a burst, where RSS follows how far the heap grew before
// the collector ran, steady traffic keeps the collector pacing itself to
// the live heap: what a stream holds for its whole life shows in RSS.
const (
	steadyRate       = 100
	steadyStreamLife = 9 * time.Second
	steadyFor        = 20 * time.Second
)

// steadyStreams runs steady traffic of agentPromptKB prompts against tg
// and returns pid's RSS as the last streams are sent.
func steadyStreams(t *testing.T, bin, fakeAddr string, tg target, pid int) string {
	setRules(t, fakeAddr, slowStreams("3s"))
	defer setRules(t, fakeAddr, "")
	body := slowStreamBody(agentPromptKB)
	var r loadResult
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		r, err = runLoadgen(bin, tg, body, steadyRate, steadyFor, true)
	}()
	time.Sleep(steadyFor)
	rss := rssReading(pid)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 0 || r.OK != steadyRate*int(steadyFor/time.Second) {
		t.Errorf("steady streams through %s: %d served, %d failed (%v): the RSS figure is not for steady traffic", tg.name, r.OK, r.Errors, r.Statuses)
	}
	return rss
}

// slowStreamBody is a streamed chat request with a prompt of a word and
// promptKB KB more.
func slowStreamBody(promptKB int) string {
	return `{"model":"standard","stream":true,"messages":[{"role":"user","content":"slow` + strings.Repeat(" x", promptKB<<9) + `"}]}`
}

// slowStreams are the fake vendor's rules that hold a stream open, three
// chunks each gap apart: for the model the gateway asks for, and for the
// tier name the plain Go proxy forwards as it came.
func slowStreams(gap string) string {
	fault := `"fault":{"inter_chunk_delay":"` + gap + `","reply_chunks":3}`
	return `[{"model":"bench-model",` + fault + `},{"model":"standard",` + fault + `}]`
}

func setRules(t *testing.T, fakeAddr, rules string) {
	method := http.MethodPut
	if rules == "" {
		method = http.MethodDelete
	}
	req, _ := http.NewRequest(method, "http://"+fakeAddr+"/_fake/rules", strings.NewReader(rules))
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode >= 300 {
		t.Fatalf("fake vendor rules: %v %v", err, res)
	}
	res.Body.Close()
}

// prioritisation: interactive callers' latency alone and under a batch
// load that saturates the instance's in-flight cap (the vendor answers in
// 100 ms, so requests hold their slots). At the cap batch requests wait in
// the batch queue and interactive ones in theirs, let in first (10:3:1):
// interactive latency should barely move, and nothing should be refused.
func prioritisation(t *testing.T, bin, fakeAddr string, b benchConfig, gwBase string, report io.Writer) {
	setRules(t, fakeAddr, `[{"model":"prio-model","fault":{"latency":"100ms"}}]`)
	defer setRules(t, fakeAddr, "")
	inter := target{name: "prio-interactive", url: gwBase + "/v1/chat/completions", key: b.prioKey}
	batch := target{name: "prio-batch", url: gwBase + "/v1/chat/completions", key: b.prioBatch}
	alone := loadgen(t, bin, inter, bodyChat, 50, phase, false)
	type wrkOut struct {
		rps    float64
		failed int
	}
	done := make(chan wrkOut, 1)
	go func() {
		// wrk fails the test with t.Fatal, which ends this goroutine: the
		// deferred send still lets the test go on to report it.
		var out wrkOut
		defer func() { done <- out }()
		out.rps, out.failed = wrk(t, batch, bodyChat, 2*inflightCap, phase+2*time.Second)
	}()
	time.Sleep(time.Second)
	loaded := loadgen(t, bin, inter, bodyChat, 50, phase, false)
	bo := <-done
	if t.Failed() {
		return
	}
	fmt.Fprintf(report, "priority             interactive p99 alone %s | under a batch load of %d connections %s (interactive refused %d of %d) | batch served %.0f req/s, refused %d (cap %d in flight; at the cap each class waits in its queue, let in 10:3:1)\n",
		ms(us(alone.Latency.P99US)), 2*inflightCap, ms(us(loaded.Latency.P99US)), loaded.Errors, loaded.OK+loaded.Errors, bo.rps, bo.failed, inflightCap)
}

// largeSize is the generated part of the large configuration; with the
// bench's own objects it makes 500 route groups, 5,000 deployments and 500
// callers.
var largeSize = configtest.Size{Tenants: 5, Providers: 50, Deployments: 4998, Groups: 498, Callers: 496}

type scaleFigures struct {
	groups, deployments, callers, bytes int
	imp, publish, publishLive, rollback time.Duration
	rollbackLive                        time.Duration
	peakKB, beforeKB                    int
	lastVersion                         int64
}

// atScale imports the large configuration through the admin API, publishes
// it, publishes the small one again and rolls back to the large one, timing
// each call and reading the server's peak RSS over all of it. The large
// configuration is live afterwards.
func atScale(t *testing.T, st *store.Store, b benchConfig, gwBase string, pid int) scaleFigures {
	ctx := context.Background()
	draft, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	smallText, _ := config.Encode(draft)
	fakeBase := ""
	for _, p := range draft.Providers {
		if p.Name == "fake" {
			fakeBase = p.BaseURL
		}
	}
	large := configtest.WithProviderKeys(configtest.Generate(largeSize, fakeBase), draft.Providers)
	large.Providers = draft.Providers // the same providers, with their keys
	large.LogicModels = append(large.LogicModels, draft.LogicModels...)
	large.RouteGroups = append(large.RouteGroups, draft.RouteGroups...)
	large.Callers = append(large.Callers, draft.Callers...)
	text, err := config.Encode(large)
	if err != nil {
		t.Fatal(err)
	}
	var f scaleFigures
	f.groups, f.callers, f.bytes = len(large.RouteGroups), len(large.Callers), len(text)
	for _, m := range large.LogicModels {
		f.deployments += len(m.Deployments)
	}
	f.beforeKB = rssKB(pid)
	peak := peakRSS(pid)
	call := func(method, path, ctype string, body []byte, want int) []byte {
		code, out := adminCall(t, gwBase, b.adminToken, method, path, ctype, body)
		if code != want {
			t.Fatalf("%s %s: %d %s", method, path, code, out[:min(len(out), 2000)])
		}
		return out
	}
	number := func(out []byte) int64 {
		var v struct{ Number int64 }
		_ = json.Unmarshal(out, &v)
		return v.Number
	}
	t0 := time.Now()
	call(http.MethodPost, "/admin/api/config/import", "application/yaml", text, http.StatusOK)
	f.imp = time.Since(t0)
	t0 = time.Now()
	v := number(call(http.MethodPost, "/admin/api/publish", "application/json", []byte(`{"message":"large"}`), http.StatusCreated))
	f.publish = time.Since(t0)
	f.publishLive = waitLive(t, gwBase, v)
	call(http.MethodPost, "/admin/api/config/import", "application/yaml", smallText, http.StatusOK)
	back := number(call(http.MethodPost, "/admin/api/publish", "application/json", []byte(`{"message":"small again"}`), http.StatusCreated))
	waitLive(t, gwBase, back)
	t0 = time.Now()
	rb := number(call(http.MethodPost, fmt.Sprintf("/admin/api/versions/%d/rollback", v), "application/json", []byte(`{"message":"back to large"}`), http.StatusCreated))
	f.rollback = time.Since(t0)
	f.rollbackLive = waitLive(t, gwBase, rb)
	f.peakKB = peak()
	f.lastVersion = rb
	f.lastVersion = rb
	return f
}

// collectProfiles takes a CPU and an allocation profile of the gateway
// while it serves the fixed rate.
func collectProfiles(t *testing.T, bin, dir, pprofAddr string, direct, gateway target) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	get := func(path, file string) { fetchProfile(t, pprofAddr, path, filepath.Join(dir, file)) }
	done := make(chan struct{})
	go func() {
		loadgen(t, bin, gateway, bodyChat, rate, 12*time.Second, false)
		close(done)
	}()
	time.Sleep(time.Second)
	get("/debug/pprof/allocs", "allocs-before.pprof")
	get("/debug/pprof/profile?seconds=8", "cpu.pprof")
	get("/debug/pprof/allocs", "allocs.pprof")
	<-done
}

func fetchProfile(t *testing.T, pprofAddr, path, file string) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get("http://" + pprofAddr + path)
	if err != nil {
		t.Errorf("profile %s: %v", path, err)
		return
	}
	defer res.Body.Close()
	out, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	_, _ = io.Copy(out, res.Body)
}
