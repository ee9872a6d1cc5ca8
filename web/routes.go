package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// routes lists every route of the server, grouped by audience.
func (s *Server) routes(opts Options) {
	e, h := s.Echo, s.h

	e.GET("/healthz", s.healthz)
	e.GET("/static/*", staticHandler())
	if opts.Metrics != nil {
		e.GET("/metrics", echo.WrapHandler(opts.Metrics))
	}

	// Data plane: OpenAI-compatible API for callers. No session, no CSRF,
	// no gzip or timeout middleware (streams are flushed per event).
	if s.dp != nil {
		v1 := e.Group("/v1")
		v1.POST("/chat/completions", s.dp.ChatCompletions)
		v1.POST("/embeddings", s.dp.Embeddings)
		v1.GET("/models", s.dp.Models)
		v1.Any("/*", s.dp.NotFound)
	}

	// Console: server-rendered pages behind a session.
	pub := e.Group("", s.consoleChain(opts)...)
	pub.GET("/login", h.LoginPage)
	pub.POST("/login", h.Login)
	pub.POST("/logout", h.Logout)

	con := e.Group("", append(s.consoleChain(opts), s.requireUser)...)
	con.GET("/", h.Home)

	// --- onboarding wizard
	s.onboardingRoutes(con)

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
	s.logicModelRoutes(con)

	// --- route groups, tiers and candidates
	s.routeGroupRoutes(con)

	// --- callers, caller keys, tenants, users and tokens
	s.callerRoutes(con)

	// --- versions, dry-run, publish, diff, rollback, export/import
	s.versionRoutes(con)

	// --- call logs, Test route, dashboard
	s.observeRoutes(con)

	// --- health and jobs (the worker role's pages)
	s.workerRoutes(con)

	// Admin JSON API: token-authenticated, same validation as the console.
	api := e.Group("/admin/api", middleware.BodyLimit(opts.ConsoleBodyLimit), s.requireToken)
	s.adminAPIRoutes(api)
	s.configAPIRoutes(api)

	e.RouteNotFound("/*", func(c echo.Context) error {
		return echo.NewHTTPError(http.StatusNotFound, "There is no page at "+c.Request().URL.Path+".")
	})
}
