package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
	"switchyard/routing/health"
	"switchyard/store"
	"switchyard/views/components"
	"switchyard/web/gateway"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/webtest"
)

// TestProbesSpreadBoundedAndSkipLiveTraffic: 500 deployments, a 4 s probe
// interval, at most 4 probes in flight. Some deployments carry live traffic
// just before the round; the round then sends every other enabled
// deployment exactly one probe and none of those; never more than 4 at the
// fake vendor at once; spread over the interval (not a burst at its start);
// and the Health page shows what the probes cost and why the others were
// not probed. Without an interval (all probes due at once) the bound still
// holds.
func TestProbesSpreadBoundedAndSkipLiveTraffic(t *testing.T) {
	const (
		every    = 4 * time.Second
		bound    = 4
		models   = 50
		perModel = 10
	)
	e := gatewaytest.New(t)
	ctx := context.Background()
	b := e.Build()
	b.Provider("vendor", config.ProtocolOpenAI, "", "sk-vendor-key-0001")
	// 3 and 5 micros a token: the fake vendor answers the probe ("ping",
	// max_tokens 1) with 1 prompt and 1 completion token, so 8 µUSD a probe.
	prices := config.Prices{InputMicros: 3 * config.Unit, OutputMicros: 5 * config.Unit, Currency: "USD"}
	for i := range models {
		deps := make([]config.Deployment, perModel)
		for j := range deps {
			deps[j] = config.Deployment{Provider: "vendor", UpstreamModel: fmt.Sprintf("up-%02d-%d", i, j), Weight: 10, Enabled: true, Prices: prices}
		}
		b.Model(config.LogicModel{Code: fmt.Sprintf("m%02d", i), Kind: config.KindChat}, deps...)
	}
	live := []config.Candidate{{LogicModel: "m00", Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: live, config.TierStandard: live, config.TierDeep: live})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("500 deployments")
	rt := e.GW.Holder.Current()
	if len(rt.Deployments) != models*perModel {
		t.Fatalf("%d deployments live", len(rt.Deployments))
	}
	perProbe := prices.CostMicros(1, 1, 0)

	// The tracker is not run: its live outcomes are flushed by hand below.
	w := e.GW.AttachWorker(e.Store, gateway.WorkerOptions{Prefix: e.Prefix, ProbeEvery: every, ProbeConcurrency: bound, ProbeTimeout: 5 * time.Second, Health: testHealth})

	// Start just after a tick begins, as the runner does.
	now := time.Now()
	time.Sleep(time.Until(time.Unix(0, (now.UnixNano()/int64(every)+1)*int64(every)).Add(20 * time.Millisecond)))
	for range 20 {
		if r := chat(t, e, key); r.status != http.StatusOK {
			t.Fatalf("live request: %+v", r)
		}
	}
	if err := w.Tracker.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	liveIDs := map[int64]bool{}
	for id, d := range rt.Deployments {
		if e.Fake.Count(d.UpstreamModel) > 0 {
			liveIDs[id] = true
		}
	}
	if len(liveIDs) == 0 {
		t.Fatal("no deployment carried live traffic")
	}
	e.Fake.Reset()

	start := time.Now()
	tickStart := time.Unix(0, start.UnixNano()/int64(every)*int64(every))
	summary, err := w.Prober.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("round took %s: %s", time.Since(start).Round(time.Millisecond), summary)

	// Each deployment: live ones not probed, every other one probed once.
	for id, d := range rt.Deployments {
		want := int64(1)
		if liveIDs[id] {
			want = 0
		}
		if got := e.Fake.Count(d.UpstreamModel); got != want {
			t.Fatalf("deployment %d (live %v): %d probes, want %d", id, liveIDs[id], got, want)
		}
	}
	sent := int64(len(rt.Deployments) - len(liveIDs))
	if !strings.Contains(summary, fmt.Sprintf("probed %d of %d", sent, len(rt.Deployments))) || !strings.Contains(summary, fmt.Sprintf("%d skipped", len(liveIDs))) {
		t.Fatalf("summary %q", summary)
	}
	if st := e.Fake.Stats(); st.MaxInFlight > bound || st.MaxInFlight < 1 {
		t.Fatalf("at most %d probes at the vendor at once, want 1..%d", st.MaxInFlight, bound)
	}

	// Spread: probes are placed over [start, tick start + 80% of the
	// interval); in its first tenth about a tenth of them, never a burst.
	probes, err := e.Store.RecentProbes(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	span := tickStart.Add(every * 8 / 10).Sub(start)
	var early int
	var last time.Time
	for id := range rt.Deployments {
		ps := probes[id]
		if liveIDs[id] {
			if len(ps) != 0 {
				t.Fatalf("skipped deployment %d has a recorded probe %+v", id, ps[0])
			}
			continue
		}
		if len(ps) != 1 {
			t.Fatalf("deployment %d: %d recorded probes", id, len(ps))
		}
		if ps[0].Outcome != store.ProbeOK {
			t.Fatalf("probe %+v", ps[0])
		}
		if ps[0].At.Before(start.Add(span / 10)) {
			early++
		}
		if ps[0].At.After(last) {
			last = ps[0].At
		}
	}
	if float64(early) > 0.2*float64(sent) {
		t.Fatalf("%d of %d probes in the first tenth of the %s spread: a burst", early, sent, span)
	}
	if last.Sub(start) < span/2 {
		t.Fatalf("last probe %s after the start of a %s spread", last.Sub(start), span)
	}

	// The Health page: the cost per deployment and in total, and why the
	// live ones were not probed.
	viewer := webtest.LoginAt(t, e.Store, e.URL, "watcher", store.RoleViewer)
	res, doc := viewer.Get("/health")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /health: %d", res.StatusCode)
	}
	total := webtest.TestID(doc, "health-probe-total")
	if got, want := strings.TrimSpace(total.Find(`[data-testid="health-probe-total-cost"]`).Text()), components.Money(sent*perProbe, "USD"); got != want {
		t.Fatalf("total probe cost %q, want %q", got, want)
	}
	if txt := total.Text(); !strings.Contains(txt, fmt.Sprintf("%d probes sent, %d skipped", sent, len(liveIDs))) {
		t.Fatalf("total %q", txt)
	}
	for id := range rt.Deployments {
		row := webtest.TestID(doc, "health-"+fmt.Sprint(id))
		cell := row.Find(`[data-testid="health-probe-cost"]`)
		counts := strings.TrimSpace(cell.Find("div").Text())
		cost := strings.TrimSpace(strings.TrimSuffix(cell.Text(), cell.Find("div").Text()))
		probed := row.Find(`[data-testid="health-probed"]`).Text()
		if liveIDs[id] {
			if !strings.Contains(probed, "skipped: live traffic") || cost != components.Money(0, "USD") || counts != "0 sent · 1 skipped" {
				t.Fatalf("live deployment %d: probed %q, cost %q, %q", id, probed, cost, counts)
			}
		} else if !strings.Contains(probed, "ok") || cost != components.Money(perProbe, "USD") || counts != "1 sent · 0 skipped" {
			t.Fatalf("deployment %d: probed %q, cost %q, %q", id, probed, cost, counts)
		}
	}

	// Without an interval every probe is due at once: the bound still holds
	// with the vendor slow enough for probes to pile up.
	e.Fake.SetRules(fakevendor.Rule{Key: "sk-vendor-key-0001", Fault: fakevendor.Fault{Latency: 10 * time.Millisecond}})
	e.Fake.Reset()
	w.Prober.Interval = 0
	if _, err := w.Prober.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if st := e.Fake.Stats(); st.Requests != int64(len(rt.Deployments)) || st.MaxInFlight > bound {
		t.Fatalf("all at once: %d probes, at most %d at the vendor at once (bound %d)", st.Requests, st.MaxInFlight, bound)
	}
}

// TestDownDeploymentIsProbedDespiteLiveSuccess: a down deployment gets no
// live traffic and comes back only through probes, so a live success
// recorded for it (a request in flight when it went down) does not save it
// a probe; a healthy one with a live success is skipped.
func TestDownDeploymentIsProbedDespiteLiveSuccess(t *testing.T) {
	e := gatewaytest.New(t)
	ctx := context.Background()
	_, _, alpha, beta := twoProviders(t, e)
	w := e.GW.AttachWorker(e.Store, gateway.WorkerOptions{Prefix: e.Prefix, ProbeEvery: time.Second, ProbeTimeout: 2 * time.Second, Health: testHealth})
	board := w.Tracker.Board()
	if err := board.Add(ctx, map[int64]health.Counts{alpha: {ProbeFailed: 3}}); err != nil {
		t.Fatal(err)
	}
	if _, states, err := board.Evaluate(ctx, []int64{alpha, beta}, nil); err != nil || states[alpha].State != health.Down {
		t.Fatalf("alpha %+v, %v", states[alpha], err)
	}
	if err := board.Add(ctx, map[int64]health.Counts{alpha: {OK: 1}, beta: {OK: 1}}); err != nil {
		t.Fatal(err)
	}
	e.Fake.Reset()
	summary, err := w.Prober.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := e.Fake.Count("fake-alpha"), e.Fake.Count("fake-beta"); a != 1 || b != 0 {
		t.Fatalf("probes: alpha (down) %d, beta (live success) %d; want 1, 0 (%s)", a, b, summary)
	}
}
