package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"switchyard/routing/config"
)

// Admin API: logic models and their deployments.

func apiFindLogicModel(snap config.Snapshot, id int64) (config.LogicModel, bool) {
	for _, m := range snap.LogicModels {
		if m.ID == id {
			return m, true
		}
	}
	return config.LogicModel{}, false
}

func apiFindDeployment(snap config.Snapshot, id int64) (config.LogicModel, config.Deployment, bool) {
	for _, m := range snap.LogicModels {
		for _, d := range m.Deployments {
			if d.ID == id {
				return m, d, true
			}
		}
	}
	return config.LogicModel{}, config.Deployment{}, false
}

func (h *Handler) apiLogicModel(c echo.Context, status int, id int64) error {
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	m, ok := apiFindLogicModel(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("logic model", id))
	}
	return c.JSON(status, m)
}

func (h *Handler) apiDeployment(c echo.Context, status int, id int64) error {
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	_, d, ok := apiFindDeployment(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("deployment", id))
	}
	return c.JSON(status, d)
}

// APILogicModels lists the draft's logic models with their deployments.
func (h *Handler) APILogicModels(c echo.Context) error {
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	return apiList(c, "logic_models", snap.LogicModels)
}

// APILogicModel returns one logic model with its deployments.
func (h *Handler) APILogicModel(c echo.Context) error {
	id, err := apiID(c, "logic model")
	if err != nil {
		return apiFail(c, err)
	}
	return h.apiLogicModel(c, http.StatusOK, id)
}

const deploymentsHint = "change deployments with /admin/api/logic-models/{id}/deployments and /admin/api/deployments/{id}"

// APILogicModelCreate adds a logic model (kind chat unless the body says
// otherwise). Deployments are added with POST /logic-models/:id/deployments.
func (h *Handler) APILogicModelCreate(c echo.Context) error {
	in := config.LogicModel{Kind: config.KindChat}
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, in.ID, 0)
	readOnly(f, "deployments", in.Deployments, nil, deploymentsHint)
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	id, err := h.Store.CreateLogicModel(c.Request().Context(), in)
	if err != nil {
		return apiFail(c, err)
	}
	h.audit(c, "logic model created", id)
	return h.apiLogicModel(c, http.StatusCreated, id)
}

// APILogicModelUpdate changes a logic model's own fields; fields left out
// keep their values.
func (h *Handler) APILogicModelUpdate(c echo.Context) error {
	id, err := apiID(c, "logic model")
	if err != nil {
		return apiFail(c, err)
	}
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	cur, ok := apiFindLogicModel(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("logic model", id))
	}
	in := cur
	in.ID, in.Deployments = 0, nil
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, in.ID, id)
	readOnly(f, "deployments", in.Deployments, cur.Deployments, deploymentsHint)
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	if err := h.Store.UpdateLogicModel(c.Request().Context(), id, in); err != nil {
		return apiFail(c, orNotFound(err, "logic model", id))
	}
	h.audit(c, "logic model updated", id)
	return h.apiLogicModel(c, http.StatusOK, id)
}

// APILogicModelDelete deletes a logic model and its deployments; 409 while
// a candidate uses it.
func (h *Handler) APILogicModelDelete(c echo.Context) error {
	return h.apiDelete(c, "logic model", h.Store.DeleteLogicModel)
}

// APIDeploymentCreate adds a deployment to a logic model. Unless the body
// says otherwise it is enabled and takes the weight the model's other
// deployments leave to 100, as the console form proposes.
func (h *Handler) APIDeploymentCreate(c echo.Context) error {
	mid, err := apiID(c, "logic model")
	if err != nil {
		return apiFail(c, err)
	}
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	m, ok := apiFindLogicModel(snap, mid)
	if !ok {
		return apiFail(c, apiNotFound("logic model", mid))
	}
	used := 0
	for _, d := range m.Deployments {
		if !d.Parked() {
			used += d.Weight
		}
	}
	in := config.Deployment{Enabled: true, Weight: max(100-used, 0), Prices: config.Prices{Currency: "USD"}}
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, in.ID, 0)
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	id, err := h.Store.CreateDeployment(c.Request().Context(), mid, in)
	if err != nil {
		return apiFail(c, orNotFound(err, "logic model", mid))
	}
	h.audit(c, "deployment created", id)
	return h.apiDeployment(c, http.StatusCreated, id)
}

// APIDeploymentUpdate changes a deployment; fields left out keep their values.
func (h *Handler) APIDeploymentUpdate(c echo.Context) error {
	id, err := apiID(c, "deployment")
	if err != nil {
		return apiFail(c, err)
	}
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	_, in, ok := apiFindDeployment(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("deployment", id))
	}
	in.ID = 0
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, in.ID, id)
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	if err := h.Store.UpdateDeployment(c.Request().Context(), id, in); err != nil {
		return apiFail(c, orNotFound(err, "deployment", id))
	}
	h.audit(c, "deployment updated", id)
	return h.apiDeployment(c, http.StatusOK, id)
}

// APIDeploymentDelete removes a deployment.
func (h *Handler) APIDeploymentDelete(c echo.Context) error {
	return h.apiDelete(c, "deployment", h.Store.DeleteDeployment)
}
