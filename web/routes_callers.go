package web

import "github.com/labstack/echo/v4"

// callerRoutes registers this area's routes (to be merged into routes.go).
func (s *Server) callerRoutes(g *echo.Group) {}
