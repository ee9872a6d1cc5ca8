package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"switchyard/routing/config"
)

// Admin API: route groups, their tiers and the tiers' candidates.

func apiFindRouteGroup(snap config.Snapshot, id int64) (config.RouteGroup, bool) {
	for _, g := range snap.RouteGroups {
		if g.ID == id {
			return g, true
		}
	}
	return config.RouteGroup{}, false
}

func apiFindTier(snap config.Snapshot, id int64) (config.Tier, bool) {
	for _, g := range snap.RouteGroups {
		for _, t := range g.Tiers {
			if t.ID == id {
				return t, true
			}
		}
	}
	return config.Tier{}, false
}

func apiFindCandidate(snap config.Snapshot, id int64) (config.Candidate, bool) {
	for _, g := range snap.RouteGroups {
		for _, t := range g.Tiers {
			for _, cd := range t.Candidates {
				if cd.ID == id {
					return cd, true
				}
			}
		}
	}
	return config.Candidate{}, false
}

func (h *Handler) apiRouteGroup(c echo.Context, status int, id int64) error {
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	g, ok := apiFindRouteGroup(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("route group", id))
	}
	return c.JSON(status, g)
}

func (h *Handler) apiTier(c echo.Context, status int, id int64) error {
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	t, ok := apiFindTier(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("tier", id))
	}
	return c.JSON(status, t)
}

func (h *Handler) apiCandidate(c echo.Context, status int, id int64) error {
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	cd, ok := apiFindCandidate(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("candidate", id))
	}
	return c.JSON(status, cd)
}

// APIRouteGroups lists the draft's route groups with tiers and candidates.
func (h *Handler) APIRouteGroups(c echo.Context) error {
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	return apiList(c, "route_groups", snap.RouteGroups)
}

// APIRouteGroup returns one route group with its tiers and candidates.
func (h *Handler) APIRouteGroup(c echo.Context) error {
	id, err := apiID(c, "route group")
	if err != nil {
		return apiFail(c, err)
	}
	return h.apiRouteGroup(c, http.StatusOK, id)
}

const tiersHint = "change tiers with PUT /admin/api/tiers/{id} and candidates with /admin/api/tiers/{id}/candidates and /admin/api/candidates/{id}"

// APIRouteGroupCreate adds a route group with its fast, standard and deep
// tiers at the default timeouts and without candidates.
func (h *Handler) APIRouteGroupCreate(c echo.Context) error {
	var in config.RouteGroup
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, in.ID, 0)
	readOnly(f, "tiers", in.Tiers, nil, "a new group gets the three tiers; "+tiersHint)
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	id, err := h.Store.CreateRouteGroup(c.Request().Context(), in)
	if err != nil {
		return apiFail(c, err)
	}
	h.audit(c, "route group created", id)
	return h.apiRouteGroup(c, http.StatusCreated, id)
}

// APIRouteGroupUpdate changes a group's name, description, tenant and
// fallback; fields left out keep their values.
func (h *Handler) APIRouteGroupUpdate(c echo.Context) error {
	id, err := apiID(c, "route group")
	if err != nil {
		return apiFail(c, err)
	}
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	cur, ok := apiFindRouteGroup(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("route group", id))
	}
	in := cur
	in.ID, in.Tiers = 0, nil
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, in.ID, id)
	readOnly(f, "tiers", in.Tiers, cur.Tiers, tiersHint)
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	if err := h.Store.UpdateRouteGroup(c.Request().Context(), id, in); err != nil {
		return apiFail(c, orNotFound(err, "route group", id))
	}
	h.audit(c, "route group updated", id)
	return h.apiRouteGroup(c, http.StatusOK, id)
}

// APIRouteGroupDelete deletes a group with its tiers; 409 while callers are
// bound to it or another group falls back to it.
func (h *Handler) APIRouteGroupDelete(c echo.Context) error {
	return h.apiDelete(c, "route group", h.Store.DeleteRouteGroup)
}

// APITierUpdate sets a tier's timeouts; a timeout left out keeps its value.
// The body is the tier's shape ({"timeout_ms","first_chunk_timeout_ms"} is
// enough); its name and candidates are read-only here.
func (h *Handler) APITierUpdate(c echo.Context) error {
	id, err := apiID(c, "tier")
	if err != nil {
		return apiFail(c, err)
	}
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	cur, ok := apiFindTier(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("tier", id))
	}
	in := cur
	in.ID, in.Name, in.Candidates = 0, "", nil
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, in.ID, id)
	readOnly(f, "name", in.Name, cur.Name, "a tier's name cannot change")
	readOnly(f, "candidates", in.Candidates, cur.Candidates, "change candidates with /admin/api/tiers/{id}/candidates and /admin/api/candidates/{id}")
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	if err := h.Store.UpdateTier(c.Request().Context(), id, in.TimeoutMS, in.FirstChunkTimeoutMS); err != nil {
		return apiFail(c, orNotFound(err, "tier", id))
	}
	h.audit(c, "tier updated", id)
	return h.apiTier(c, http.StatusOK, id)
}

// APICandidateAdd appends a logic model to a tier's chain: {"logic_model",
// "priority","weight"}. Priority left out (or 0) puts it after the current
// last level; weight left out is 100.
func (h *Handler) APICandidateAdd(c echo.Context) error {
	tid, err := apiID(c, "tier")
	if err != nil {
		return apiFail(c, err)
	}
	if _, err := h.Store.Tier(c.Request().Context(), tid); err != nil {
		return apiFail(c, orNotFound(err, "tier", tid))
	}
	in := config.Candidate{Weight: 100}
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, in.ID, 0)
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	id, err := h.Store.AddCandidate(c.Request().Context(), tid, in)
	if err != nil {
		return apiFail(c, orNotFound(err, "tier", tid))
	}
	h.audit(c, "candidate added", id)
	return h.apiCandidate(c, http.StatusCreated, id)
}

// APICandidateUpdate sets a candidate's priority and weight; a value left
// out keeps its value. A candidate's logic model does not change: add
// another candidate instead.
func (h *Handler) APICandidateUpdate(c echo.Context) error {
	id, err := apiID(c, "candidate")
	if err != nil {
		return apiFail(c, err)
	}
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	cur, ok := apiFindCandidate(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("candidate", id))
	}
	in := cur
	in.ID, in.LogicModel = 0, ""
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, in.ID, id)
	readOnly(f, "logic_model", in.LogicModel, cur.LogicModel, "a candidate's logic model cannot change; add a candidate for the other model and remove this one")
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	if err := h.Store.UpdateCandidate(c.Request().Context(), id, in.Priority, in.Weight); err != nil {
		return apiFail(c, orNotFound(err, "candidate", id))
	}
	h.audit(c, "candidate updated", id)
	return h.apiCandidate(c, http.StatusOK, id)
}

type apiMoveIn struct {
	Direction string `json:"direction"`
}

// APICandidateMove moves a candidate one place up or down its tier's
// failover order (weights are untouched) and answers the whole tier.
func (h *Handler) APICandidateMove(c echo.Context) error {
	id, err := apiID(c, "candidate")
	if err != nil {
		return apiFail(c, err)
	}
	tid, err := h.Store.CandidateTier(c.Request().Context(), id)
	if err != nil {
		return apiFail(c, orNotFound(err, "candidate", id))
	}
	var in apiMoveIn
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	if in.Direction != "up" && in.Direction != "down" {
		return apiFail(c, apiInvalid(config.FieldErrors{"direction": "must be up or down"}))
	}
	if err := h.Store.MoveCandidate(c.Request().Context(), id, in.Direction == "up"); err != nil {
		return apiFail(c, orNotFound(err, "candidate", id))
	}
	h.audit(c, "candidate moved "+in.Direction, id)
	return h.apiTier(c, http.StatusOK, tid)
}

// APICandidateRemove removes a candidate from its tier.
func (h *Handler) APICandidateRemove(c echo.Context) error {
	id, err := apiID(c, "candidate")
	if err != nil {
		return apiFail(c, err)
	}
	if err := h.Store.RemoveCandidate(c.Request().Context(), id); err != nil {
		return apiFail(c, orNotFound(err, "candidate", id))
	}
	h.audit(c, "candidate removed", id)
	return c.NoContent(http.StatusNoContent)
}
