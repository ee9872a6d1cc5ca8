package web

import "github.com/labstack/echo/v4"

// logicModelRoutes registers the logic model and deployment pages. The
// quick deployment actions (enabled, weight, delete) answer htmx with the
// logic model's panel and plain posts with a redirect.
func (s *Server) logicModelRoutes(g *echo.Group) {
	h := s.h
	g.GET("/logic-models", h.LogicModelsList)
	g.GET("/logic-models/new", h.LogicModelNew)
	g.POST("/logic-models", h.LogicModelSave)
	g.GET("/logic-models/:id/edit", h.LogicModelEdit)
	g.POST("/logic-models/:id", h.LogicModelSave)
	g.POST("/logic-models/:id/delete", h.LogicModelDelete)
	g.GET("/logic-models/:id/deployments/new", h.DeploymentNew)
	g.POST("/logic-models/:id/deployments", h.DeploymentCreate)
	g.GET("/deployments/:id/edit", h.DeploymentEdit)
	g.POST("/deployments/:id", h.DeploymentUpdate)
	g.POST("/deployments/:id/delete", h.DeploymentDelete)
	g.POST("/deployments/:id/enabled", h.DeploymentEnabled)
	g.POST("/deployments/:id/weight", h.DeploymentWeight)
}
