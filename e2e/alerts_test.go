package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/routing/alert"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
)

// hookReceiver is a webhook receiver: it keeps every message by path.
type hookReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	msgs map[string][][]byte
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{msgs: map[string][][]byte{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.msgs[r.URL.Path] = append(h.msgs[r.URL.Path], b)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

// generic are the generic messages of rule kind k with status ev.
func (h *hookReceiver) generic(t *testing.T, k alert.Kind, ev alert.Event) []alert.Payload {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []alert.Payload
	for _, b := range h.msgs["/generic"] {
		var p alert.Payload
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("generic message %s: %v", b, err)
		}
		if p.Rule == k && p.Status == ev {
			out = append(out, p)
		}
	}
	return out
}

// slack are the Slack messages' texts containing s.
func (h *hookReceiver) slack(t *testing.T, s string) []string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, b := range h.msgs["/slack"] {
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil || m["text"] == "" {
			t.Fatalf("slack message %s: %v", b, err)
		}
		if strings.Contains(m["text"], s) {
			out = append(out, m["text"])
		}
	}
	return out
}

// alertsSeed is an installation for the alert tests: route group main with
// fast and standard served by chat and deep by chat-deep (dep-deep), caller
// app with a monthly budget far away, and two webhook channels (generic
// and Slack) to the receiver.
type alertsSeed struct {
	st             *store.Store
	s              *Server
	key            string
	app, depDeep   int64
	unservableRule alert.Rule
}

func seedAlerts(t *testing.T, hooks *hookReceiver) *alertsSeed {
	t.Helper()
	ctx := context.Background()
	dsn := storetest.NewDatabase(t)
	k, _ := secrets.ParseKey(storetest.TestKey)
	sealer, _ := secrets.NewSealer(k)
	st, err := store.Open(ctx, dsn, sealer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(); err != nil {
		t.Fatal(err)
	}
	must := func(id int64, err error) int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := &alertsSeed{st: st}
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	waitHealthy(t, "http://"+fakeAddr+"/_fake/stats", nil)
	usd := config.Prices{InputMicros: 2_500_000, OutputMicros: 10_000_000, Currency: "USD"}
	p := must(st.CreateProvider(ctx, config.Provider{Name: "vendor", Protocol: config.ProtocolOpenAI, BaseURL: "http://" + fakeAddr + "/v1", Enabled: true, TimeoutMS: 30000}))
	if _, err := st.AddProviderKey(ctx, p, "primary", "sk-vendor-key-000001"); err != nil {
		t.Fatal(err)
	}
	chat := must(st.CreateLogicModel(ctx, config.LogicModel{Code: "chat", Kind: config.KindChat}))
	must(st.CreateDeployment(ctx, chat, config.Deployment{Provider: "vendor", UpstreamModel: "fake-a", Weight: 100, Enabled: true, Prices: usd}))
	deep := must(st.CreateLogicModel(ctx, config.LogicModel{Code: "chat-deep", Kind: config.KindChat}))
	a.depDeep = must(st.CreateDeployment(ctx, deep, config.Deployment{Provider: "vendor", UpstreamModel: "fake-deep", Weight: 100, Enabled: true, Prices: usd}))
	must(st.CreateRouteGroup(ctx, config.RouteGroup{Name: "main"}))
	snap, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range snap.RouteGroups[0].Tiers {
		switch tr.Name {
		case config.TierFast, config.TierStandard:
			must(st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: "chat", Weight: 100}))
		case config.TierDeep:
			must(st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: "chat-deep", Weight: 100}))
		}
	}
	a.app = must(st.CreateCaller(ctx, config.Caller{Name: "app", RouteGroup: "main", PriorityClass: config.ClassNormal, Enabled: true,
		MonthlyBudgetMicros: 1_000_000_000_000, BudgetCurrency: "USD"}))
	if a.key, _, err = st.CreateCallerKey(ctx, "app", "e2e", "e2e"); err != nil {
		t.Fatal(err)
	}
	a.publish(t, "seed")
	rules, err := st.AlertRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.Kind == alert.KindTierUnservable {
			r.For = 3 * time.Second // the default 30 s, shortened for the test
			if err := st.UpdateAlertRule(ctx, r); err != nil {
				t.Fatal(err)
			}
			a.unservableRule = r
		}
	}
	must(st.CreateAlertChannel(ctx, "generic", alert.ShapeGeneric, hooks.URL+"/generic"))
	must(st.CreateAlertChannel(ctx, "slack", alert.ShapeSlack, hooks.URL+"/slack"))
	if _, err := st.CreateUser(ctx, "admin", adminPassword, store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	a.s = startServer(t, dsn, "SWITCHYARD_ALERT_INTERVAL=1s")
	return a
}

func (a *alertsSeed) publish(t *testing.T, msg string, acks ...config.Ack) {
	t.Helper()
	if _, err := a.st.Publish(context.Background(), store.PublishInput{Author: "seed", Message: msg,
		Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }, Acknowledge: acks}); err != nil {
		t.Fatal(err)
	}
}

// chat sends one standard request as app and returns its cost in micros.
func (a *alertsSeed) chat(t *testing.T) int64 {
	t.Helper()
	f := &furnished{s: a.s}
	id := f.chatAs(t, a.key, "standard", http.StatusOK)
	waitCallLogs(t, a.s, id)
	var cost int64
	if err := a.s.sql(t).QueryRow(`SELECT cost_micros FROM call_logs WHERE request_id = $1`, id).Scan(&cost); err != nil {
		t.Fatal(err)
	}
	return cost
}

// A route group × tier made unservable (its only deployment disabled) fires
// within the rule's window, to both webhooks, exactly once, and the
// overview lists it; fixed, it resolves exactly once. A caller's spend
// crossing 80 % of its budget fires once, not again on the evaluations
// that follow, and the 100 % rule (the same kind) does not fire.
func TestAlertsReachWebhooksOnce(t *testing.T) {
	t.Parallel()
	hooks := newHookReceiver(t)
	a := seedAlerts(t, hooks)
	ctx := context.Background()
	a.chat(t) // served: the instance runs the seeded version

	// Unservable.
	if err := a.st.SetDeploymentEnabled(ctx, a.depDeep, false); err != nil {
		t.Fatal(err)
	}
	a.publish(t, "deep's only deployment off", config.Ack{RouteGroup: "main", Tier: config.TierDeep})
	published := time.Now()
	waitFor(t, 20*time.Second, "firing message", func() bool {
		return len(hooks.generic(t, alert.KindTierUnservable, alert.EventFiring)) > 0
	})
	if took := time.Since(published); took < a.unservableRule.For {
		t.Errorf("fired after %s, before the rule's %s", took, a.unservableRule.For)
	}
	waitFor(t, 10*time.Second, "Slack firing message", func() bool { return len(hooks.slack(t, "main/deep is unservable")) > 0 })
	time.Sleep(3 * time.Second) // three more evaluations
	if got := hooks.generic(t, alert.KindTierUnservable, alert.EventFiring); len(got) != 1 || got[0].Subject.Name != "main/deep" {
		t.Fatalf("firing messages: %+v", got)
	}
	if got := hooks.slack(t, "main/deep"); len(got) != 1 {
		t.Fatalf("Slack messages: %q", got)
	}
	// The overview lists it under Firing alerts.
	u := &ui{t: t, p: pageAt(t, 1280), base: a.s.URL}
	u.login("admin", a.s.Admin)
	u.goto_("/")
	li := u.id("overview-firing-tier_unservable")
	u.see(li, "the firing alert on the overview")
	if s, _ := li.GetAttribute("data-subject"); s != "main/deep" {
		t.Errorf("overview: firing alert about %q", s)
	}
	if err := a.st.SetDeploymentEnabled(ctx, a.depDeep, true); err != nil {
		t.Fatal(err)
	}
	a.publish(t, "deep back")
	waitFor(t, 20*time.Second, "resolved message", func() bool {
		return len(hooks.generic(t, alert.KindTierUnservable, alert.EventResolved)) > 0
	})
	time.Sleep(3 * time.Second)
	res := hooks.generic(t, alert.KindTierUnservable, alert.EventResolved)
	if len(res) != 1 || len(hooks.generic(t, alert.KindTierUnservable, alert.EventFiring)) != 1 {
		t.Fatalf("resolved messages: %+v", res)
	}
	if got := hooks.slack(t, "main/deep"); len(got) != 2 || !strings.Contains(got[1], "Resolved") {
		t.Fatalf("Slack messages: %q", got)
	}

	// Budget: app has made two requests this month; a new budget puts them
	// at 60 %, and the third crosses 80 % (to 90 %).
	cost := a.chat(t)
	if cost <= 0 {
		t.Fatalf("a request cost %d micros", cost)
	}
	c := withBudget(t, a.st, "app", cost*10/3)
	if err := a.st.UpdateCaller(ctx, a.app, c); err != nil {
		t.Fatal(err)
	}
	a.publish(t, "app's budget")
	time.Sleep(3 * time.Second)
	if got := hooks.generic(t, alert.KindBudget, alert.EventFiring); len(got) != 0 {
		t.Fatalf("budget messages at 60 %%: %+v", got)
	}
	a.chat(t)
	waitFor(t, 10*time.Second, "budget message", func() bool { return len(hooks.generic(t, alert.KindBudget, alert.EventFiring)) > 0 })
	time.Sleep(3 * time.Second)
	if got := hooks.generic(t, alert.KindBudget, alert.EventFiring); len(got) != 1 || got[0].Subject.Name != "app" || got[0].Value < 80 || got[0].Value >= 100 {
		t.Fatalf("budget messages after crossing 80 %%: %+v", got)
	}
	time.Sleep(3 * time.Second)
	if got := hooks.generic(t, alert.KindBudget, alert.EventFiring); len(got) != 1 {
		t.Fatalf("budget messages three evaluations later: %+v", got)
	}
}

// withBudget is the stored caller with a monthly budget of micros.
func withBudget(t *testing.T, st *store.Store, name string, micros int64) config.Caller {
	t.Helper()
	snap, _, err := st.Draft(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range snap.Callers {
		if c.Name == name {
			c.MonthlyBudgetMicros = config.Micros(micros)
			return c
		}
	}
	t.Fatalf("no caller %s", name)
	return config.Caller{}
}
