package web

import "github.com/labstack/echo/v4"

// versionRoutes registers this area's routes (to be merged into routes.go).
func (s *Server) versionRoutes(g *echo.Group) {}
