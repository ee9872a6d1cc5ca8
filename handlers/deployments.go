package handlers

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/views/components"
	"switchyard/views/pages/models"
)

// deploymentByID finds a deployment and the logic model it serves.
func deploymentByID(snap config.Snapshot, id int64) (config.LogicModel, config.Deployment, bool) {
	for _, m := range snap.LogicModels {
		for _, d := range m.Deployments {
			if d.ID == id {
				return m, d, true
			}
		}
	}
	return config.LogicModel{}, config.Deployment{}, false
}

func deploymentProviderOptions(snap config.Snapshot, current string) []components.Option {
	var out []components.Option
	if current == "" && len(snap.Providers) > 0 {
		out = append(out, components.Option{Value: "", Label: "Choose a provider…"})
	}
	for _, p := range snap.Providers {
		label := p.Name + " (" + string(p.Protocol) + ")"
		if !p.Enabled {
			label += " — disabled"
		}
		out = append(out, components.Option{Value: p.Name, Label: label})
	}
	return out
}

// DeploymentNew shows an empty deployment form for a logic model.
func (h *Handler) DeploymentNew(c echo.Context) error {
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
	prop := config.ProposeWeight(m.Deployments)
	d := config.Deployment{Enabled: true, Weight: prop.Weight, Prices: config.Prices{Currency: "USD"}}
	if len(snap.Providers) == 1 {
		d.Provider = snap.Providers[0].Name
	}
	f := models.DeploymentForm{Model: m, V: d, Providers: deploymentProviderOptions(snap, d.Provider), CSRF: httpx.CSRFToken(c), Rebalance: prop.Rebalance, RebalanceOn: prop.Rebalance != nil}
	return httpx.Render(c, http.StatusOK, models.DeploymentFormPage(h.page(c, "Add deployment of "+m.Code, "models"), f), nil)
}

// deploymentOf finds the deployment of the :id parameter in the draft, with
// its logic model; an unknown id is a 404.
func (h *Handler) deploymentOf(c echo.Context) (int64, config.Snapshot, config.LogicModel, config.Deployment, error) {
	id, err := idParam(c, "id")
	if err != nil {
		return 0, config.Snapshot{}, config.LogicModel{}, config.Deployment{}, err
	}
	snap, _, err := h.LogicModels.Draft(c.Request().Context())
	if err != nil {
		return 0, snap, config.LogicModel{}, config.Deployment{}, err
	}
	m, d, ok := deploymentByID(snap, id)
	if !ok {
		return 0, snap, m, d, echo.NewHTTPError(http.StatusNotFound, "no such deployment")
	}
	return id, snap, m, d, nil
}

// DeploymentEdit shows a deployment's form.
func (h *Handler) DeploymentEdit(c echo.Context) error {
	id, snap, m, d, err := h.deploymentOf(c)
	if err != nil {
		return err
	}
	f := models.DeploymentForm{ID: id, Model: m, V: d, Providers: deploymentProviderOptions(snap, d.Provider), CSRF: httpx.CSRFToken(c)}
	return httpx.Render(c, http.StatusOK, models.DeploymentFormPage(h.page(c, "Edit deployment of "+m.Code, "models"), f), nil)
}

// deploymentFromForm reads the form strictly over base (the stored
// deployment when editing, so fields the form does not show are kept). The
// batch limit is read only for embedding models; blank breaker fields keep
// the defaults.
func deploymentFromForm(c echo.Context, base config.Deployment, kind config.Kind) (config.Deployment, config.FieldErrors) {
	errs := config.FieldErrors{}
	d := base
	d.Provider = strings.TrimSpace(c.FormValue("provider"))
	d.UpstreamModel = strings.TrimSpace(c.FormValue("upstream_model"))
	if strings.TrimSpace(c.FormValue("weight")) == "" {
		errs.Add("weight", "is required")
	}
	d.Weight = formInt(c, "weight", errs)
	d.Enabled = formBool(c, "enabled")
	d.MaxConcurrency = formInt(c, "max_concurrency", errs)
	d.MaxInflightTokens = formInt64(c, "max_inflight_tokens", errs)
	d.Prices = config.Prices{
		InputMicros:  formMoney(c, "price_input", errs),
		OutputMicros: formMoney(c, "price_output", errs),
		CachedMicros: formMoney(c, "price_cached", errs),
		Currency:     strings.ToUpper(strings.TrimSpace(c.FormValue("currency"))),
	}
	d.Capabilities = config.Capabilities{
		Thinking: formBool(c, "cap_thinking"),
		Vision:   formBool(c, "cap_vision"),
		Tools:    formBool(c, "cap_tools"),
		// Native structured output (Anthropic's output_config.format).
		StructuredOutput: formBool(c, "cap_structured_output"),
		// Serves OpenAI's Responses API (POST {base}/responses): the
		// Responses door passes through instead of translating.
		ResponsesAPI: formBool(c, "cap_responses_api"),
		// The vendor runs a hosted web search tool for this model.
		WebSearch: formBool(c, "cap_web_search"),
	}
	d.StrictFields = formBool(c, "strict_fields")
	if kind == config.KindEmbedding {
		d.EmbeddingBatchLimit = formInt(c, "embedding_batch_limit", errs)
	}
	d.TimeoutMS = formInt(c, "timeout_ms", errs)
	b := config.BreakerSettings{
		Window:         formInt(c, "breaker_window", errs),
		MinCalls:       formInt(c, "breaker_min_calls", errs),
		FailurePercent: formInt(c, "breaker_failure_percent", errs),
		OpenMS:         formInt(c, "breaker_open_ms", errs),
		HalfOpenProbes: formInt(c, "breaker_half_open_probes", errs),
	}
	d.Breaker = nil
	if b != (config.BreakerSettings{}) {
		d.Breaker = &b
	}
	return d, merge(errs, config.ValidateDeployment(d))
}

// DeploymentCreate adds a deployment to a logic model.
func (h *Handler) DeploymentCreate(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	snap, _, err := h.LogicModels.Draft(ctx)
	if err != nil {
		return err
	}
	m, ok := logicModelByID(snap, id)
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "no such logic model")
	}
	d, errs := deploymentFromForm(c, config.Deployment{}, m.Kind)
	// "Rebalance the others": scale them so the weights still sum to 100
	// beside the posted weight (from the draft as it is now).
	var reweight map[int64]int
	if formBool(c, "rebalance") && d.InService() {
		reweight = config.Rebalance(m.Deployments, d.Weight)
	}
	if len(errs) == 0 {
		if _, err := h.LogicModels.CreateDeploymentRebalanced(ctx, m.ID, d, reweight); err != nil {
			fe, ok := fieldErrors(err)
			if !ok {
				return notFoundOr(err)
			}
			errs = fe
		}
	}
	return h.deploymentSaved(c, snap, 0, m, d, errs)
}

// DeploymentUpdate changes a deployment.
func (h *Handler) DeploymentUpdate(c echo.Context) error {
	id, snap, m, old, err := h.deploymentOf(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	d, errs := deploymentFromForm(c, old, m.Kind)
	if len(errs) == 0 {
		if err := h.LogicModels.UpdateDeployment(ctx, id, d); err != nil {
			fe, ok := fieldErrors(err)
			if !ok {
				return notFoundOr(err)
			}
			errs = fe
		}
	}
	return h.deploymentSaved(c, snap, id, m, d, errs)
}

// deploymentSaved re-renders the form with its errors (422) or goes back to
// the logic model's panel.
func (h *Handler) deploymentSaved(c echo.Context, snap config.Snapshot, id int64, m config.LogicModel, d config.Deployment, errs config.FieldErrors) error {
	if len(errs) > 0 {
		posted, _ := c.FormParams()
		f := models.DeploymentForm{ID: id, Model: m, V: d, Providers: deploymentProviderOptions(snap, d.Provider), Posted: posted, Errors: errs, CSRF: httpx.CSRFToken(c)}
		if id == 0 {
			f.Rebalance, f.RebalanceOn = config.ProposeWeight(m.Deployments).Rebalance, formBool(c, "rebalance")
		}
		return httpx.Render(c, http.StatusUnprocessableEntity, models.DeploymentFormPage(h.page(c, "Deployment of "+m.Code, "models"), f), models.DeploymentFormBody(f))
	}
	h.flash(c, "Deployment of "+m.Code+" on "+d.Provider+" ("+d.UpstreamModel+") saved. Publish to make it live.")
	return httpx.Redirect(c, "/logic-models#model-"+strconv.FormatInt(m.ID, 10))
}

// DeploymentDelete removes a deployment and re-renders its logic model.
func (h *Handler) DeploymentDelete(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	mid, err := h.LogicModels.DeploymentModel(ctx, id)
	if err != nil {
		return notFoundOr(err)
	}
	if err := h.LogicModels.DeleteDeployment(ctx, id); err != nil {
		return notFoundOr(err)
	}
	return h.renderModelPanel(c, mid, models.Panel{}, "Deployment deleted. Publish to make it live.")
}

// DeploymentEnabled enables or disables a deployment in place.
func (h *Handler) DeploymentEnabled(c echo.Context) error {
	enabled := formBool(c, "enabled")
	return h.deploymentQuick(c, func(ctx context.Context, id int64, _ config.FieldErrors) error {
		return h.LogicModels.SetDeploymentEnabled(ctx, id, enabled)
	})
}

// DeploymentParked parks (parked=true) or unparks a deployment in place; its
// weight stays, so unparking gives it back its share.
func (h *Handler) DeploymentParked(c echo.Context) error {
	parked := formBool(c, "parked")
	return h.deploymentQuick(c, func(ctx context.Context, id int64, _ config.FieldErrors) error {
		return h.LogicModels.SetDeploymentParked(ctx, id, parked)
	})
}

// DeploymentWeight sets a deployment's weight in place.
func (h *Handler) DeploymentWeight(c echo.Context) error {
	return h.deploymentQuick(c, func(ctx context.Context, id int64, errs config.FieldErrors) error {
		if strings.TrimSpace(c.FormValue("weight")) == "" {
			errs.Add("weight", "is required")
		}
		w := formInt(c, "weight", errs)
		if len(errs) > 0 {
			return nil
		}
		return h.LogicModels.SetDeploymentWeight(ctx, id, w)
	})
}

// deploymentQuick applies one in-place change to a stored deployment and
// re-renders its logic model's panel, with the refusal on the row when the
// change is invalid (422, nothing stored).
func (h *Handler) deploymentQuick(c echo.Context, change func(context.Context, int64, config.FieldErrors) error) error {
	id, _, m, d, err := h.deploymentOf(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	errs := config.FieldErrors{}
	if err := change(ctx, id, errs); err != nil {
		fe, ok := fieldErrors(err)
		if !ok {
			return notFoundOr(err)
		}
		errs = fe
	}
	if len(errs) > 0 {
		return h.renderModelPanel(c, m.ID, models.Panel{Errors: errs, ErrorRow: id, WeightInput: c.FormValue("weight")}, "")
	}
	return h.renderModelPanel(c, m.ID, models.Panel{}, "Deployment of "+m.Code+" on "+d.Provider+" updated. Publish to make it live.")
}

// renderModelPanel answers a quick deployment action: htmx gets the logic
// model's panel; a plain form post is redirected back to the list, or, when
// refused, gets the whole list with the error on the row (422).
func (h *Handler) renderModelPanel(c echo.Context, modelID int64, refusal models.Panel, msg string) error {
	status := http.StatusOK
	if len(refusal.Errors) > 0 {
		status = http.StatusUnprocessableEntity
	}
	if status == http.StatusOK && !httpx.IsPartial(c) {
		h.flash(c, msg)
		return httpx.Redirect(c, "/logic-models#model-"+strconv.FormatInt(modelID, 10))
	}
	snap, _, err := h.LogicModels.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	panels := logicModelPanels(snap, httpx.CSRFToken(c), httpx.CurrentPrincipal(c).CanEdit())
	at := -1
	for i := range panels {
		if panels[i].Model.ID == modelID {
			panels[i].Errors, panels[i].ErrorRow, panels[i].WeightInput = refusal.Errors, refusal.ErrorRow, refusal.WeightInput
			at = i
		}
	}
	if at < 0 {
		return echo.NewHTTPError(http.StatusNotFound, "no such logic model")
	}
	if httpx.IsPartial(c) {
		return httpx.Render(c, status, models.ModelPanel(panels[at]), nil)
	}
	page := models.ListPage{Page: h.page(c, "Logic models", "models"), Panels: panels}
	return httpx.Render(c, status, models.List(page), nil)
}
