package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/views/pages/groups"
)

// renderTier answers a tier action. Success: the tier fragment for htmx, a
// 303 back to the group (with msg flashed) for a plain form post. Failure
// (status 422): the tier with adjust's messages next to their fields, as a
// fragment for htmx and inside the whole page otherwise.
func (h *Handler) renderTier(c echo.Context, tierID int64, status int, msg string, adjust func(*groups.TierView)) error {
	ctx := c.Request().Context()
	if status == http.StatusOK && !httpx.IsPartial(c) {
		ref, err := h.RouteGroups.Tier(ctx, tierID)
		if err != nil {
			return notFoundOr(err)
		}
		if msg != "" {
			h.flash(c, msg)
		}
		return httpx.Redirect(c, "/route-groups#group-"+ref.Group)
	}
	snap, _, err := h.RouteGroups.Draft(ctx)
	if err != nil {
		return err
	}
	p := httpx.CurrentPrincipal(c)
	rows := groups.Rows(snap, httpx.CSRFToken(c), p.CanEdit())
	row, tier := groups.FindTier(rows, tierID)
	if tier == nil {
		return echo.NewHTTPError(http.StatusNotFound, "no such tier")
	}
	if adjust != nil {
		adjust(tier)
	}
	if httpx.IsPartial(c) {
		return httpx.Render(c, status, groups.TierUpdate(*tier, row.Same), nil)
	}
	page := groups.ListPage{Page: h.page(c, "Route groups", "groups"), Rows: rows}
	return httpx.Render(c, status, groups.List(page), nil)
}

// TierShow re-renders a tier for htmx; ?edit=<candidate id> opens that
// candidate's priority/weight form. A plain request goes to the page.
func (h *Handler) TierShow(c echo.Context) error {
	tid, err := idParam(c, "id")
	if err != nil {
		return err
	}
	cid, _ := strconv.ParseInt(c.QueryParam("edit"), 10, 64)
	if !httpx.IsPartial(c) {
		ref, err := h.RouteGroups.Tier(c.Request().Context(), tid)
		if err != nil {
			return notFoundOr(err)
		}
		q := ""
		if cid > 0 {
			q = "?edit=" + strconv.FormatInt(cid, 10)
		}
		return c.Redirect(http.StatusSeeOther, "/route-groups"+q+"#group-"+ref.Group)
	}
	return h.renderTier(c, tid, http.StatusOK, "", func(v *groups.TierView) { v.OpenEdit(cid) })
}

// TierSave sets a tier's attempt and first-chunk timeouts.
func (h *Handler) TierSave(c echo.Context) error {
	tid, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	ref, err := h.RouteGroups.Tier(ctx, tid)
	if err != nil {
		return notFoundOr(err)
	}
	form := groups.TimeoutForm{TimeoutMS: c.FormValue("timeout_ms"), FirstChunkTimeoutMS: c.FormValue("first_chunk_timeout_ms")}
	errs := config.FieldErrors{}
	t := config.Tier{Name: ref.Name}
	t.TimeoutMS = formInt(c, "timeout_ms", errs)
	t.FirstChunkTimeoutMS = formInt(c, "first_chunk_timeout_ms", errs)
	errs = merge(errs, config.ValidateTier(t))
	if len(errs) == 0 {
		if err := h.RouteGroups.UpdateTier(ctx, tid, t.TimeoutMS, t.FirstChunkTimeoutMS); err != nil {
			fe, ok := fieldErrors(err)
			if !ok {
				return notFoundOr(err)
			}
			errs = fe
		}
	}
	if len(errs) > 0 {
		form.Errors = errs
		return h.renderTier(c, tid, http.StatusUnprocessableEntity, "", func(v *groups.TierView) { v.Timeouts = form })
	}
	return h.renderTier(c, tid, http.StatusOK, "Timeouts of "+ref.Group+" / "+string(ref.Name)+" saved.", nil)
}
