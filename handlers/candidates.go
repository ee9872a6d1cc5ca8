package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"switchyard/routing/config"
	"switchyard/views/pages/groups"
)

// defaultCandidateWeight is the weight of a candidate added with a blank weight.
const defaultCandidateWeight = 100

// CandidateAdd puts a logic model into a tier's chain. A blank priority
// means a new level after the last one; a blank weight is 100.
func (h *Handler) CandidateAdd(c echo.Context) error {
	tid, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := h.RouteGroups.Tier(ctx, tid); err != nil {
		return notFoundOr(err)
	}
	form := groups.AddForm{
		LogicModel: strings.TrimSpace(c.FormValue("logic_model")),
		Priority:   strings.TrimSpace(c.FormValue("priority")),
		Weight:     strings.TrimSpace(c.FormValue("weight")),
	}
	errs := config.FieldErrors{}
	cand := config.Candidate{LogicModel: form.LogicModel, Weight: defaultCandidateWeight}
	cand.Priority = formInt(c, "priority", errs)
	if form.Weight != "" {
		cand.Weight = formInt(c, "weight", errs)
	}
	errs = merge(errs, config.ValidateCandidate(cand))
	if len(errs) == 0 {
		if _, err := h.RouteGroups.AddCandidate(ctx, tid, cand); err != nil {
			fe, ok := fieldErrors(err)
			if !ok {
				return notFoundOr(err)
			}
			errs = fe
		}
	}
	if len(errs) > 0 {
		form.Errors = errs
		return h.renderTier(c, tid, http.StatusUnprocessableEntity, "", func(v *groups.TierView) { v.Add = form })
	}
	return h.renderTier(c, tid, http.StatusOK, "Candidate "+cand.LogicModel+" added.", nil)
}

// CandidateUpdate sets a candidate's priority and weight.
func (h *Handler) CandidateUpdate(c echo.Context) error {
	cid, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	tid, err := h.RouteGroups.CandidateTier(ctx, cid)
	if err != nil {
		return notFoundOr(err)
	}
	form := groups.CandidateForm{Priority: strings.TrimSpace(c.FormValue("priority")), Weight: strings.TrimSpace(c.FormValue("weight"))}
	errs := config.FieldErrors{}
	priority := formInt(c, "priority", errs)
	weight := formInt(c, "weight", errs)
	if form.Priority == "" {
		errs.Add("priority", "is required")
	} else if priority < 1 {
		errs.Add("priority", "must be between 1 and 1000 (lower is tried first)")
	}
	if form.Weight == "" {
		errs.Add("weight", "is required")
	}
	errs = merge(errs, config.ValidateCandidate(config.Candidate{LogicModel: "-", Priority: priority, Weight: weight}))
	if len(errs) == 0 {
		if err := h.RouteGroups.UpdateCandidate(ctx, cid, priority, weight); err != nil {
			fe, ok := fieldErrors(err)
			if !ok {
				return notFoundOr(err)
			}
			errs = fe
		}
	}
	if len(errs) > 0 {
		form.Errors = errs
		return h.renderTier(c, tid, http.StatusUnprocessableEntity, "", func(v *groups.TierView) { v.EditID, v.Edit = cid, form })
	}
	return h.renderTier(c, tid, http.StatusOK, "Candidate saved.", nil)
}

// CandidateParked parks (parked=true) or unparks a candidate in place; its
// weight stays, so unparking gives it back its share.
func (h *Handler) CandidateParked(c echo.Context) error {
	cid, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	tid, err := h.RouteGroups.CandidateTier(ctx, cid)
	if err != nil {
		return notFoundOr(err)
	}
	parked := formBool(c, "parked")
	if err := h.RouteGroups.SetCandidateParked(ctx, cid, parked); err != nil {
		return notFoundOr(err)
	}
	msg := "Candidate unparked."
	if parked {
		msg = "Candidate parked."
	}
	return h.renderTier(c, tid, http.StatusOK, msg+" Publish to make it live.", nil)
}

// CandidateMove moves a candidate one place up or down the failover order
// (dir=up|down). Splitting a candidate out of a shared priority never
// changes any weight.
func (h *Handler) CandidateMove(c echo.Context) error {
	cid, err := idParam(c, "id")
	if err != nil {
		return err
	}
	dir := c.FormValue("dir")
	if dir != "up" && dir != "down" {
		return echo.NewHTTPError(http.StatusBadRequest, "dir must be up or down")
	}
	ctx := c.Request().Context()
	tid, err := h.RouteGroups.CandidateTier(ctx, cid)
	if err != nil {
		return notFoundOr(err)
	}
	if err := h.RouteGroups.MoveCandidate(ctx, cid, dir == "up"); err != nil {
		return notFoundOr(err)
	}
	return h.renderTier(c, tid, http.StatusOK, "Candidate moved "+dir+".", nil)
}

// CandidateRemove takes a candidate out of its tier.
func (h *Handler) CandidateRemove(c echo.Context) error {
	cid, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	tid, err := h.RouteGroups.CandidateTier(ctx, cid)
	if err != nil {
		return notFoundOr(err)
	}
	if err := h.RouteGroups.RemoveCandidate(ctx, cid); err != nil {
		return notFoundOr(err)
	}
	return h.renderTier(c, tid, http.StatusOK, "Candidate removed.", nil)
}
