package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"switchyard/routing/config"
)

// Admin API: route groups, their tiers and the tiers' candidates.

// APIRouteGroups lists the draft's route groups with tiers and candidates.
func (h *Handler) APIRouteGroups(c echo.Context) error {
	snap, _, err := h.RouteGroups.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	return apiList(c, "route_groups", snap.RouteGroups)
}

// APIRouteGroup returns one route group with its tiers and candidates.
func (h *Handler) APIRouteGroup(c echo.Context) error { return apiRouteGroups.get(h, c) }

const tiersHint = "change tiers with PUT /admin/api/tiers/{id} and candidates with /admin/api/tiers/{id}/candidates and /admin/api/candidates/{id}"

// APIRouteGroupCreate adds a route group with its fast, standard and deep
// tiers at the default timeouts and without candidates, and the model
// aliases it is sent with.
func (h *Handler) APIRouteGroupCreate(c echo.Context) error {
	return apiRouteGroups.create(h, c, config.RouteGroup{}, func(f config.FieldErrors, in config.RouteGroup) {
		readOnly(f, "tiers", in.Tiers, nil, "a new group gets the three tiers; "+tiersHint)
	}, h.RouteGroups.CreateRouteGroup)
}

// APIRouteGroupUpdate changes a group's name, description, tenant,
// fallback and model aliases; fields left out keep their values. Aliases
// sent replace the whole list, in their order ([] removes them).
func (h *Handler) APIRouteGroupUpdate(c echo.Context) error {
	return apiRouteGroups.update(h, c, apiUpdate[config.RouteGroup]{
		// Aliases are decoded onto nothing, so a list sent is taken whole
		// (not merged into the stored one item by item) and a list left out
		// stays nil, which UpdateRouteGroup reads as "keep".
		blank: func(in *config.RouteGroup) { in.Tiers, in.Aliases = nil, nil },
		check: func(f config.FieldErrors, in *config.RouteGroup, cur config.RouteGroup) {
			readOnly(f, "tiers", in.Tiers, cur.Tiers, tiersHint)
		},
		save: h.RouteGroups.UpdateRouteGroup,
	})
}

// APIRouteGroupDelete deletes a group with its tiers; 409 while callers are
// bound to it or another group falls back to it.
func (h *Handler) APIRouteGroupDelete(c echo.Context) error {
	return h.apiDelete(c, "route group", h.RouteGroups.DeleteRouteGroup)
}

// APITierUpdate sets a tier's timeouts; a timeout left out keeps its value.
// The body is the tier's shape ({"timeout_ms","first_chunk_timeout_ms"} is
// enough); its name and candidates are read-only here.
func (h *Handler) APITierUpdate(c echo.Context) error {
	return apiTiers.update(h, c, apiUpdate[config.Tier]{
		blank: func(in *config.Tier) { in.Name, in.Candidates = "", nil },
		check: func(f config.FieldErrors, in *config.Tier, cur config.Tier) {
			readOnly(f, "name", in.Name, cur.Name, "a tier's name cannot change")
			readOnly(f, "candidates", in.Candidates, cur.Candidates, "change candidates with /admin/api/tiers/{id}/candidates and /admin/api/candidates/{id}")
		},
		save: func(ctx context.Context, id int64, in config.Tier) error {
			return h.RouteGroups.UpdateTier(ctx, id, in.TimeoutMS, in.FirstChunkTimeoutMS)
		},
	})
}

// APICandidateAdd appends a logic model to a tier's chain: {"logic_model",
// "priority","weight"}. Priority left out (or 0) puts it after the current
// last level; weight left out is 100.
func (h *Handler) APICandidateAdd(c echo.Context) error {
	tid, err := apiID(c, "tier")
	if err != nil {
		return apiFail(c, err)
	}
	if _, err := h.RouteGroups.Tier(c.Request().Context(), tid); err != nil {
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
	id, err := h.RouteGroups.AddCandidate(c.Request().Context(), tid, in)
	if err != nil {
		return apiFail(c, orNotFound(err, "tier", tid))
	}
	h.audit(c, "candidate added", id)
	return apiCandidates.answer(h, c, http.StatusCreated, id)
}

// APICandidateUpdate sets a candidate's priority and weight; a value left
// out keeps its value. A candidate's logic model does not change: add
// another candidate instead.
func (h *Handler) APICandidateUpdate(c echo.Context) error {
	return apiCandidates.update(h, c, apiUpdate[config.Candidate]{
		blank: func(in *config.Candidate) { in.LogicModel = "" },
		check: func(f config.FieldErrors, in *config.Candidate, cur config.Candidate) {
			readOnly(f, "logic_model", in.LogicModel, cur.LogicModel, "a candidate's logic model cannot change; add a candidate for the other model and remove this one")
		},
		save: func(ctx context.Context, id int64, in config.Candidate) error {
			return h.RouteGroups.UpdateCandidate(ctx, id, in.Priority, in.Weight)
		},
	})
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
	tid, err := h.RouteGroups.CandidateTier(c.Request().Context(), id)
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
	if err := h.RouteGroups.MoveCandidate(c.Request().Context(), id, in.Direction == "up"); err != nil {
		return apiFail(c, orNotFound(err, "candidate", id))
	}
	h.audit(c, "candidate moved "+in.Direction, id)
	return apiTiers.answer(h, c, http.StatusOK, tid)
}

// APICandidateRemove removes a candidate from its tier.
func (h *Handler) APICandidateRemove(c echo.Context) error {
	id, err := apiID(c, "candidate")
	if err != nil {
		return apiFail(c, err)
	}
	if err := h.RouteGroups.RemoveCandidate(c.Request().Context(), id); err != nil {
		return apiFail(c, orNotFound(err, "candidate", id))
	}
	h.audit(c, "candidate removed", id)
	return c.NoContent(http.StatusNoContent)
}
