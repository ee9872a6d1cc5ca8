package web

import "github.com/labstack/echo/v4"

// adminAPIRoutes registers this area's routes (to be merged into routes.go).
func (s *Server) adminAPIRoutes(g *echo.Group) {}
