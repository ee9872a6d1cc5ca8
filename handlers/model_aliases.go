package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/store/rows"
	"switchyard/views/pages/groups"
)

// A route group's model aliases on the Route groups page: every action
// answers the group's "Model aliases" section (htmx) or goes back to the
// page (a plain form post). An alias is addressed by its position, and
// its form carries the pattern it showed there ("was"): an edit of a list
// that changed meanwhile changes nothing and shows the list as it is.

// aliasesChanged is the section's message for rows.ErrAliasesChanged.
const aliasesChanged = "The aliases of this group changed while you were editing (another tab or operator?): nothing was changed. This is the list as it is now."

// ModelAliasesShow re-renders a group's alias section for htmx; ?edit=<n>
// opens the edit form of alias n. A plain request goes to the page.
func (h *Handler) ModelAliasesShow(c echo.Context) error {
	gid, err := idParam(c, "id")
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(c.QueryParam("alias_edit"))
	if !httpx.IsPartial(c) {
		q := ""
		if n > 0 {
			q = "?alias_group=" + strconv.FormatInt(gid, 10) + "&alias_edit=" + strconv.Itoa(n)
		}
		return c.Redirect(http.StatusSeeOther, "/route-groups"+q+"#aliases-"+strconv.FormatInt(gid, 10))
	}
	return h.renderAliases(c, gid, http.StatusOK, "", func(v *groups.AliasesView) { v.OpenAliasEdit(n) })
}

// aliasFromForm reads an alias form, with the validation's messages on
// the form's fields (the target's on "target").
func aliasFromForm(c echo.Context) (config.ModelAlias, groups.AliasForm) {
	form := groups.AliasForm{Pattern: strings.TrimSpace(c.FormValue("pattern")), Target: c.FormValue("target")}
	a := config.ModelAlias{Pattern: form.Pattern}
	a.Tier, a.LogicModel = groups.ParseTarget(form.Target)
	form.Errors = groups.TargetErrors(config.ValidateModelAlias(a))
	return a, form
}

// aliasSaved sorts a store error of an alias action: nil and done, field
// errors to show on the form, the list changed meanwhile, or a failure.
func aliasSaved(err error, form *groups.AliasForm) (stale bool, fail error) {
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, rows.ErrAliasesChanged):
		return true, nil
	}
	fe, ok := fieldErrors(err)
	if !ok {
		return false, notFoundOr(err)
	}
	form.Errors = groups.TargetErrors(fe)
	return false, nil
}

// ModelAliasAdd appends an alias to a group's list.
func (h *Handler) ModelAliasAdd(c echo.Context) error {
	gid, err := idParam(c, "id")
	if err != nil {
		return err
	}
	a, form := aliasFromForm(c)
	if len(form.Errors) == 0 {
		_, err := h.RouteGroups.AddModelAlias(c.Request().Context(), gid, a)
		if _, fail := aliasSaved(err, &form); fail != nil {
			return fail
		}
	}
	if len(form.Errors) > 0 {
		return h.renderAliases(c, gid, http.StatusUnprocessableEntity, "", func(v *groups.AliasesView) { v.Add = form })
	}
	return h.renderAliases(c, gid, http.StatusOK, "Alias "+a.Pattern+" added. Publish to make it live.", nil)
}

// ModelAliasUpdate changes the alias at a position.
func (h *Handler) ModelAliasUpdate(c echo.Context) error {
	gid, n, err := aliasParams(c)
	if err != nil {
		return err
	}
	a, form := aliasFromForm(c)
	stale := false
	if len(form.Errors) == 0 {
		var fail error
		stale, fail = aliasSaved(h.RouteGroups.UpdateModelAlias(c.Request().Context(), gid, n, c.FormValue("was"), a), &form)
		if fail != nil {
			return fail
		}
	}
	switch {
	case stale:
		return h.renderAliases(c, gid, http.StatusUnprocessableEntity, "", func(v *groups.AliasesView) { v.Problem = aliasesChanged })
	case len(form.Errors) > 0:
		return h.renderAliases(c, gid, http.StatusUnprocessableEntity, "", func(v *groups.AliasesView) { v.EditAt, v.Edit = n, form })
	}
	return h.renderAliases(c, gid, http.StatusOK, "Alias "+a.Pattern+" saved. Publish to make it live.", nil)
}

// ModelAliasMove moves the alias at a position one place up or down
// (dir=up|down): a pattern higher up is tried first.
func (h *Handler) ModelAliasMove(c echo.Context) error {
	gid, n, err := aliasParams(c)
	if err != nil {
		return err
	}
	dir := c.FormValue("dir")
	if dir != "up" && dir != "down" {
		return echo.NewHTTPError(http.StatusBadRequest, "dir must be up or down")
	}
	return h.aliasDone(c, gid, h.RouteGroups.MoveModelAlias(c.Request().Context(), gid, n, c.FormValue("was"), dir == "up"), "Alias moved "+dir+".")
}

// ModelAliasRemove removes the alias at a position.
func (h *Handler) ModelAliasRemove(c echo.Context) error {
	gid, n, err := aliasParams(c)
	if err != nil {
		return err
	}
	return h.aliasDone(c, gid, h.RouteGroups.RemoveModelAlias(c.Request().Context(), gid, n, c.FormValue("was")), "Alias removed.")
}

// aliasDone answers a move or a removal.
func (h *Handler) aliasDone(c echo.Context, gid int64, err error, msg string) error {
	if errors.Is(err, rows.ErrAliasesChanged) {
		return h.renderAliases(c, gid, http.StatusUnprocessableEntity, "", func(v *groups.AliasesView) { v.Problem = aliasesChanged })
	}
	if err != nil {
		return notFoundOr(err)
	}
	return h.renderAliases(c, gid, http.StatusOK, msg, nil)
}

// aliasParams reads the group id and the alias position of the path.
func aliasParams(c echo.Context) (int64, int, error) {
	gid, err := idParam(c, "id")
	if err != nil {
		return 0, 0, err
	}
	n, err := strconv.Atoi(c.Param("n"))
	if err != nil || n < 1 {
		return 0, 0, echo.NewHTTPError(http.StatusNotFound, "no such alias")
	}
	return gid, n, nil
}

// renderAliases answers an alias action. Success: the section for htmx,
// a 303 back to the group's aliases (with msg flashed) for a plain form
// post. Failure (422): the section with adjust's messages, as a fragment
// for htmx and inside the whole page otherwise.
func (h *Handler) renderAliases(c echo.Context, groupID int64, status int, msg string, adjust func(*groups.AliasesView)) error {
	if status == http.StatusOK && !httpx.IsPartial(c) {
		if msg != "" {
			h.flash(c, msg)
		}
		return httpx.Redirect(c, "/route-groups#aliases-"+strconv.FormatInt(groupID, 10))
	}
	snap, _, err := h.RouteGroups.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	rows := groups.Rows(snap, httpx.CSRFToken(c), httpx.CurrentPrincipal(c).CanEdit())
	v := groups.FindAliases(rows, groupID)
	if v == nil {
		return echo.NewHTTPError(http.StatusNotFound, "no such route group")
	}
	if adjust != nil {
		adjust(v)
	}
	if httpx.IsPartial(c) {
		return httpx.Render(c, status, groups.Aliases(*v), nil)
	}
	return httpx.Render(c, status, groups.List(groups.ListPage{Page: h.page(c, "Route groups", "groups"), Rows: rows}), nil)
}
