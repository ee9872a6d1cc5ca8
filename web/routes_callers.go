package web

import "github.com/labstack/echo/v4"

// callerRoutes registers callers and their API keys, tenants, and console
// users and admin API tokens. g carries the session, CSRF and role checks.
func (s *Server) callerRoutes(g *echo.Group) {
	h := s.h

	// --- callers and caller API keys
	g.GET("/callers", h.CallersList)
	g.GET("/callers/new", h.CallerNew)
	g.POST("/callers", h.CallerSave)
	g.GET("/callers/:id", h.CallerShow)
	g.GET("/callers/:id/edit", h.CallerEdit)
	g.POST("/callers/:id", h.CallerSave)
	g.POST("/callers/:id/delete", h.CallerDelete)
	g.POST("/callers/:id/keys", h.CallerKeyCreate)
	g.POST("/caller-keys/:id/revoke", h.CallerKeyRevoke)

	// --- tenants
	g.GET("/tenants", h.TenantsList)
	g.GET("/tenants/new", h.TenantNew)
	g.POST("/tenants", h.TenantSave)
	g.GET("/tenants/:id/edit", h.TenantEdit)
	g.POST("/tenants/:id", h.TenantSave)
	g.POST("/tenants/:id/delete", h.TenantDelete)

	// --- users and admin API tokens
	g.GET("/settings", h.Settings)
	g.POST("/settings/users", h.SettingsUserCreate)
	g.POST("/settings/users/:id/disable", h.SettingsUserDisable)
	g.POST("/settings/tokens", h.SettingsTokenCreate)
	g.POST("/settings/tokens/:id/revoke", h.SettingsTokenRevoke)
}
