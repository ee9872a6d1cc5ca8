package web

import "github.com/labstack/echo/v4"

// routeGroupRoutes registers the route groups, tiers and candidates pages.
// Tier and candidate actions answer with the tier fragment for htmx and a
// 303 back to /route-groups#group-<name> for plain form posts.
func (s *Server) routeGroupRoutes(g *echo.Group) {
	h := s.h
	g.GET("/route-groups", h.RouteGroupsList)
	g.GET("/route-groups/new", h.RouteGroupNew)
	g.POST("/route-groups", h.RouteGroupSave)
	g.GET("/route-groups/:id/edit", h.RouteGroupEdit)
	g.POST("/route-groups/:id", h.RouteGroupSave)
	g.POST("/route-groups/:id/delete", h.RouteGroupDelete)
	g.GET("/tiers/:id", h.TierShow)
	g.POST("/tiers/:id", h.TierSave)
	g.POST("/tiers/:id/candidates", h.CandidateAdd)
	g.POST("/candidates/:id", h.CandidateUpdate)
	g.POST("/candidates/:id/move", h.CandidateMove)
	g.POST("/candidates/:id/delete", h.CandidateRemove)
}
