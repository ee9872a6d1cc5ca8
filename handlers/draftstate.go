package handlers

import (
	"context"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/views/layout"
)

// DraftState is console middleware: the htmx answer to every change (any
// method but GET and HEAD) carries the draft banner, swapped out of band
// (httpx.AddOOB), so "the draft differs from live" appears or goes after
// an inline edit — a key added, a weight set — without a reload, whichever
// handler answered.
func (h *Handler) DraftState(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Header.Get("HX-Request") == "true" {
			httpx.AddOOB(c, "draft-state", func(ctx context.Context) templ.Component {
				live, differs, err := h.Drafts.DraftState(ctx)
				if err != nil {
					h.Log.Warn("draft state", "err", err)
					return nil
				}
				return layout.DraftBanner(layout.Page{LiveVersion: live, DraftDiffers: differs, Can: httpx.CurrentPrincipal(c).Can()}, true)
			})
		}
		return next(c)
	}
}
