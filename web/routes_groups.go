package web

import "github.com/labstack/echo/v4"

// routeGroupRoutes registers this area's routes (to be merged into routes.go).
func (s *Server) routeGroupRoutes(g *echo.Group) {}
