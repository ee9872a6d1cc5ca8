package web

import "github.com/labstack/echo/v4"

// versionRoutes registers this area's routes (to be merged into routes.go).
func (s *Server) versionRoutes(g *echo.Group) {}

// configAPIRoutes registers the admin API's draft, dry-run, publish and version routes.
func (s *Server) configAPIRoutes(g *echo.Group) {}
