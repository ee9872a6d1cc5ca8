package handlers_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/record"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/webtest"
)

// usageJSON is the part of GET /admin/api/usage the test reads.
type usageJSON struct {
	Kind       string    `json:"kind"`
	Name       string    `json:"name"`
	Callers    []string  `json:"callers"`
	Now        time.Time `json:"now"`
	MonthStart time.Time `json:"month_start"`
	MonthEnd   time.Time `json:"month_end"`
	Spend      []struct {
		Currency          string `json:"currency"`
		MonthToDateMicros int64  `json:"month_to_date_micros"`
		BudgetMicros      int64  `json:"budget_micros"`
		ProjectedMicros   int64  `json:"projected_micros"`
	} `json:"spend"`
	CallersWithoutBudget int `json:"callers_without_budget"`
	TokensPerDay         []struct {
		Day              string `json:"day"`
		LogicModel       string `json:"logic_model"`
		PromptTokens     int64  `json:"prompt_tokens"`
		CompletionTokens int64  `json:"completion_tokens"`
	} `json:"tokens_per_day"`
	RequestsPerMinute []struct {
		Tier     string `json:"tier"`
		Requests int64  `json:"requests"`
		Rejected int64  `json:"rejected"`
	} `json:"requests_per_minute"`
	RPMLimits []struct {
		Tier string `json:"tier"`
		RPM  int64  `json:"rpm"`
	} `json:"rpm_limits"`
	TopLogicModels []struct {
		LogicModel string           `json:"logic_model"`
		Requests   int64            `json:"requests"`
		CostMicros map[string]int64 `json:"cost_micros"`
	} `json:"top_logic_models"`
}

// seedUsage makes tenant acme with callers web (10 USD budget, 60 RPM on
// fast) and batch (no budget, no limit), a caller of no tenant, and logs
// calls of each this minute.
func seedUsage(t *testing.T, env *webtest.Env) {
	t.Helper()
	ctx := t.Context()
	if _, err := env.Store.CreateTenant(ctx, config.Tenant{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.CreateRouteGroup(ctx, config.RouteGroup{Name: "main"}); err != nil {
		t.Fatal(err)
	}
	for _, cl := range []config.Caller{
		{Name: "web", Tenant: "acme", MonthlyBudgetMicros: 10_000_000, BudgetCurrency: "USD", Limits: []config.TierLimit{{Tier: config.TierFast, RPM: 60}}},
		{Name: "batch", Tenant: "acme"},
		{Name: "loner"},
	} {
		cl.RouteGroup, cl.PriorityClass, cl.Enabled = "main", config.ClassInteractive, true
		if _, err := env.Store.CreateCaller(ctx, cl); err != nil {
			t.Fatal(err)
		}
	}
	w, err := calllog.NewWriter(env.Store.DB(), calllog.WriterOptions{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i, c := range []struct {
		caller, model string
		status        record.Status
		cost          int64
	}{
		{"web", "small", calllog.StatusOK, 1_000_000}, {"web", "small", calllog.StatusOK, 2_000_000},
		{"web", "", calllog.StatusRejected, 0}, {"batch", "big", calllog.StatusOK, 5_000_000}, {"loner", "big", calllog.StatusOK, 40_000_000},
	} {
		r := calllog.Record{At: now, RequestID: "usage-" + itoa(int64(i)), Caller: c.caller, Tier: "fast", LogicModel: c.model, Status: c.status, HTTPStatus: 200}
		if c.status == calllog.StatusOK {
			p, out, cost := int64(100), int64(20), c.cost
			r.PromptTokens, r.CompletionTokens, r.CostMicros, r.Currency = &p, &out, &cost, "USD"
		} else {
			r.HTTPStatus = 429
		}
		w.Write(r)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// The admin API answers a caller's and a tenant's usage: the month's spend
// against the budget and its projection, tokens per day, the last hour per
// minute against the RPM limits, the top logic models; 400 without exactly
// one name, 404 for an unknown one.
func TestAPIUsage(t *testing.T) {
	env := webtest.New(t)
	seedUsage(t, env)
	api := newAPI(t, env, store.RoleViewer)
	get := func(q string, want int) usageJSON {
		t.Helper()
		code, body := api.do(http.MethodGet, "/usage"+q, nil)
		if code != want {
			t.Fatalf("GET /usage%s: %d, want %d: %s", q, code, want, body)
		}
		var u usageJSON
		if code == http.StatusOK {
			if err := json.Unmarshal(body, &u); err != nil {
				t.Fatal(err)
			}
		}
		return u
	}
	web := get("?caller=web", http.StatusOK)
	if web.Kind != "caller" || web.Name != "web" || len(web.Spend) != 1 {
		t.Fatalf("web = %+v", web)
	}
	s := web.Spend[0]
	want := calllog.Projection(3_000_000, web.MonthStart, web.MonthEnd, web.Now)
	if s.Currency != "USD" || s.MonthToDateMicros != 3_000_000 || s.BudgetMicros != 10_000_000 || s.ProjectedMicros != want || want < 3_000_000 {
		t.Errorf("web spend = %+v, want 3 USD of 10, projected %d", s, want)
	}
	if len(web.RPMLimits) != 1 || web.RPMLimits[0].Tier != "fast" || web.RPMLimits[0].RPM != 60 {
		t.Errorf("web limits = %+v, want fast 60", web.RPMLimits)
	}
	if len(web.RequestsPerMinute) != 1 || web.RequestsPerMinute[0].Requests != 3 || web.RequestsPerMinute[0].Rejected != 1 {
		t.Errorf("web minutes = %+v, want 3 requests, 1 refused", web.RequestsPerMinute)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	if len(web.TokensPerDay) != 1 || web.TokensPerDay[0].Day != today || web.TokensPerDay[0].PromptTokens != 200 || web.TokensPerDay[0].CompletionTokens != 40 {
		t.Errorf("web tokens per day = %+v", web.TokensPerDay)
	}
	if len(web.TopLogicModels) != 1 || web.TopLogicModels[0].LogicModel != "small" || web.TopLogicModels[0].Requests != 2 {
		t.Errorf("web models = %+v", web.TopLogicModels)
	}

	acme := get("?tenant=acme", http.StatusOK)
	if strings.Join(acme.Callers, ",") != "batch,web" || acme.CallersWithoutBudget != 1 || len(acme.RPMLimits) != 0 {
		t.Errorf("acme = callers %v, %d without budget, limits %+v", acme.Callers, acme.CallersWithoutBudget, acme.RPMLimits)
	}
	if len(acme.Spend) != 1 || acme.Spend[0].MonthToDateMicros != 8_000_000 || acme.Spend[0].BudgetMicros != 10_000_000 {
		t.Errorf("acme spend = %+v, want web's and batch's 8 USD, not loner's", acme.Spend)
	}
	if len(acme.TopLogicModels) != 2 || acme.TopLogicModels[0].LogicModel != "big" {
		t.Errorf("acme models = %+v, want big (5 USD) before small (3 USD)", acme.TopLogicModels)
	}

	get("", http.StatusBadRequest)
	get("?caller=web&tenant=acme", http.StatusBadRequest)
	get("?caller=nobody", http.StatusNotFound)
	get("?tenant=nobody", http.StatusNotFound)
}

// The Usage page draws the same: the spend bar with the budget, a bar per
// day with tokens, the last hour's chart with the limit, the models table.
func TestUsagePage(t *testing.T) {
	env := webtest.New(t)
	seedUsage(t, env)
	viewer := env.Login(t, "watcher", store.RoleViewer)
	res, doc := viewer.Get("/usage?caller=web")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if got := webtest.TestID(doc, "spend-month-to-date").Text(); got != "3 USD" {
		t.Errorf("spent %q, want 3 USD", got)
	}
	if got := webtest.TestID(doc, "spend-budget").Text(); got != "10 USD" {
		t.Errorf("budget %q, want 10 USD", got)
	}
	if webtest.TestID(doc, "spend-bar").Length() != 1 || webtest.TestID(doc, "spend-marker").Length() != 1 {
		t.Error("no spend bar with its projection marker")
	}
	if n := webtest.TestID(doc, "token-bar").Length(); n != 1 {
		t.Errorf("%d token bars, want today's one", n)
	}
	if n := webtest.TestID(doc, "token-day").Length(); n != 30 {
		t.Errorf("%d days on the token chart, want 30", n)
	}
	rpm := webtest.TestID(doc, "usage-rpm-chart")
	if rpm.Find(`g[data-series="fast"] circle`).Length() != 60 || rpm.Find(`g[data-series="fast RPM limit"] path[stroke-dasharray]`).Length() != 1 {
		t.Error("the requests-per-minute chart lacks fast's 60 minutes or its dashed limit")
	}
	if got := webtest.TestID(doc, "usage-model-row").AttrOr("data-logic-model", ""); got != "small" {
		t.Errorf("top model %q", got)
	}
	if !strings.Contains(webtest.TestID(doc, "usage-projection-formula").Text(), "divided by the time elapsed") {
		t.Error("the page does not explain the projection")
	}
	res, doc = viewer.Get("/usage?tenant=nobody")
	if res.StatusCode != http.StatusNotFound || webtest.TestID(doc, "usage-body").Find(`[data-testid="empty"]`).Length() != 1 {
		t.Errorf("unknown tenant: status %d", res.StatusCode)
	}
}
