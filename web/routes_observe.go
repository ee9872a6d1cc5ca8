package web

import "github.com/labstack/echo/v4"

// observeRoutes registers the pages that look at traffic: call logs, Test
// route and the dashboard. Viewers may see all of them; only sending a
// test request is a POST, which the console refuses to viewers.
func (s *Server) observeRoutes(g *echo.Group) {
	h := s.h
	g.GET("/call-logs", h.CallLogsSearch)
	g.GET("/call-logs/:request_id", h.CallLogShow)
	g.GET("/test-route", h.TestRoutePage)
	g.POST("/test-route/send", h.TestRouteSend)
	g.GET("/dashboard", h.Dashboard)
}
