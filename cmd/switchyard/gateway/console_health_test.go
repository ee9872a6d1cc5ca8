package gateway_test

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"switchyard/cmd/switchyard/gateway/gatewaytest"
	"switchyard/handlers"
	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/routing/health"
	"switchyard/routing/reason"
	"switchyard/store"
	"switchyard/store/redis/healthboard"
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

// liveOps is the console's view of a live configuration (only Runtime is
// read by the Health page).
type liveOps struct {
	handlers.Ops
	rt *config.Runtime
}

func (o liveOps) Runtime() *config.Runtime { return o.rt }

func runtimeWith(deps ...*config.RDeployment) *config.Runtime {
	rt := &config.Runtime{Version: 1, Deployments: map[int64]*config.RDeployment{}}
	for _, d := range deps {
		rt.Deployments[d.ID] = d
	}
	return rt
}

func TestHealthPage(t *testing.T) {
	rdb, prefix := gatewaytest.NewRedis(t)
	board := healthboard.NewBoard(rdb, prefix, health.Settings{MinSamples: 3})
	tracker := healthboard.NewTracker(board, healthboard.TrackerOptions{})
	small := &config.RModel{Code: "small", Kind: config.KindChat}
	spare := &config.RModel{Code: "spare", Kind: config.KindChat}
	alpha := &config.RProvider{Name: "alpha", Enabled: true, ActiveKey: []int64{1}}
	beta := &config.RProvider{Name: "beta", Enabled: true, ActiveKey: []int64{2}}
	rt := runtimeWith(
		&config.RDeployment{ID: 11, Model: small, Provider: alpha, UpstreamModel: "fake-alpha", Weight: 50, Enabled: true},
		&config.RDeployment{ID: 12, Model: small, Provider: beta, UpstreamModel: "fake-beta", Weight: 50, Enabled: true},
		&config.RDeployment{ID: 13, Model: spare, Provider: beta, UpstreamModel: "fake-spare", Weight: 100, Enabled: false, StaticSkip: reason.Of(reason.DisabledByOperator)},
	)
	env := webtest.New(t, func(h *handlers.Handler) {
		h.Health = tracker
		h.Ops = liveOps{rt: rt}
	})
	workerPages(t, env)
	ctx := context.Background()

	// Alpha failed three probes and went down; beta is fine.
	if err := board.Add(ctx, map[int64]health.Counts{11: {ProbeFailed: 3}, 12: {OK: 40, ProbeOK: 3}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := board.Evaluate(ctx, []int64{11, 12, 13}, map[int64]health.Probe{11: health.ProbeFailed, 12: health.ProbePassed}); err != nil {
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
