package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// Home sends an empty installation to onboarding and everyone else to the
// route groups, the page that says at a glance what serves each tier.
func (h *Handler) Home(c echo.Context) error {
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	if len(snap.Providers) == 0 {
		return c.Redirect(http.StatusSeeOther, "/onboarding")
	}
	return c.Redirect(http.StatusSeeOther, "/route-groups")
}
