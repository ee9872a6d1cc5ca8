package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/e2e/fakevendor"
	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/routing/health"
	"switchyard/routing/reason"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/gateway"
	"switchyard/web/gateway/gatewaytest"
)

// testHealth is scaled down: 100 ms buckets, a one-second window, three
// samples to judge, two good probes to come back.
var testHealth = health.Settings{Bucket: 100 * time.Millisecond, Window: time.Second, MinSamples: 3, RecoverProbes: 2}

// attach wires health and the worker into e's instance, as gateway.New's
// caller does, and keeps the tracker running; jobs also runs the jobs on
// their schedule (probes every 100 ms).
func attach(t *testing.T, e *gatewaytest.Env, jobs bool) *gateway.Worker {
	t.Helper()
	w := e.GW.AttachWorker(e.Store, gateway.WorkerOptions{
		RunJobs: jobs, Prefix: e.Prefix, ProbeEvery: 100 * time.Millisecond, ProbeTimeout: 2 * time.Second,
		LeaseTTL: 2 * time.Second, Poll: 20 * time.Millisecond, Refresh: 20 * time.Millisecond, Health: testHealth,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func waitUntil(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// probeNow runs the probe job once, as the worker would, then waits for
// the instance's tracker to see the result.
func probeNow(t *testing.T, w *gateway.Worker) {
	t.Helper()
	if ran, err := w.Runner.RunNow(context.Background(), "health-probe"); !ran || err != nil {
		t.Fatalf("probe job: ran %v, %v", ran, err)
	}
	if err := w.Tracker.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// twoProviders builds logic model "small" on providers alpha and beta (50/50)
// and a caller; it returns the caller's key and id and the deployment ids.
func twoProviders(t *testing.T, e *gatewaytest.Env) (key string, callerID, alpha, beta int64) {
	t.Helper()
	b := e.Build()
	b.Provider("alpha", config.ProtocolOpenAI, "", "sk-alpha-key-0001")
	b.Provider("beta", config.ProtocolOpenAI, "", "sk-beta-key-0002")
	b.Model(config.LogicModel{Code: "small", Kind: config.KindChat},
		config.Deployment{Provider: "alpha", UpstreamModel: "fake-alpha", Weight: 50, Enabled: true},
		config.Deployment{Provider: "beta", UpstreamModel: "fake-beta", Weight: 50, Enabled: true})
	all := []config.Candidate{{LogicModel: "small", Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: all, config.TierStandard: all, config.TierDeep: all})
	callerID, key = b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("two providers")
	for _, d := range e.GW.Holder.Current().Models["small"].Deployments {
		switch d.Provider.Name {
		case "alpha":
			alpha = d.ID
		case "beta":
			beta = d.ID
		}
	}
	return key, callerID, alpha, beta
}

// plan builds the chain the router would try for the caller's standard tier.
func plan(t *testing.T, e *gatewaytest.Env, callerID int64) (steps []int64, skips map[int64]string) {
	t.Helper()
	rt := e.GW.Holder.Current()
	p := routing.NewPlan()
	defer p.Release()
	routing.Build(p, rt.Callers[callerID], routing.Target{Tier: config.TierStandard}, routing.Needs{Kind: config.KindChat}, &e.GW.Exec.State)
	skips = map[int64]string{}
	for _, s := range p.Skips {
		skips[s.DeploymentID] = string(s.Reason.Code)
	}
	for _, s := range p.Steps {
		steps = append(steps, s.Deployment.ID)
	}
	return steps, skips
}

type reply struct {
	status            int
	model, provider   string
	requestID, errMsg string
	errCode           string
}

func chat(t *testing.T, e *gatewaytest.Env, key string) reply {
	t.Helper()
	res := send(t, e.URL, key, "/v1/chat/completions", `{"model":"standard","messages":[{"role":"user","content":"hello"}]}`)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := reply{status: res.StatusCode, model: res.Header.Get("X-Switchyard-Model"), provider: res.Header.Get("X-Switchyard-Provider"), requestID: res.Header.Get("X-Request-Id")}
	var eb struct {
		Error struct{ Message, Code string }
	}
	if json.Unmarshal(raw, &eb) == nil {
		r.errMsg, r.errCode = eb.Error.Message, eb.Error.Code
	}
	return r
}

func TestFailingProbesTakeDeploymentDownAndBack(t *testing.T) {
	e := gatewaytest.New(t)
	key, callerID, alpha, beta := twoProviders(t, e)
	w := attach(t, e, true) // the worker's own schedule: probes every 100 ms

	e.Fake.SetRules(fakevendor.Rule{Model: "fake-alpha", Fault: fakevendor.Fault{Status: 500}})
	began := time.Now()
	waitUntil(t, "alpha down", 5*time.Second, func() bool { return w.Tracker.Down(alpha) })
	t.Logf("alpha down %s after its vendor started failing", time.Since(began).Round(time.Millisecond))
	if w.Tracker.Down(beta) {
		t.Fatal("beta is down too")
	}
	steps, skips := plan(t, e, callerID)
	if skips[alpha] != "unhealthy" || len(steps) != 1 || steps[0] != beta {
		t.Fatalf("plan: steps %v skips %v; want alpha skipped as unhealthy", steps, skips)
	}
	for range 10 {
		if r := chat(t, e, key); r.status != http.StatusOK || r.provider != "beta" {
			t.Fatalf("request while alpha is down: %+v", r)
		}
	}
	// Test route's real request shows the skip in its attempt trail.
	tr := e.GW.Console.Ops.TestRequest(context.Background(), callerID, "/v1/chat/completions", []byte(`{"model":"standard","messages":[{"role":"user","content":"hi"}]}`))
	found := false
	for _, s := range tr.Trail.Skips {
		found = found || s.DeploymentID == alpha && s.Reason.Code == reason.Unhealthy
	}
	if tr.Status != http.StatusOK || !found {
		t.Fatalf("test request: %d, skips %+v", tr.Status, tr.Trail.Skips)
	}

	// The vendor recovers: two good probes in a row bring alpha back.
	e.Fake.ClearRules()
	began = time.Now()
	waitUntil(t, "alpha back", 5*time.Second, func() bool { return !w.Tracker.Down(alpha) })
	t.Logf("alpha back %s after its vendor recovered", time.Since(began).Round(time.Millisecond))
	if steps, skips := plan(t, e, callerID); len(steps) != 2 || skips[alpha] != "" {
		t.Fatalf("plan after recovery: steps %v skips %v", steps, skips)
	}
	served := map[string]int{}
	for range 30 {
		served[chat(t, e, key).provider]++
	}
	if served["alpha"] == 0 || served["beta"] == 0 {
		t.Fatalf("after recovery served by %v, want both", served)
	}

	// The record: failed probes with their class, the state history, job runs.
	ctx := context.Background()
	probes, err := e.Store.RecentProbes(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var failed int
	for _, p := range probes[alpha] {
		if p.Outcome == store.ProbeFailed {
			failed++
			if p.Class != "server" || p.HTTPStatus != 500 {
				t.Fatalf("failed probe %+v", p)
			}
		}
	}
	if failed < 3 || probes[alpha][0].Outcome != store.ProbeOK {
		t.Fatalf("alpha probes: %d failed, newest %+v", failed, probes[alpha][0])
	}
	events, err := e.Store.HealthEvents(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var path []string
	for i := len(events[alpha]) - 1; i >= 0; i-- {
		path = append(path, events[alpha][i].From+"→"+events[alpha][i].To)
	}
	if len(path) < 2 || !strings.HasSuffix(path[0], "→down") || path[len(path)-1] != "down→degraded" && path[len(path)-1] != "degraded→healthy" {
		t.Fatalf("alpha history %v", path)
	}
	if len(events[beta]) != 0 {
		t.Fatalf("beta changed state: %+v", events[beta])
	}
	runs, err := e.Store.JobRuns(ctx, "health-probe", 5)
	if err != nil || len(runs) == 0 || runs[len(runs)-1].Outcome != store.JobOK {
		t.Fatalf("probe job runs %+v, %v", runs, err)
	}
}

func TestOperatorDisabledStaysDisabled(t *testing.T) {
	e := gatewaytest.New(t)
	ctx := context.Background()
	_, callerID, alpha, _ := twoProviders(t, e)
	// A third provider the operator switched off, and a disabled key on beta.
	b := e.Build()
	gamma := b.Provider("gamma", config.ProtocolOpenAI, "", "sk-gamma-key-0003")
	b.Model(config.LogicModel{Code: "spare", Kind: config.KindChat}, config.Deployment{Provider: "gamma", UpstreamModel: "fake-gamma", Weight: 100, Enabled: true})
	snap, _, _ := e.Store.Draft(ctx)
	var gp config.Provider
	for _, p := range snap.Providers {
		if p.Name == "gamma" {
			gp = p
		}
	}
	gp.Enabled = false
	if err := e.Store.UpdateProvider(ctx, gamma, gp); err != nil {
		t.Fatal(err)
	}
	betaID, _ := e.Store.ProviderID(ctx, "beta")
	off, err := e.Store.AddProviderKey(ctx, betaID, "retired", "sk-beta-retired-0009")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.SetProviderKeyStatus(ctx, off.ID, config.KeyDisabled); err != nil {
		t.Fatal(err)
	}
	e.Publish("gamma off, a retired key")
	w := attach(t, e, false) // the test runs the probe job itself

	// Alpha's vendor fails its probes: down.
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-alpha", Fault: fakevendor.Fault{Status: 500}})
	for range 3 {
		probeNow(t, w)
	}
	if !w.Tracker.Down(alpha) {
		t.Fatal("alpha not down after three failed probes")
	}

	// The operator disables alpha by hand and publishes.
	snap, _, _ = e.Store.Draft(ctx)
	var dep config.Deployment
	for _, m := range snap.LogicModels {
		for _, d := range m.Deployments {
			if d.ID == alpha {
				dep = d
			}
		}
	}
	dep.Enabled = false
	if err := e.Store.UpdateDeployment(ctx, alpha, dep); err != nil {
		t.Fatal(err)
	}
	e.Publish("disable alpha")
	before, _, _ := e.Store.Draft(ctx)

	// The vendor is healthy again and probes keep running: alpha is not
	// probed and nothing re-enables it.
	e.Fake.ClearRules()
	e.Fake.Reset()
	for range 4 {
		probeNow(t, w)
	}
	if n := e.Fake.Count("fake-alpha"); n != 0 {
		t.Fatalf("disabled deployment probed %d times", n)
	}
	if n := e.Fake.Count("fake-gamma"); n != 0 {
		t.Fatalf("deployment of a disabled provider probed %d times", n)
	}
	if n := e.Fake.CountKey("sk-beta-retired-0009"); n != 0 {
		t.Fatalf("disabled key used %d times", n)
	}
	if n := e.Fake.Count("fake-beta"); n != 4 {
		t.Fatalf("beta probed %d times in 4 rounds", n)
	}
	after, _, _ := e.Store.Draft(ctx)
	if a, b := encode(t, before), encode(t, after); !bytes.Equal(a, b) {
		t.Fatalf("probes changed the draft:\n%s\n---\n%s", a, b)
	}
	rt := e.GW.Holder.Current()
	if d := rt.Deployments[alpha]; d.Enabled || d.StaticSkip.Code != reason.DisabledByOperator {
		t.Fatalf("live alpha: enabled %v, skip %q", d.Enabled, d.StaticSkip)
	}
	if v, _ := e.Store.LatestVersionNumber(ctx); v != rt.Version {
		t.Fatalf("a version was published behind the operator's back: %d vs %d", v, rt.Version)
	}
	if _, skips := plan(t, e, callerID); skips[alpha] != string(reason.DisabledByOperator) {
		t.Fatalf("alpha's skip reason %q, want disabled", skips[alpha])
	}
	// Its health stays down (nothing probed it), which is moot while it is
	// disabled: the console says why it is left alone.
	if !w.Tracker.Down(alpha) {
		t.Fatal("a disabled deployment recovered without probes")
	}

	// Only the operator brings it back; then the probes vouch for it.
	dep.Enabled = true
	if err := e.Store.UpdateDeployment(ctx, alpha, dep); err != nil {
		t.Fatal(err)
	}
	e.Publish("enable alpha")
	if _, skips := plan(t, e, callerID); skips[alpha] != "unhealthy" {
		t.Fatalf("re-enabled alpha skip %q, want unhealthy until probes pass", skips[alpha])
	}
	probeNow(t, w)
	probeNow(t, w)
	if w.Tracker.Down(alpha) {
		t.Fatal("re-enabled alpha still down after two good probes")
	}
	if e.Fake.Count("fake-alpha") != 2 {
		t.Fatalf("re-enabled alpha probed %d times", e.Fake.Count("fake-alpha"))
	}
}

// dedicatedWorld: tenant acme has a dedicated group acme-pool (model "ded")
// with the given fallback policy; the shared group shared-pool serves
// model "shared".
func dedicatedWorld(t *testing.T, e *gatewaytest.Env, fallback string) (key string, ded int64) {
	t.Helper()
	ctx := context.Background()
	b := e.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-0001")
	b.Model(config.LogicModel{Code: "ded", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-ded", Weight: 100, Enabled: true})
	b.Model(config.LogicModel{Code: "shared", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-shared", Weight: 100, Enabled: true})
	sh := []config.Candidate{{LogicModel: "shared", Weight: 100}}
	b.Group("shared-pool", map[config.TierName][]config.Candidate{config.TierFast: sh, config.TierStandard: sh, config.TierDeep: sh})
	if _, err := e.Store.CreateTenant(ctx, config.Tenant{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.CreateRouteGroup(ctx, config.RouteGroup{Name: "acme-pool", Tenant: "acme", Fallback: fallback}); err != nil {
		t.Fatal(err)
	}
	snap, _, _ := e.Store.Draft(ctx)
	for _, g := range snap.RouteGroups {
		if g.Name != "acme-pool" {
			continue
		}
		for _, tier := range g.Tiers {
			if _, err := e.Store.AddCandidate(ctx, tier.ID, config.Candidate{LogicModel: "ded", Weight: 100}); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, key = b.Caller(config.Caller{Name: "acme-app", Tenant: "acme", RouteGroup: "acme-pool"})
	e.Publish("dedicated pool, fallback " + fallback)
	return key, e.GW.Holder.Current().Models["ded"].Deployments[0].ID
}

// callLog waits for a request's call-log row (written asynchronously).
func callLog(t *testing.T, e *gatewaytest.Env, requestID string) calllog.Record {
	t.Helper()
	var rec calllog.Record
	waitUntil(t, "call log of "+requestID, 5*time.Second, func() bool {
		page, err := calllog.Search(context.Background(), e.Store.DB(), calllog.Filter{RequestID: requestID})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Rows) == 1 {
			rec = page.Rows[0]
			return true
		}
		return false
	})
	return rec
}

func TestDedicatedPoolFallbackPolicy(t *testing.T) {
	t.Run("none: the dedicated pool fails alone", func(t *testing.T) {
		e := gatewaytest.New(t)
		key, ded := dedicatedWorld(t, e, config.FallbackNone)
		w := attach(t, e, false)

		// The dedicated vendor fails: 502 naming the dedicated candidate;
		// the shared pool is never asked.
		e.Fake.SetRules(fakevendor.Rule{Model: "fake-ded", Fault: fakevendor.Fault{Status: 500}})
		r := chat(t, e, key)
		if r.status != http.StatusBadGateway || !strings.Contains(r.errMsg, "ded on fake") {
			t.Fatalf("failing dedicated pool: %+v", r)
		}
		if rec := callLog(t, e, r.requestID); rec.Fallback != "" || rec.Status != "upstream_error" {
			t.Fatalf("call log %+v", rec)
		}
		if n := e.Fake.Count("fake-shared"); n != 0 {
			t.Fatalf("the shared pool's model got %d requests", n)
		}

		// Probes take it down: 503 naming the dedicated candidate as
		// unhealthy, still no request to the shared pool's models.
		for range 3 {
			probeNow(t, w)
		}
		if !w.Tracker.Down(ded) {
			t.Fatal("dedicated deployment not down")
		}
		e.Fake.Reset() // forget the probes (they reach every enabled deployment)
		r = chat(t, e, key)
		if r.status != http.StatusServiceUnavailable || r.errCode != "no_available_model" || !strings.Contains(r.errMsg, "ded on fake/fake-ded: skipped, unhealthy") {
			t.Fatalf("down dedicated pool: %+v", r)
		}
		if strings.Contains(r.errMsg, "shared") {
			t.Fatalf("the error mentions the shared pool: %q", r.errMsg)
		}
		if n := e.Fake.Count("fake-shared"); n != 0 {
			t.Fatalf("the shared pool's model got %d requests", n)
		}
		if rec := callLog(t, e, r.requestID); rec.Fallback != "" || rec.HTTPStatus != http.StatusServiceUnavailable {
			t.Fatalf("call log %+v", rec)
		}
	})

	t.Run("shared: the shared group serves, and the call log says so", func(t *testing.T) {
		e := gatewaytest.New(t)
		key, ded := dedicatedWorld(t, e, "shared-pool")
		w := attach(t, e, false)

		e.Fake.SetRules(fakevendor.Rule{Model: "fake-ded", Fault: fakevendor.Fault{Status: 500}})
		r := chat(t, e, key)
		if r.status != http.StatusOK || r.model != "shared" {
			t.Fatalf("failing dedicated pool with fallback: %+v", r)
		}
		rec := callLog(t, e, r.requestID)
		if !strings.Contains(rec.Fallback, "shared-pool") || rec.LogicModel != "shared" {
			t.Fatalf("call log fallback %q model %q", rec.Fallback, rec.LogicModel)
		}

		for range 3 {
			probeNow(t, w)
		}
		if !w.Tracker.Down(ded) {
			t.Fatal("dedicated deployment not down")
		}
		e.Fake.Reset()
		r = chat(t, e, key)
		if r.status != http.StatusOK || r.model != "shared" {
			t.Fatalf("down dedicated pool with fallback: %+v", r)
		}
		if n := e.Fake.Count("fake-ded"); n != 0 {
			t.Fatalf("the down dedicated deployment got %d requests", n)
		}
		rec = callLog(t, e, r.requestID)
		if !strings.Contains(rec.Fallback, "shared-pool") {
			t.Fatalf("call log fallback %q", rec.Fallback)
		}
		var trail routing.Trail
		if err := json.Unmarshal(rec.Attempts, &trail); err != nil {
			t.Fatal(err)
		}
		if len(trail.Attempts) != 1 || !trail.Attempts[0].Fallback || trail.Attempts[0].Model != "shared" ||
			len(trail.Skips) != 1 || trail.Skips[0].DeploymentID != ded || trail.Skips[0].Reason.Code != reason.Unhealthy {
			t.Fatalf("attempt trail %s", rec.Attempts)
		}
	})
}

func TestLiveTrafficFeedsTheScore(t *testing.T) {
	e := gatewaytest.New(t)
	key, _, alpha, beta := twoProviders(t, e)
	w := attach(t, e, false)
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-alpha", Fault: fakevendor.Fault{Status: 500}})
	for range 20 {
		if r := chat(t, e, key); r.status != http.StatusOK {
			t.Fatalf("%+v", r)
		}
	}
	if err := w.Tracker.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	win, err := w.Tracker.Board().Window(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if win[alpha].Failed == 0 || win[alpha].OK != 0 || win[beta].OK < 20 || win[beta].Failed != 0 {
		t.Fatalf("window alpha %+v beta %+v", win[alpha], win[beta])
	}
}

func encode(t *testing.T, s config.Snapshot) []byte {
	t.Helper()
	b, err := config.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
