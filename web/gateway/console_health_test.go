package gateway_test

import (
	"context"
	"database/sql"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"switchyard/handlers"
	"switchyard/handlers/httpx"
	"switchyard/routing"
	"switchyard/routing/adapter"
	"switchyard/routing/breaker"
	"switchyard/routing/config"
	"switchyard/routing/health"
	"switchyard/routing/reason"
	"switchyard/store"
	"switchyard/store/redis/healthboard"
	"switchyard/store/redis/keypool"
	"switchyard/web/gateway/gatewaytest"
	"switchyard/web/webtest"
)

// workerPages makes sure env serves the Health and Jobs pages. Once
// web/routes.go calls workerRoutes the real route table serves them; until
// then they are mounted here behind the same session, CSRF and role checks.
func workerPages(t *testing.T, env *webtest.Env) {
	t.Helper()
	e := env.Server.Config.Handler.(*echo.Echo)
	for _, r := range e.Routes() {
		if r.Method == http.MethodGet && r.Path == "/health" {
			return
		}
	}
	t.Log("web/routes.go does not call workerRoutes yet: mounting the worker pages for this test")
	h := env.Handler
	user := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx := c.Request().Context()
			u, err := env.Store.UserByID(ctx, h.Sessions.GetInt64(ctx, handlers.SessionUserKey))
			if err != nil {
				return c.Redirect(http.StatusSeeOther, "/login")
			}
			httpx.SetPrincipal(c, httpx.Principal{UserID: u.ID, Name: u.Username, Role: u.Role})
			if c.Request().Method != http.MethodGet && u.Role != store.RoleAdmin {
				return echo.NewHTTPError(http.StatusForbidden, "Viewers cannot change anything.")
			}
			return next(c)
		}
	}
	g := e.Group("", echo.WrapMiddleware(h.Sessions.LoadAndSave), middleware.CSRFWithConfig(middleware.CSRFConfig{
		TokenLookup: "header:X-CSRF-Token,form:_csrf", CookieName: "switchyard_csrf", CookiePath: "/", CookieHTTPOnly: true, CookieSameSite: http.SameSiteStrictMode,
	}), user)
	g.GET("/health", h.HealthPage)
	g.GET("/jobs", h.JobsPage)
	g.POST("/jobs/:name/run", h.JobRunNow)
}

// liveOps is the console's view of a live configuration and the shared
// runtime state the Health page reads (breakers, loads, key states).
type liveOps struct {
	handlers.Ops
	rt       *config.Runtime
	breakers map[string]map[int64]breaker.Status
	keys     map[int64]keypool.KeyState
}

func (o liveOps) Runtime() *config.Runtime { return o.rt }

// State is the instance's runtime state: nothing beyond the shared states
// above (the route group × tier verdicts read it).
func (o liveOps) State() *routing.State { return &routing.State{} }
func (o liveOps) Breakers(context.Context) (map[string]map[int64]breaker.Status, error) {
	return o.breakers, nil
}
func (o liveOps) Loads(context.Context) (map[int64]int64, error) { return nil, nil }
func (o liveOps) KeyStates(context.Context) (map[int64]keypool.KeyState, error) {
	return o.keys, nil
}

func runtimeWith(deps ...*config.RDeployment) *config.Runtime {
	rt := &config.Runtime{Version: 1, Deployments: map[int64]*config.RDeployment{}}
	for _, d := range deps {
		rt.Deployments[d.ID] = d
	}
	return rt
}

var readsHealthy = regexp.MustCompile(`\bhealthy\b`)

func TestHealthPage(t *testing.T) {
	t.Parallel()
	rdb, prefix := gatewaytest.NewRedis(t)
	board := healthboard.NewBoard(rdb, prefix, health.Settings{MinSamples: 3})
	tracker := healthboard.NewTracker(board, healthboard.TrackerOptions{})
	small := &config.RModel{Code: "small", Kind: config.KindChat}
	spare := &config.RModel{Code: "spare", Kind: config.KindChat}
	alpha := &config.RProvider{Name: "alpha", Enabled: true, ActiveKey: []int64{1}}
	beta := &config.RProvider{Name: "beta", Enabled: true, ActiveKey: []int64{2}}
	gamma := &config.RProvider{ID: 7, Name: "gamma", Enabled: true, ActiveKey: []int64{3}, Keys: []config.RKey{{ID: 3, Label: "only", Fingerprint: "sk-…ab12"}}}
	rt := runtimeWith(
		&config.RDeployment{ID: 11, Model: small, Provider: alpha, UpstreamModel: "fake-alpha", Weight: 50, Enabled: true},
		&config.RDeployment{ID: 12, Model: small, Provider: beta, UpstreamModel: "fake-beta", Weight: 50, Enabled: true},
		&config.RDeployment{ID: 13, Model: spare, Provider: beta, UpstreamModel: "fake-spare", Weight: 100, Enabled: false, StaticSkip: reason.Of(reason.DisabledByOperator)},
		&config.RDeployment{ID: 14, Model: spare, Provider: gamma, UpstreamModel: "fake-gamma", Weight: 100, Enabled: true},
		&config.RDeployment{ID: 15, Model: spare, Provider: beta, UpstreamModel: "fake-flaky", Weight: 100, Enabled: true},
	)
	ops := liveOps{rt: rt,
		// Gamma's only key was refused with a 401; fake-flaky's breaker is
		// open on one of two instances.
		keys: map[int64]keypool.KeyState{3: {Status: keypool.StatusQuarantined, Fault: &routing.KeyFault{Class: adapter.ClassAuth, Status: 401, Detail: "invalid api key"}}},
		breakers: map[string]map[int64]breaker.Status{
			"api-1": {15: {State: breaker.Open}, 12: {State: breaker.Closed}},
			"api-2": {15: {State: breaker.Closed}},
		},
	}
	env := webtest.New(t, func(h *handlers.Handler) {
		h.Health = tracker
		h.Ops = ops
	})
	workerPages(t, env)
	ctx := context.Background()

	// Alpha failed three probes and went down; beta is fine.
	if err := board.Add(ctx, map[int64]health.Counts{11: {ProbeFailed: 3}, 12: {OK: 40, ProbeOK: 3}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := board.Evaluate(ctx, []int64{11, 12, 13, 14, 15}, map[int64]health.Probe{11: health.ProbeFailed, 12: health.ProbePassed}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := env.Store.AddProbes(ctx, []store.Probe{
		{DeploymentID: 11, At: now.Add(-time.Second), Outcome: store.ProbeFailed, LatencyMS: 12, Class: "server", HTTPStatus: 500, Message: "server (HTTP 500): overloaded"},
		{DeploymentID: 12, At: now, Outcome: store.ProbeOK, LatencyMS: 3},
	}); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.AddHealthEvents(ctx, []store.HealthEvent{{DeploymentID: 11, At: now, From: "healthy", To: "down",
		Score: sql.NullFloat64{Float64: 0, Valid: true}, Samples: 3, Reason: "score 0% over the last 5m0s (3 samples) is below 50%"}}); err != nil {
		t.Fatal(err)
	}

	viewer := env.Login(t, "watcher", store.RoleViewer)
	res, doc := viewer.Get("/health")
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "nav").Length() != 1 {
		t.Fatalf("GET /health: %d", res.StatusCode)
	}
	if webtest.TestID(doc, "health-rules").Length() != 1 || webtest.TestID(doc, "health-table").Length() != 1 {
		t.Fatal("no rules or table")
	}
	row := webtest.TestID(doc, "health-11")
	if got := strings.TrimSpace(row.Find(`[data-testid="health-state"]`).Text()); got != "down" {
		t.Fatalf("alpha state %q", got)
	}
	if got := strings.TrimSpace(row.Find(`[data-testid="health-score"]`).Text()); got != "0%" {
		t.Fatalf("alpha score %q", got)
	}
	if got := row.Find(`[data-testid="health-probed"]`).Text(); !strings.Contains(got, "failed") {
		t.Fatalf("alpha last probe %q", got)
	}
	row = webtest.TestID(doc, "health-12")
	if got := strings.TrimSpace(row.Find(`[data-testid="health-state"]`).Text()); got != "healthy" {
		t.Fatalf("beta state %q", got)
	}
	if got := row.Find(`[data-testid="health-samples"]`).Text(); !strings.Contains(got, "live 40 ok") || !strings.Contains(got, "probes 3 ok") {
		t.Fatalf("beta samples %q", got)
	}
	if got := webtest.TestID(doc, "health-13").Find(`[data-testid="health-probed"]`).Text(); !strings.Contains(got, "not probed: deployment disabled") {
		t.Fatalf("disabled deployment %q", got)
	}

	// Servability first: what cannot serve says so and why, in the row;
	// nothing that cannot serve reads "healthy".
	for _, c := range []struct {
		id            string
		serving, word string
		why           []string
	}{
		{"health-11", "no", "unhealthy", []string{"Down by health score", "below 50%"}},
		{"health-12", "yes", "serving", nil},
		{"health-13", "no", "disabled", []string{"Disabled by an operator"}},
		{"health-14", "no", "no usable key", []string{"Its only key, only (sk-…ab12), is quarantined", "unauthorised (HTTP 401)"}},
		{"health-15", "no", "breaker open", []string{"open on 1 of 2 instance"}},
	} {
		row := webtest.TestID(doc, c.id)
		if got, _ := row.Attr("data-serving"); got != c.serving {
			t.Errorf("%s data-serving %q, want %q", c.id, got, c.serving)
		}
		cell := row.Find(`[data-testid="health-serving"]`)
		if got := strings.TrimSpace(cell.Find(`[data-testid="badge"]`).First().Text()); got != c.word {
			t.Errorf("%s serving badge %q, want %q", c.id, got, c.word)
		}
		for _, w := range c.why {
			if !strings.Contains(cell.Text(), w) {
				t.Errorf("%s: %q does not say %q", c.id, cell.Text(), w)
			}
		}
		if c.serving == "no" && readsHealthy.MatchString(row.Text()) {
			t.Errorf("%s cannot serve but reads healthy: %q", c.id, row.Text())
		}
	}
	if got := webtest.TestID(doc, "health-14").Find(`[data-testid="health-why"] a`).AttrOr("href", ""); got != "/providers" {
		t.Errorf("the quarantined key's fix links to %q", got)
	}
	if got := webtest.TestID(doc, "health-summary").Text(); !strings.Contains(got, "1 serving") || !strings.Contains(got, "4 cannot serve") {
		t.Errorf("summary %q", got)
	}
	detail := webtest.TestID(doc, "health-detail-11")
	probe := detail.Find(`[data-testid="probe"]`)
	if probe.Length() != 1 || !strings.Contains(probe.Text(), "server") || !strings.Contains(probe.Text(), "HTTP 500") || !strings.Contains(probe.Text(), "12 ms") {
		t.Fatalf("alpha probes %q", probe.Text())
	}
	ev := detail.Find(`[data-testid="health-event"]`)
	if ev.Length() != 1 || !strings.Contains(ev.Text(), "healthy") || !strings.Contains(ev.Text(), "down") || !strings.Contains(ev.Text(), "below 50%") {
		t.Fatalf("alpha history %q", ev.Text())
	}
	if webtest.TestID(doc, "health-detail-13").Find(`[data-testid="no-probes"]`).Length() != 1 {
		t.Fatal("the disabled deployment shows probes")
	}

	// htmx refresh: the summary fragment alone.
	viewer.HTMX = true
	res, doc = viewer.Get("/health")
	if res.StatusCode != http.StatusOK || webtest.TestID(doc, "nav").Length() != 0 || webtest.TestID(doc, "health-board").Length() != 1 || webtest.TestID(doc, "health-11").Length() != 1 {
		t.Fatalf("fragment: %d", res.StatusCode)
	}
	viewer.HTMX = false

	// An instance without a tracker or a live version says so.
	env.Handler.Health, env.Handler.Ops = nil, nil
	_, doc = viewer.Get("/health")
	if webtest.TestID(doc, "health-not-tracking").Length() != 1 || webtest.TestID(doc, "empty").Length() != 1 {
		t.Fatal("no notice without a tracker and a live version")
	}
}
