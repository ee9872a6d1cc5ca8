package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"switchyard/handlers"
	"switchyard/handlers/httpx"
	"switchyard/routing/config/onboarding"
)

// routes lists every route of the server, grouped by audience and, within
// the console, in the order of the navigation.
func (s *Server) routes(opts Options) {
	e, h := s.Echo, s.h

	// Every handler recovers from its own panics (see recovering): the
	// routes below are wrapped one by one, the groups' chains start with it.
	r := s.recovering
	e.GET("/healthz", r(s.healthz))
	e.GET("/readyz", r(s.readyz))
	e.GET("/static/*", r(staticHandler()))
	e.GET("/favicon.ico", r(favicon))
	if opts.Metrics != nil {
		e.GET("/metrics", r(echo.WrapHandler(opts.Metrics)))
	}

	// Data plane: OpenAI-compatible API for callers. No session, no CSRF,
	// no gzip or timeout middleware (streams are flushed per event).
	if dp := s.dp; dp != nil {
		v1 := e.Group("/v1")
		v1.POST("/chat/completions", r(dp.ChatCompletions))
		v1.POST("/messages", r(dp.Messages))
		v1.POST("/messages/count_tokens", r(dp.CountTokens))
		v1.POST("/responses", r(dp.Responses))
		v1.Any("/responses/*", r(dp.StoredResponse))
		v1.POST("/embeddings", r(dp.Embeddings))
		v1.GET("/models", r(dp.Models))
		v1.GET("/models/:id", r(dp.Model))
		v1.Any("/*", r(dp.NotFound))
	}

	// Console: server-rendered pages behind a session. Viewers may read;
	// requireUser refuses their POSTs with 403.
	pub := e.Group("", s.consoleChain(opts)...)
	pub.GET("/login", h.LoginPage)
	pub.POST("/login", h.Login)
	pub.POST("/logout", h.Logout)

	con := e.Group("", append(s.consoleChain(opts), s.requireUser, h.DraftState)...)
	con.GET("/", h.Home)

	// --- onboarding wizard
	o := opts.Onboarding
	if o == nil {
		cat, err := onboarding.Load(onboarding.LoadOptions{Env: h.Env})
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		o = handlers.NewOnboarding(h, cat, msg, nil)
	}
	con.GET("/onboarding", o.Start)
	con.GET("/onboarding/templates/:code", o.Form)
	con.POST("/onboarding/verify", o.Verify)
	con.POST("/onboarding/review", o.Review)
	con.POST("/onboarding/form", o.Back)
	con.POST("/onboarding/create", o.Create)

	// --- providers and key pools
	con.GET("/providers", h.ProvidersList)
	con.GET("/providers/new", h.ProviderNew)
	con.POST("/providers", h.ProviderSave)
	con.GET("/providers/:id/edit", h.ProviderEdit)
	con.POST("/providers/:id", h.ProviderSave)
	con.POST("/providers/:id/delete", h.ProviderDelete)
	con.POST("/providers/:id/keys", h.ProviderKeyAdd)
	con.POST("/provider-keys/:id/status", h.ProviderKeyStatus)
	con.POST("/provider-keys/:id/delete", h.ProviderKeyRemove)
	con.POST("/provider-keys/:id/reenable", h.ProviderKeyReenable)

	// --- logic models and deployments
	con.GET("/logic-models", h.LogicModelsList)
	con.GET("/logic-models/new", h.LogicModelNew)
	con.POST("/logic-models", h.LogicModelSave)
	con.GET("/logic-models/:id/edit", h.LogicModelEdit)
	con.POST("/logic-models/:id", h.LogicModelSave)
	con.POST("/logic-models/:id/delete", h.LogicModelDelete)
	con.GET("/logic-models/:id/deployments/new", h.DeploymentNew)
	con.POST("/logic-models/:id/deployments", h.DeploymentCreate)
	con.GET("/deployments/:id/edit", h.DeploymentEdit)
	con.POST("/deployments/:id", h.DeploymentUpdate)
	con.POST("/deployments/:id/delete", h.DeploymentDelete)
	con.POST("/deployments/:id/enabled", h.DeploymentEnabled)
	con.POST("/deployments/:id/weight", h.DeploymentWeight)
	con.POST("/deployments/:id/parked", h.DeploymentParked)

	// --- route groups, tiers, candidates (each tier is an htmx fragment) and
	// model aliases (each group's list is one)
	con.GET("/route-groups", h.RouteGroupsList)
	con.GET("/route-groups/new", h.RouteGroupNew)
	con.POST("/route-groups", h.RouteGroupSave)
	con.GET("/route-groups/:id/edit", h.RouteGroupEdit)
	con.POST("/route-groups/:id", h.RouteGroupSave)
	con.POST("/route-groups/:id/delete", h.RouteGroupDelete)
	con.GET("/tiers/:id", h.TierShow)
	con.POST("/tiers/:id", h.TierSave)
	con.POST("/tiers/:id/candidates", h.CandidateAdd)
	con.POST("/candidates/:id", h.CandidateUpdate)
	con.POST("/candidates/:id/move", h.CandidateMove)
	con.POST("/candidates/:id/parked", h.CandidateParked)
	con.POST("/candidates/:id/delete", h.CandidateRemove)
	con.GET("/route-groups/:id/aliases", h.ModelAliasesShow)
	con.POST("/route-groups/:id/aliases", h.ModelAliasAdd)
	con.POST("/route-groups/:id/aliases/:n", h.ModelAliasUpdate)
	con.POST("/route-groups/:id/aliases/:n/move", h.ModelAliasMove)
	con.POST("/route-groups/:id/aliases/:n/delete", h.ModelAliasRemove)

	// --- callers and caller API keys
	con.GET("/callers", h.CallersList)
	con.GET("/callers/new", h.CallerNew)
	con.POST("/callers", h.CallerSave)
	con.GET("/callers/:id", h.CallerShow)
	con.GET("/callers/:id/edit", h.CallerEdit)
	con.POST("/callers/:id", h.CallerSave)
	con.POST("/callers/:id/delete", h.CallerDelete)
	con.POST("/callers/:id/keys", h.CallerKeyCreate)
	con.POST("/caller-keys/:id/revoke", h.CallerKeyRevoke)

	// --- tenants
	con.GET("/tenants", h.TenantsList)
	con.GET("/tenants/new", h.TenantNew)
	con.POST("/tenants", h.TenantSave)
	con.GET("/tenants/:id/edit", h.TenantEdit)
	con.POST("/tenants/:id", h.TenantSave)
	con.POST("/tenants/:id/delete", h.TenantDelete)

	// --- versions: dry-run, publish, history, diff, rollback, export, import
	con.GET("/dry-run", h.DryRunPage)
	con.POST("/publish", h.Publish)
	con.GET("/versions", h.VersionsList)
	con.GET("/versions/diff", h.VersionsDiff)
	con.GET("/versions/:n", h.VersionShow)
	con.GET("/versions/:n/rollback", h.VersionRollbackPreview)
	con.POST("/versions/:n/rollback", h.VersionRollback)
	con.GET("/config/export", h.ConfigExport)
	con.GET("/config/import", h.ImportPage)
	con.POST("/config/import", h.ImportPreview)
	con.POST("/config/import/apply", h.ImportApply)

	// --- Test route, call logs, dashboard
	con.GET("/test-route", h.TestRoutePage)
	con.POST("/test-route/send", h.TestRouteSend)
	con.GET("/call-logs", h.CallLogsSearch)
	con.GET("/call-logs/export.csv", h.CallLogsExport)
	con.GET("/call-logs/:request_id", h.CallLogShow)
	con.GET("/dashboard", h.Dashboard)

	// --- health and jobs (the worker role's data)
	con.GET("/health", h.HealthPage)
	con.GET("/jobs", h.JobsPage)
	con.POST("/jobs/:name/run", h.JobRunNow)

	// --- users and admin API tokens
	con.GET("/settings", h.Settings)
	con.POST("/settings/users", h.SettingsUserCreate)
	con.POST("/settings/users/:id/disable", h.SettingsUserDisable)
	con.POST("/settings/users/:id/role", h.SettingsUserRole)
	con.POST("/settings/users/:id/password", h.SettingsUserPassword)
	con.POST("/settings/lockouts/clear", h.SettingsLockoutClear)
	con.POST("/settings/tokens", h.SettingsTokenCreate)
	con.POST("/settings/tokens/:id/revoke", h.SettingsTokenRevoke)

	// --- the operator manual (static/manual); relative links between
	// pages need the trailing slash
	con.GET("/manual", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/manual/") })
	con.GET("/manual/", h.Manual)
	con.GET("/manual/:page", h.Manual)

	// Admin JSON API: token-authenticated, the console's operations with the
	// same validation, for scripts and CI.
	api := e.Group("/admin/api", s.recover, s.offlineGate(), middleware.BodyLimit(opts.ConsoleBodyLimit), s.requireToken)

	// --- configuration lifecycle
	api.GET("/config/draft", h.APIConfigDraft)
	api.POST("/config/import", h.APIConfigImport)
	api.POST("/dry-run", h.APIDryRun)
	api.POST("/publish", h.APIPublish)
	api.GET("/versions", h.APIVersions)
	api.GET("/versions/:n", h.APIVersion)
	api.GET("/versions/:a/diff/:b", h.APIVersionsDiff)
	api.POST("/versions/:n/rollback", h.APIRollback)

	// --- providers and key pools
	api.GET("/providers", h.APIProviders)
	api.POST("/providers", h.APIProviderCreate)
	api.GET("/providers/:id", h.APIProvider)
	api.PUT("/providers/:id", h.APIProviderUpdate)
	api.DELETE("/providers/:id", h.APIProviderDelete)
	api.POST("/providers/:id/keys", h.APIProviderKeyAdd)
	api.PUT("/provider-keys/:id", h.APIProviderKeyStatus)
	api.DELETE("/provider-keys/:id", h.APIProviderKeyRemove)

	// --- tenants
	api.GET("/tenants", h.APITenants)
	api.POST("/tenants", h.APITenantCreate)
	api.GET("/tenants/:id", h.APITenant)
	api.PUT("/tenants/:id", h.APITenantUpdate)
	api.DELETE("/tenants/:id", h.APITenantDelete)

	// --- logic models and deployments
	api.GET("/logic-models", h.APILogicModels)
	api.POST("/logic-models", h.APILogicModelCreate)
	api.GET("/logic-models/:id", h.APILogicModel)
	api.PUT("/logic-models/:id", h.APILogicModelUpdate)
	api.DELETE("/logic-models/:id", h.APILogicModelDelete)
	api.POST("/logic-models/:id/deployments", h.APIDeploymentCreate)
	api.PUT("/deployments/:id", h.APIDeploymentUpdate)
	api.DELETE("/deployments/:id", h.APIDeploymentDelete)

	// --- route groups, tiers and candidates
	api.GET("/route-groups", h.APIRouteGroups)
	api.POST("/route-groups", h.APIRouteGroupCreate)
	api.GET("/route-groups/:id", h.APIRouteGroup)
	api.PUT("/route-groups/:id", h.APIRouteGroupUpdate)
	api.DELETE("/route-groups/:id", h.APIRouteGroupDelete)
	api.PUT("/tiers/:id", h.APITierUpdate)
	api.POST("/tiers/:id/candidates", h.APICandidateAdd)
	api.PUT("/candidates/:id", h.APICandidateUpdate)
	api.POST("/candidates/:id/move", h.APICandidateMove)
	api.DELETE("/candidates/:id", h.APICandidateRemove)

	// --- callers and caller keys
	api.GET("/callers", h.APICallers)
	api.POST("/callers", h.APICallerCreate)
	api.GET("/callers/:id", h.APICaller)
	api.PUT("/callers/:id", h.APICallerUpdate)
	api.DELETE("/callers/:id", h.APICallerDelete)
	api.GET("/callers/:id/keys", h.APICallerKeys)
	api.POST("/callers/:id/keys", h.APICallerKeyCreate)
	api.POST("/caller-keys/:id/revoke", h.APICallerKeyRevoke)

	e.RouteNotFound("/*", func(c echo.Context) error {
		return echo.NewHTTPError(http.StatusNotFound, "There is no page at "+httpx.Clip(c.Request().URL.Path, httpx.ShownLen)+".")
	})
}
