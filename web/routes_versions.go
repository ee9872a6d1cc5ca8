package web

import "github.com/labstack/echo/v4"

// versionRoutes registers the lifecycle pages: dry-run, publish, versions,
// diff, rollback, export and import.
func (s *Server) versionRoutes(g *echo.Group) {
	h := s.h
	g.GET("/dry-run", h.DryRunPage)
	g.POST("/publish", h.Publish)
	g.GET("/versions", h.VersionsList)
	g.GET("/versions/diff", h.VersionsDiff)
	g.GET("/versions/:n", h.VersionShow)
	g.POST("/versions/:n/rollback", h.VersionRollback)
	g.GET("/config/export", h.ConfigExport)
	g.GET("/config/import", h.ImportPage)
	g.POST("/config/import", h.ImportPreview)
	g.POST("/config/import/apply", h.ImportApply)
}

// configAPIRoutes registers the admin API's draft, dry-run, publish and version routes.
func (s *Server) configAPIRoutes(g *echo.Group) {
	h := s.h
	g.GET("/config/draft", h.APIConfigDraft)
	g.POST("/config/import", h.APIConfigImport)
	g.POST("/dry-run", h.APIDryRun)
	g.POST("/publish", h.APIPublish)
	g.GET("/versions", h.APIVersions)
	g.GET("/versions/:n", h.APIVersion)
	g.GET("/versions/:a/diff/:b", h.APIVersionsDiff)
	g.POST("/versions/:n/rollback", h.APIRollback)
}
