package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/store"
)

// A route group whose deep tier's only candidate is parked answers 503
// no_available_model to every deep request. Health says so first (the
// group × tier unservable, with the reason), the overview draws the tier
// red with its error rate counting those 503s by cause, the navigation
// carries a red badge, and the dashboard's error rate for the tier is
// 100 % under no_available_model, with per-minute points for the last hour
// and queue panels that do not say "no calls" beside calls.
func TestUnservableTierIsRedEverywhere(t *testing.T) {
	t.Parallel()
	f := furnish(t)
	ctx := context.Background()
	key := f.parkedDeepGroup(t, ctx)
	var ids []string
	ids = append(ids, f.chatAs(t, key, "deep", http.StatusServiceUnavailable))
	for range 3 {
		ids = append(ids, f.chatAs(t, key, "deep", http.StatusServiceUnavailable))
	}
	ids = append(ids, f.chatAs(t, key, "fast", http.StatusOK))
	waitCallLogs(t, f.s, ids...)

	u := &ui{t: t, p: pageAt(t, 1280), base: f.s.URL}
	u.login("admin", f.s.Admin)

	u.goto_("/health")
	row := u.id("servability-night-deep")
	u.see(row, "the night × deep verdict")
	if v, _ := row.GetAttribute("data-verdict"); v != "unservable" {
		t.Errorf("health: night × deep is %q, want unservable", v)
	}
	why := row.GetByTestId("servability-why")
	if r, _ := why.GetAttribute("data-reasons"); r != "candidate_parked" {
		t.Errorf("health: reasons %q, want candidate_parked", r)
	}
	if txt := u.text(why, "why"); !strings.Contains(txt, "candidate(s) parked") || !strings.Contains(txt, "503 no_available_model") {
		t.Errorf("health: the reason reads %q", txt)
	}
	// Fast serves (degraded: vendor-b's only key is quarantined).
	if v, _ := u.id("servability-night-fast").GetAttribute("data-verdict"); v != "degraded" {
		t.Errorf("health: night × fast is %q, want degraded", v)
	}
	if r, _ := u.id("servability-night-fast").GetByTestId("servability-why").GetAttribute("data-reasons"); r != "keys_quarantined" {
		t.Errorf("health: night × fast degraded for %q, want keys_quarantined", r)
	}
	// The group × tier table comes before the deployments.
	if first := u.eval(`() => { const a = document.querySelector('[data-testid="health-tiers"]'), b = document.querySelector('[data-testid="health-table"]'); return !!(a && b && (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING)); }`); first != true {
		t.Error("health: the route group × tier table is not first")
	}
	u.see(u.id("nav-health").GetByTestId("nav-unservable"), "the red badge beside Health")

	u.goto_("/")
	card := u.id("overview-tier-night-deep")
	u.see(card, "the overview card of night × deep")
	if v, _ := card.GetAttribute("data-verdict"); v != "unservable" {
		t.Errorf("overview: night × deep is %q, want unservable", v)
	}
	if cls, _ := card.GetByTestId("verdict-badge").GetAttribute("class"); !strings.Contains(cls, "bad") {
		t.Errorf("overview: the verdict badge is %q, not red", cls)
	}
	if p, _ := card.GetByTestId("overview-errors").GetAttribute("data-percent"); p != "100%" {
		t.Errorf("overview: night × deep errors %q, want 100%%", p)
	}
	if c, _ := card.GetByTestId("overview-cause").GetAttribute("data-cause"); c != "no_available_model" {
		t.Errorf("overview: cause %q", c)
	}
	if p, _ := u.id("overview-tier-night-fast").GetByTestId("overview-errors").GetAttribute("data-percent"); p != "0%" {
		t.Errorf("overview: night × fast errors %q, want 0%%", p)
	}
	u.see(u.id("overview-chart-errors").GetByTestId("chart-svg"), "the overview's error chart")

	u.goto_("/dashboard?range=1h&group=tier")
	if w := u.text(u.id("dashboard-window"), "window"); !strings.Contains(w, "per-minute points") {
		t.Errorf("dashboard: last hour reads %q, want per-minute points", w)
	}
	cause := u.p.Locator(`[data-testid="error-cause"][data-group="night"][data-tier="deep"][data-cause="no_available_model"]`)
	if got := strings.TrimSpace(u.text(cause.GetByTestId("error-cause-rate"), "deep's cause rate")); got != "100%" {
		t.Errorf("dashboard: night × deep no_available_model %q, want 100%%", got)
	}
	// Per-minute points: the requests chart spans about 60 steps, so its
	// x axis reads minutes; the deep tier's error line (every group's deep:
	// main's served the seed's request) is drawn for this minute.
	dots, _ := u.id("chart-errors").Locator(`g[data-series="deep"] circle title`).AllTextContents()
	if len(dots) == 0 || strings.HasSuffix(dots[len(dots)-1], ": 0%") {
		t.Errorf("dashboard: deep's error dots %q", dots)
	}
	if n := u.eval(`() => new Set([...document.querySelectorAll('[data-testid="chart-requests"] svg text')].map(t => t.textContent).filter(s => /^\d\d:\d\d$/.test(s))).size >= 4`); n != true {
		t.Errorf("dashboard: fewer than 4 minute labels on the requests chart")
	}
	for _, id := range []string{"chart-queue-depth"} {
		if n, _ := u.id(id).GetByTestId("chart-empty").Count(); n != 0 {
			t.Errorf("dashboard: %s says no calls beside calls", id)
		}
	}
	if txt := u.text(u.id("chart-queue-wait"), "queue wait"); strings.Contains(txt, "No calls in this range") {
		t.Errorf("dashboard: the queue wait panel reads %q", txt)
	}
}

// parkedDeepGroup publishes route group night (fast and standard served
// by chat-main, deep's only candidate parked, acknowledged) with caller
// nightly, and returns nightly's key.
func (f *furnished) parkedDeepGroup(t *testing.T, ctx context.Context) string {
	t.Helper()
	st := f.st
	if _, err := st.CreateRouteGroup(ctx, config.RouteGroup{Name: "night", Description: "deep parked"}); err != nil {
		t.Fatal(err)
	}
	snap, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range snap.RouteGroups {
		if g.Name != "night" {
			continue
		}
		for _, tr := range g.Tiers {
			w := 100
			if tr.Name == config.TierDeep {
				w = 0
			}
			if _, err := st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: "chat-main", Weight: w}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := st.CreateCaller(ctx, config.Caller{Name: "nightly", RouteGroup: "night", PriorityClass: config.ClassNormal, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	key, _, err := st.CreateCallerKey(ctx, "nightly", "e2e", "seed")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "seed", Message: "night, deep parked",
		Check:       func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) },
		Acknowledge: []config.Ack{{RouteGroup: "night", Tier: config.TierDeep}}}); err != nil {
		t.Fatal(err)
	}
	return key
}

// chatAs sends one chat request for model with key, retrying until the
// server serves the latest version (the key is known), and wants the
// status; it returns the request id.
func (f *furnished) chatAs(t *testing.T, key, model string, want int) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodPost, f.s.URL+"/v1/chat/completions", strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hello"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == want {
			return res.Header.Get("X-Request-Id")
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s request answered %d, want %d", model, res.StatusCode, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
