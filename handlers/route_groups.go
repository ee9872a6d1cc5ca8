package handlers

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/store/rows"
	"switchyard/views/pages/groups"
)

// RouteGroupStore is the storage the route groups, tiers, candidates and model
// aliases pages and API need. *store.Store satisfies it.
type RouteGroupStore interface {
	DraftReader
	AddCandidate(ctx context.Context, tierID int64, c config.Candidate) (int64, error)
	AddModelAlias(ctx context.Context, groupID int64, a config.ModelAlias) (int, error)
	CandidateTier(ctx context.Context, id int64) (int64, error)
	CreateRouteGroup(ctx context.Context, g config.RouteGroup) (int64, error)
	DeleteRouteGroup(ctx context.Context, id int64) error
	MoveCandidate(ctx context.Context, id int64, up bool) error
	MoveModelAlias(ctx context.Context, groupID int64, position int, was string, up bool) error
	RemoveCandidate(ctx context.Context, id int64) error
	RemoveModelAlias(ctx context.Context, groupID int64, position int, was string) error
	SetCandidateParked(ctx context.Context, id int64, parked bool) error
	Tier(ctx context.Context, id int64) (rows.TierRef, error)
	UpdateCandidate(ctx context.Context, id int64, priority, weight int) error
	UpdateModelAlias(ctx context.Context, groupID int64, position int, was string, a config.ModelAlias) error
	UpdateRouteGroup(ctx context.Context, id int64, g config.RouteGroup) error
	UpdateTier(ctx context.Context, id int64, timeoutMS, firstChunkMS int) error
}

// RouteGroupsList shows every route group with its three tiers side by side
// and its model aliases. ?edit=<candidate id> opens that candidate's
// priority/weight form (the no-JavaScript path of the edit button).
func (h *Handler) RouteGroupsList(c echo.Context) error {
	snap, _, err := h.RouteGroups.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	pg := h.page(c, "Route groups", "groups")
	rows := groups.Rows(snap, pg.CSRF, pg.CanEdit())
	if cid, err := strconv.ParseInt(c.QueryParam("edit"), 10, 64); err == nil && cid > 0 {
		groups.OpenEdit(rows, cid)
	}
	// ?alias_group=<id>&alias_edit=<n>: the no-JavaScript path of an alias's edit button.
	if gid, err := strconv.ParseInt(c.QueryParam("alias_group"), 10, 64); err == nil {
		if v := groups.FindAliases(rows, gid); v != nil {
			n, _ := strconv.Atoi(c.QueryParam("alias_edit"))
			v.OpenAliasEdit(n)
		}
	}
	return httpx.Render(c, http.StatusOK, groups.List(groups.ListPage{Page: pg, Rows: rows}), nil)
}

// groupForm fills the choices of the create/edit form from the draft.
func groupForm(c echo.Context, snap config.Snapshot, id int64, g config.RouteGroup, errs config.FieldErrors) groups.Form {
	f := groups.Form{ID: id, V: g, Errors: errs, CSRF: httpx.CSRFToken(c)}
	for _, t := range snap.Tenants {
		f.Tenants = append(f.Tenants, t.Name)
	}
	for _, o := range snap.RouteGroups {
		if o.Tenant == "" && o.ID != id {
			f.SharedGroups = append(f.SharedGroups, o.Name)
		}
	}
	return f
}

// RouteGroupNew shows an empty route group form.
func (h *Handler) RouteGroupNew(c echo.Context) error {
	snap, _, err := h.RouteGroups.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	f := groupForm(c, snap, 0, config.RouteGroup{}, nil)
	return httpx.Render(c, http.StatusOK, groups.FormPage(h.page(c, "Add route group", "groups"), f), nil)
}

// RouteGroupEdit shows a route group's form.
func (h *Handler) RouteGroupEdit(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	snap, _, err := h.RouteGroups.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	for _, g := range snap.RouteGroups {
		if g.ID == id {
			f := groupForm(c, snap, id, g, nil)
			return httpx.Render(c, http.StatusOK, groups.FormPage(h.page(c, "Edit "+g.Name, "groups"), f), nil)
		}
	}
	return echo.NewHTTPError(http.StatusNotFound, "no such route group")
}

func routeGroupFromForm(c echo.Context) (config.RouteGroup, config.FieldErrors) {
	g := config.RouteGroup{
		Name:        strings.TrimSpace(c.FormValue("name")),
		Description: strings.TrimSpace(c.FormValue("description")),
		Tenant:      strings.TrimSpace(c.FormValue("tenant")),
		Fallback:    strings.TrimSpace(c.FormValue("fallback")),
		// An unticked box is not sent.
		TraceContent: c.FormValue("trace_content") == "on",
	}
	switch {
	case g.Tenant == "" && g.Fallback == config.FallbackNone:
		g.Fallback = "" // a shared group has no fallback policy
	case g.Tenant != "" && g.Fallback == "":
		g.Fallback = config.FallbackNone
	}
	errs := config.FieldErrors{}
	resilienceFromForm(c, &g, errs)
	return g, resilienceErrors(g, merge(errs, config.ValidateRouteGroup(g)))
}

// RouteGroupSave creates (no id) or updates a route group. A new group gets
// its three tiers at the default timeouts.
func (h *Handler) RouteGroupSave(c echo.Context) error {
	return saving[config.RouteGroup]{
		parse: func(c echo.Context, _ int64) (config.RouteGroup, config.FieldErrors, error) {
			g, errs := routeGroupFromForm(c)
			return g, errs, nil
		},
		create:      h.RouteGroups.CreateRouteGroup,
		update:      h.RouteGroups.UpdateRouteGroup,
		storeErrors: resilienceErrors,
		invalid: func(c echo.Context, id int64, g config.RouteGroup, errs config.FieldErrors) error {
			snap, _, err := h.RouteGroups.Draft(c.Request().Context())
			if err != nil {
				return err
			}
			f := groupForm(c, snap, id, g, errs)
			return httpx.Render(c, http.StatusUnprocessableEntity, groups.FormPage(h.page(c, "Route group", "groups"), f), groups.FormBody(f))
		},
		done: func(_ int64, g config.RouteGroup, created bool) (string, string) {
			msg := "Route group " + g.Name + " saved. Publish to make it live."
			if created {
				msg = "Route group " + g.Name + " created with empty fast, standard and deep tiers: add candidates to each, then publish."
			}
			return msg, "/route-groups#group-" + g.Name
		},
	}.run(h, c)
}

// RouteGroupDelete deletes a route group unless callers are still bound to
// it or a dedicated group falls back to it.
func (h *Handler) RouteGroupDelete(c echo.Context) error {
	return deleting{del: h.RouteGroups.DeleteRouteGroup, deleted: "Route group deleted.", list: "/route-groups"}.run(h, c)
}
