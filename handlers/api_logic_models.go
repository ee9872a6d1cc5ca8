package handlers

import (
	"context"

	"github.com/labstack/echo/v4"

	"switchyard/routing/config"
)

// Admin API: logic models and their deployments.

// APILogicModels lists the draft's logic models with their deployments.
func (h *Handler) APILogicModels(c echo.Context) error {
	snap, _, err := h.LogicModels.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	return apiList(c, "logic_models", snap.LogicModels)
}

// APILogicModel returns one logic model with its deployments.
func (h *Handler) APILogicModel(c echo.Context) error { return apiLogicModels.get(h, c) }

const deploymentsHint = "change deployments with /admin/api/logic-models/{id}/deployments and /admin/api/deployments/{id}"

// APILogicModelCreate adds a logic model (kind chat unless the body says
// otherwise). Deployments are added with POST /logic-models/:id/deployments.
func (h *Handler) APILogicModelCreate(c echo.Context) error {
	in := config.LogicModel{Kind: config.KindChat}
	return apiLogicModels.create(h, c, in, func(f config.FieldErrors, in config.LogicModel) {
		readOnly(f, "deployments", in.Deployments, nil, deploymentsHint)
	}, h.LogicModels.CreateLogicModel)
}

// APILogicModelUpdate changes a logic model's own fields; fields left out
// keep their values.
func (h *Handler) APILogicModelUpdate(c echo.Context) error {
	return apiLogicModels.update(h, c, apiUpdate[config.LogicModel]{
		blank: func(in *config.LogicModel) { in.Deployments = nil },
		check: func(f config.FieldErrors, in *config.LogicModel, cur config.LogicModel) {
			readOnly(f, "deployments", in.Deployments, cur.Deployments, deploymentsHint)
		},
		save: h.LogicModels.UpdateLogicModel,
	})
}

// APILogicModelDelete deletes a logic model and its deployments; 409 while
// a candidate uses it.
func (h *Handler) APILogicModelDelete(c echo.Context) error {
	return h.apiDelete(c, "logic model", h.LogicModels.DeleteLogicModel)
}

// APIDeploymentCreate adds a deployment to a logic model. Unless the body
// says otherwise it is enabled and takes the weight the console form
// proposes: what the others leave of 100, or an even share.
func (h *Handler) APIDeploymentCreate(c echo.Context) error {
	mid, err := apiID(c, "logic model")
	if err != nil {
		return apiFail(c, err)
	}
	snap, _, err := h.LogicModels.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	m, ok := apiLogicModels.find(snap, mid)
	if !ok {
		return apiFail(c, apiNotFound("logic model", mid))
	}
	// The weight the console form proposes (without its rebalancing of the
	// others, which a script does by setting their weights).
	in := config.Deployment{Enabled: true, Weight: config.ProposeWeight(m.Deployments).Weight, Prices: config.Prices{Currency: "USD"}}
	return apiDeployments.create(h, c, in, nil, func(ctx context.Context, in config.Deployment) (int64, error) {
		id, err := h.LogicModels.CreateDeployment(ctx, mid, in)
		return id, orNotFound(err, "logic model", mid)
	})
}

// APIDeploymentUpdate changes a deployment; fields left out keep their values.
func (h *Handler) APIDeploymentUpdate(c echo.Context) error {
	return apiDeployments.update(h, c, apiUpdate[config.Deployment]{save: h.LogicModels.UpdateDeployment})
}

// APIDeploymentDelete removes a deployment.
func (h *Handler) APIDeploymentDelete(c echo.Context) error {
	return h.apiDelete(c, "deployment", h.LogicModels.DeleteDeployment)
}
