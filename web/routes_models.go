package web

import "github.com/labstack/echo/v4"

// logicModelRoutes registers this area's routes (to be merged into routes.go).
func (s *Server) logicModelRoutes(g *echo.Group) {}
