package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"switchyard/handlers"
	"switchyard/handlers/httpx"
)

// routes lists every route of the server, grouped by audience and, within
// the console, in the order of the navigation: one small function per area,
// each a flat table. Their dependencies (the handlers, the onboarding
// wizard with its catalogue) are built before, in New and the assembly.
func (s *Server) routes(opts Options) {
	s.plainRoutes(opts)
	if s.dp != nil {
		dataPlaneRoutes(s.Echo.Group("/v1"), s.dp, s.recovering)
	}

	// Console: server-rendered pages behind a session. Viewers may read;
	// requireUser refuses their POSTs with 403.
	h := s.h
	pub := s.Echo.Group("", append(s.consoleChain(opts), s.auditing)...)
	pub.GET("/login", h.LoginPage)
	pub.POST("/login", h.Login)
	pub.POST("/logout", h.Logout)
	pub.GET("/auth/oidc/start", h.SSOStart)
	pub.GET("/auth/oidc/callback", h.SSOCallback)

	con := s.Echo.Group("", append(s.consoleChain(opts), s.auditing, s.requireUser, s.auditDraft, h.DraftState)...)
	con.GET("/", h.Home)
	con.GET(handlers.PasswordChangePath, h.PasswordPage)
	con.POST(handlers.PasswordChangePath, h.PasswordChange)
	onboardingRoutes(con, opts.Onboarding)
	providerRoutes(con, h)
	logicModelRoutes(con, h)
	routeGroupRoutes(con, h)
	callerRoutes(con, h)
	tenantRoutes(con, h)
	versionRoutes(con, h)
	observeRoutes(con, h)
	settingsRoutes(con, h)
	auditRoutes(con, h)
	manualRoutes(con, h)

	// Admin JSON API: token-authenticated, the console's operations with the
	// same validation, for scripts and CI.
	api := s.Echo.Group("/admin/api", s.recover, s.offlineGate(), middleware.BodyLimit(opts.ConsoleBodyLimit), s.auditing, s.requireToken, s.auditDraft)
	apiConfigRoutes(api, h)
	apiProviderRoutes(api, h)
	apiTenantRoutes(api, h)
	apiLogicModelRoutes(api, h)
	apiRouteGroupRoutes(api, h)
	apiCallerRoutes(api, h)
	api.GET("/audit", h.APIAuditExport)
	apiAlertRoutes(api, h)

	s.Echo.RouteNotFound("/*", func(c echo.Context) error {
		return echo.NewHTTPError(http.StatusNotFound, "There is no page at "+httpx.Clip(c.Request().URL.Path, httpx.ShownLen)+".")
	})
}

// plainRoutes are the probes, static files and metrics: no session. Every
// handler recovers from its own panics (see recovering): these routes are
// wrapped one by one, the groups' chains start with it.
func (s *Server) plainRoutes(opts Options) {
	e, r := s.Echo, s.recovering
	e.GET("/healthz", r(s.healthz))
	e.GET("/readyz", r(s.readyz))
	e.GET("/static/*", r(staticHandler()))
	e.GET("/favicon.ico", r(favicon))
	if opts.Metrics != nil {
		e.GET("/metrics", r(echo.WrapHandler(opts.Metrics)))
	}
}

// dataPlaneRoutes: the OpenAI-, Anthropic- and Gemini-compatible API for
// callers. No session, no CSRF, no gzip or timeout middleware (streams are
// flushed per event).
func dataPlaneRoutes(v1 *echo.Group, dp *handlers.DataPlane, r func(echo.HandlerFunc) echo.HandlerFunc) {
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

func onboardingRoutes(con *echo.Group, o *handlers.Onboarding) {
	con.GET("/onboarding", o.Start)
	con.GET("/onboarding/templates/:code", o.Form)
	con.POST("/onboarding/verify", o.Verify)
	con.POST("/onboarding/review", o.Review)
	con.POST("/onboarding/form", o.Back)
	con.POST("/onboarding/create", o.Create)
}

// providerRoutes: providers and key pools.
func providerRoutes(con *echo.Group, h *handlers.Handler) {
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
}

// logicModelRoutes: logic models and their deployments.
func logicModelRoutes(con *echo.Group, h *handlers.Handler) {
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
}

// routeGroupRoutes: route groups, tiers, candidates (each tier is an htmx
// fragment) and model aliases (each group's list is one).
func routeGroupRoutes(con *echo.Group, h *handlers.Handler) {
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
}

// callerRoutes: callers and caller API keys.
func callerRoutes(con *echo.Group, h *handlers.Handler) {
	con.GET("/callers", h.CallersList)
	con.GET("/callers/new", h.CallerNew)
	con.POST("/callers", h.CallerSave)
	con.GET("/callers/:id", h.CallerShow)
	con.GET("/callers/:id/edit", h.CallerEdit)
	con.POST("/callers/:id", h.CallerSave)
	con.POST("/callers/:id/delete", h.CallerDelete)
	con.POST("/callers/:id/keys", h.CallerKeyCreate)
	con.POST("/caller-keys/:id/revoke", h.CallerKeyRevoke)
	con.POST("/caller-keys/:id/rotate", h.CallerKeyRotate)
}

func tenantRoutes(con *echo.Group, h *handlers.Handler) {
	con.GET("/tenants", h.TenantsList)
	con.GET("/tenants/new", h.TenantNew)
	con.POST("/tenants", h.TenantSave)
	con.GET("/tenants/:id/edit", h.TenantEdit)
	con.POST("/tenants/:id", h.TenantSave)
	con.POST("/tenants/:id/delete", h.TenantDelete)
}

// versionRoutes: dry-run, publish, history, diff, rollback, export, import.
func versionRoutes(con *echo.Group, h *handlers.Handler) {
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
}

// observeRoutes: Test route, call logs, dashboard, and health and jobs (the
// worker role's data).
func observeRoutes(con *echo.Group, h *handlers.Handler) {
	con.GET("/test-route", h.TestRoutePage)
	con.POST("/test-route/send", h.TestRouteSend)
	con.GET("/call-logs", h.CallLogsSearch)
	con.GET("/call-logs/export.csv", h.CallLogsExport)
	con.GET("/call-logs/:request_id", h.CallLogShow)
	con.GET("/dashboard", h.Dashboard)
	con.GET("/usage", h.UsagePage)
	con.GET("/health", h.HealthPage)
	con.GET("/jobs", h.JobsPage)
	con.POST("/jobs/:name/run", h.JobRunNow)
}

// settingsRoutes: users, admin API tokens and single sign-on.
func settingsRoutes(con *echo.Group, h *handlers.Handler) {
	con.GET("/settings", h.Settings)
	con.POST("/settings/users", h.SettingsUserCreate)
	con.POST("/settings/users/:id/disable", h.SettingsUserDisable)
	con.POST("/settings/users/:id/role", h.SettingsUserRole)
	con.POST("/settings/users/:id/password", h.SettingsUserPassword)
	con.POST("/settings/lockouts/clear", h.SettingsLockoutClear)
	con.POST("/settings/tokens", h.SettingsTokenCreate)
	con.POST("/settings/tokens/:id/revoke", h.SettingsTokenRevoke)
	con.POST("/settings/sign-in", h.SettingsSignInSave)
}

// auditRoutes: the audit trail and the check of its chain (admins).
func auditRoutes(con *echo.Group, h *handlers.Handler) {
	con.GET("/audit", h.AuditPage)
	con.POST("/audit/verify", h.AuditVerify)
	con.GET("/settings/alerts", h.SettingsAlerts)
	con.POST("/settings/alerts/rules/:id", h.SettingsAlertRule)
	con.POST("/settings/alerts/rules/:id/silence", h.SettingsAlertSilence)
	con.POST("/settings/alerts/channels", h.SettingsAlertChannelCreate)
	con.POST("/settings/alerts/channels/:id/delete", h.SettingsAlertChannelDelete)
	con.POST("/settings/alerts/channels/:id/test", h.SettingsAlertChannelTest)
}

// manualRoutes: the operator manual (static/manual); relative links between
// pages need the trailing slash.
func manualRoutes(con *echo.Group, h *handlers.Handler) {
	con.GET("/manual", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/manual/") })
	con.GET("/manual/", h.Manual)
	con.GET("/manual/:page", h.Manual)
}

// apiConfigRoutes: the configuration lifecycle.
func apiConfigRoutes(api *echo.Group, h *handlers.Handler) {
	api.GET("/config/draft", h.APIConfigDraft)
	api.POST("/config/import", h.APIConfigImport)
	api.POST("/dry-run", h.APIDryRun)
	api.POST("/publish", h.APIPublish)
	api.GET("/versions", h.APIVersions)
	api.GET("/versions/:n", h.APIVersion)
	api.GET("/versions/:a/diff/:b", h.APIVersionsDiff)
	api.POST("/versions/:n/rollback", h.APIRollback)
}

func apiProviderRoutes(api *echo.Group, h *handlers.Handler) {
	api.GET("/providers", h.APIProviders)
	api.POST("/providers", h.APIProviderCreate)
	api.GET("/providers/:id", h.APIProvider)
	api.PUT("/providers/:id", h.APIProviderUpdate)
	api.DELETE("/providers/:id", h.APIProviderDelete)
	api.POST("/providers/:id/keys", h.APIProviderKeyAdd)
	api.PUT("/provider-keys/:id", h.APIProviderKeyStatus)
	api.DELETE("/provider-keys/:id", h.APIProviderKeyRemove)
}

func apiTenantRoutes(api *echo.Group, h *handlers.Handler) {
	api.GET("/tenants", h.APITenants)
	api.POST("/tenants", h.APITenantCreate)
	api.GET("/tenants/:id", h.APITenant)
	api.PUT("/tenants/:id", h.APITenantUpdate)
	api.DELETE("/tenants/:id", h.APITenantDelete)
}

func apiLogicModelRoutes(api *echo.Group, h *handlers.Handler) {
	api.GET("/logic-models", h.APILogicModels)
	api.POST("/logic-models", h.APILogicModelCreate)
	api.GET("/logic-models/:id", h.APILogicModel)
	api.PUT("/logic-models/:id", h.APILogicModelUpdate)
	api.DELETE("/logic-models/:id", h.APILogicModelDelete)
	api.POST("/logic-models/:id/deployments", h.APIDeploymentCreate)
	api.PUT("/deployments/:id", h.APIDeploymentUpdate)
	api.DELETE("/deployments/:id", h.APIDeploymentDelete)
}

// apiRouteGroupRoutes: route groups, tiers and candidates.
func apiRouteGroupRoutes(api *echo.Group, h *handlers.Handler) {
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
}

func apiCallerRoutes(api *echo.Group, h *handlers.Handler) {
	api.GET("/callers", h.APICallers)
	api.POST("/callers", h.APICallerCreate)
	api.GET("/callers/:id", h.APICaller)
	api.PUT("/callers/:id", h.APICallerUpdate)
	api.DELETE("/callers/:id", h.APICallerDelete)
	api.GET("/callers/:id/keys", h.APICallerKeys)
	api.GET("/usage", h.APIUsage)
	api.POST("/callers/:id/keys", h.APICallerKeyCreate)
	api.POST("/caller-keys/:id/revoke", h.APICallerKeyRevoke)
	api.POST("/caller-keys/:id/rotate", h.APICallerKeyRotate)
}

// apiAlertRoutes: alert rules, webhook channels and events.
func apiAlertRoutes(api *echo.Group, h *handlers.Handler) {
	api.GET("/alerts/rules", h.APIAlertRules)
	api.PUT("/alerts/rules/:id", h.APIAlertRuleUpdate)
	api.GET("/alerts/channels", h.APIAlertChannels)
	api.POST("/alerts/channels", h.APIAlertChannelCreate)
	api.DELETE("/alerts/channels/:id", h.APIAlertChannelDelete)
	api.GET("/alerts/events", h.APIAlertEvents)
}
