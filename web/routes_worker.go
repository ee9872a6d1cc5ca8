package web

import "github.com/labstack/echo/v4"

// workerRoutes registers the pages of the worker role: deployment health
// and singleton jobs. g carries the session, CSRF and role checks.
func (s *Server) workerRoutes(g *echo.Group) {
	h := s.h

	g.GET("/health", h.HealthPage)
	g.GET("/jobs", h.JobsPage)
	g.POST("/jobs/:name/run", h.JobRunNow)
}
