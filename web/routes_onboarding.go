package web

import (
	"log/slog"
	"os"

	"github.com/labstack/echo/v4"

	"switchyard/handlers"
	"switchyard/onboarding"
	"switchyard/routing/config"
)

// onboardingRoutes registers the onboarding wizard. g carries the session,
// CSRF and role checks (viewers may look; only admins may post).
func (s *Server) onboardingRoutes(g *echo.Group) {
	cat, catErr := onboardingCatalog(s.h.Env, s.log)
	o := handlers.NewOnboarding(s.h, cat, catErr, nil)

	g.GET("/onboarding", o.Start)
	g.GET("/onboarding/templates/:code", o.Form)
	g.POST("/onboarding/verify", o.Verify)
	g.POST("/onboarding/review", o.Review)
	g.POST("/onboarding/form", o.Back)
	g.POST("/onboarding/create", o.Create)
}

// onboardingCatalog loads the provider catalogue: the built-in one with the
// operator's SWITCHYARD_CATALOG_FILE merged over it, the sandbox template
// pointing at SWITCHYARD_SANDBOX_URL. A broken operator file does not stop
// the console: it is logged, named on the wizard's first page, and the
// built-in catalogue is used.
func onboardingCatalog(env config.Env, log *slog.Logger) (*onboarding.Catalog, string) {
	opts := onboarding.LoadOptions{File: os.Getenv("SWITCHYARD_CATALOG_FILE"), SandboxURL: os.Getenv("SWITCHYARD_SANDBOX_URL"), Env: env}
	cat, err := onboarding.Load(opts)
	if err == nil {
		return cat, ""
	}
	log.Error("onboarding catalogue not loaded; using the built-in one", "err", err)
	opts.File = ""
	if builtin, berr := onboarding.Load(opts); berr == nil {
		return builtin, err.Error()
	}
	return nil, err.Error()
}
