package web

import "github.com/labstack/echo/v4"

// adminAPIRoutes registers the admin API's CRUD routes: the console's
// operations for scripts and CI, JSON in and out, resources by numeric id.
func (s *Server) adminAPIRoutes(g *echo.Group) {
	h := s.h

	// --- providers and key pools
	g.GET("/providers", h.APIProviders)
	g.POST("/providers", h.APIProviderCreate)
	g.GET("/providers/:id", h.APIProvider)
	g.PUT("/providers/:id", h.APIProviderUpdate)
	g.DELETE("/providers/:id", h.APIProviderDelete)
	g.POST("/providers/:id/keys", h.APIProviderKeyAdd)
	g.PUT("/provider-keys/:id", h.APIProviderKeyStatus)
	g.DELETE("/provider-keys/:id", h.APIProviderKeyRemove)

	// --- tenants
	g.GET("/tenants", h.APITenants)
	g.POST("/tenants", h.APITenantCreate)
	g.GET("/tenants/:id", h.APITenant)
	g.PUT("/tenants/:id", h.APITenantUpdate)
	g.DELETE("/tenants/:id", h.APITenantDelete)

	// --- logic models and deployments
	g.GET("/logic-models", h.APILogicModels)
	g.POST("/logic-models", h.APILogicModelCreate)
	g.GET("/logic-models/:id", h.APILogicModel)
	g.PUT("/logic-models/:id", h.APILogicModelUpdate)
	g.DELETE("/logic-models/:id", h.APILogicModelDelete)
	g.POST("/logic-models/:id/deployments", h.APIDeploymentCreate)
	g.PUT("/deployments/:id", h.APIDeploymentUpdate)
	g.DELETE("/deployments/:id", h.APIDeploymentDelete)

	// --- route groups, tiers and candidates
	g.GET("/route-groups", h.APIRouteGroups)
	g.POST("/route-groups", h.APIRouteGroupCreate)
	g.GET("/route-groups/:id", h.APIRouteGroup)
	g.PUT("/route-groups/:id", h.APIRouteGroupUpdate)
	g.DELETE("/route-groups/:id", h.APIRouteGroupDelete)
	g.PUT("/tiers/:id", h.APITierUpdate)
	g.POST("/tiers/:id/candidates", h.APICandidateAdd)
	g.PUT("/candidates/:id", h.APICandidateUpdate)
	g.POST("/candidates/:id/move", h.APICandidateMove)
	g.DELETE("/candidates/:id", h.APICandidateRemove)

	// --- callers and caller keys
	g.GET("/callers", h.APICallers)
	g.POST("/callers", h.APICallerCreate)
	g.GET("/callers/:id", h.APICaller)
	g.PUT("/callers/:id", h.APICallerUpdate)
	g.DELETE("/callers/:id", h.APICallerDelete)
	g.GET("/callers/:id/keys", h.APICallerKeys)
	g.POST("/callers/:id/keys", h.APICallerKeyCreate)
	g.POST("/caller-keys/:id/revoke", h.APICallerKeyRevoke)
}
