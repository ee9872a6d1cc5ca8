package handlers

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/views/pages/models"
)

// LogicModelStore is the storage the logic models and deployments pages and
// API need. *store.Store satisfies it.
type LogicModelStore interface {
	DraftReader
	CreateDeployment(ctx context.Context, logicModelID int64, d config.Deployment) (int64, error)
	CreateDeploymentRebalanced(ctx context.Context, logicModelID int64, d config.Deployment, weights map[int64]int) (int64, error)
	CreateLogicModel(ctx context.Context, m config.LogicModel) (int64, error)
	DeleteDeployment(ctx context.Context, id int64) error
	DeleteLogicModel(ctx context.Context, id int64) error
	DeploymentModel(ctx context.Context, id int64) (int64, error)
	SetDeploymentEnabled(ctx context.Context, id int64, enabled bool) error
	SetDeploymentParked(ctx context.Context, id int64, parked bool) error
	SetDeploymentWeight(ctx context.Context, id int64, weight int) error
	UpdateDeployment(ctx context.Context, id int64, d config.Deployment) error
	UpdateLogicModel(ctx context.Context, id int64, m config.LogicModel) error
}

// LogicModelsList shows every logic model with its deployments.
func (h *Handler) LogicModelsList(c echo.Context) error {
	snap, _, err := h.LogicModels.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	page := models.ListPage{Page: h.page(c, "Logic models", "models")}
	page.Panels = logicModelPanels(snap, page.Page.CSRF, page.Page.CanEdit())
	return httpx.Render(c, http.StatusOK, models.List(page), nil)
}

// logicModelPanels builds one panel per logic model, naming the tiers that list
// it as a candidate.
func logicModelPanels(snap config.Snapshot, csrf string, canEdit bool) []models.Panel {
	used := map[string][]string{}
	for _, g := range snap.RouteGroups {
		for _, t := range g.Tiers {
			for _, cand := range t.Candidates {
				where := g.Name + " / " + string(t.Name)
				if cand.Parked {
					where += " (parked)"
				}
				used[cand.LogicModel] = append(used[cand.LogicModel], where)
			}
		}
	}
	off := map[string]bool{}
	for _, p := range snap.Providers {
		if !p.Enabled {
			off[p.Name] = true
		}
	}
	out := make([]models.Panel, 0, len(snap.LogicModels))
	for _, m := range snap.LogicModels {
		out = append(out, models.Panel{Model: m, UsedBy: used[m.Code], ProviderOff: off, CSRF: csrf, CanEdit: canEdit})
	}
	return out
}

func logicModelByID(snap config.Snapshot, id int64) (config.LogicModel, bool) {
	for _, m := range snap.LogicModels {
		if m.ID == id {
			return m, true
		}
	}
	return config.LogicModel{}, false
}

// LogicModelNew shows an empty logic model form.
func (h *Handler) LogicModelNew(c echo.Context) error {
	f := models.ModelForm{V: config.LogicModel{Kind: config.KindChat}, CSRF: httpx.CSRFToken(c)}
	return httpx.Render(c, http.StatusOK, models.ModelFormPage(h.page(c, "Add logic model", "models"), f), nil)
}

// LogicModelEdit shows a logic model's form.
func (h *Handler) LogicModelEdit(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	snap, _, err := h.LogicModels.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	m, ok := logicModelByID(snap, id)
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "no such logic model")
	}
	f := models.ModelForm{ID: id, V: m, CSRF: httpx.CSRFToken(c)}
	return httpx.Render(c, http.StatusOK, models.ModelFormPage(h.page(c, "Edit "+m.Code, "models"), f), nil)
}

// logicModelFromForm reads the form strictly. Prefixes keep their spaces:
// "query: " is a typical prefix.
func logicModelFromForm(c echo.Context) (config.LogicModel, config.FieldErrors) {
	errs := config.FieldErrors{}
	m := config.LogicModel{
		Code:           strings.TrimSpace(c.FormValue("code")),
		Kind:           config.Kind(c.FormValue("kind")),
		QueryPrefix:    c.FormValue("query_prefix"),
		DocumentPrefix: c.FormValue("document_prefix"),
		Description:    strings.TrimSpace(c.FormValue("description")),
	}
	m.EmbeddingDimension = formInt(c, "embedding_dimension", errs)
	return m, merge(errs, config.ValidateLogicModel(m))
}

// LogicModelSave creates (no id) or updates a logic model.
func (h *Handler) LogicModelSave(c echo.Context) error {
	return saving[config.LogicModel]{
		parse: func(c echo.Context, _ int64) (config.LogicModel, config.FieldErrors, error) {
			m, errs := logicModelFromForm(c)
			return m, errs, nil
		},
		create: h.LogicModels.CreateLogicModel,
		update: h.LogicModels.UpdateLogicModel,
		invalid: func(c echo.Context, id int64, m config.LogicModel, errs config.FieldErrors) error {
			posted, _ := c.FormParams()
			f := models.ModelForm{ID: id, V: m, Posted: posted, Errors: errs, CSRF: httpx.CSRFToken(c)}
			return httpx.Render(c, http.StatusUnprocessableEntity, models.ModelFormPage(h.page(c, "Logic model", "models"), f), models.ModelFormBody(f))
		},
		done: func(id int64, m config.LogicModel, _ bool) (string, string) {
			return "Logic model " + m.Code + " saved. Publish to make it live.", "/logic-models#model-" + strconv.FormatInt(id, 10)
		},
	}.run(h, c)
}

// LogicModelDelete deletes a logic model and its deployments unless a
// candidate still uses it.
func (h *Handler) LogicModelDelete(c echo.Context) error {
	return deleting{
		del:     h.LogicModels.DeleteLogicModel,
		shown:   func(id int64) string { return "/logic-models#model-" + strconv.FormatInt(id, 10) },
		deleted: "Logic model deleted with its deployments.",
		list:    "/logic-models",
	}.run(h, c)
}
