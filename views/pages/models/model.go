// Package models renders the Logic models pages: logic models and the
// deployments that serve them.
package models

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"switchyard/routing/breaker"
	"switchyard/routing/config"
	"switchyard/views/components"
	"switchyard/views/layout"
)

// ListPage is the Logic models page.
type ListPage struct {
	Page   layout.Page
	Panels []Panel
}

// Panel is one logic model with its deployments. The quick deployment
// actions (enable, weight, delete) swap it in place.
type Panel struct {
	Model config.LogicModel
	// UsedBy names the tiers that list the model as a candidate, e.g.
	// "default / fast".
	UsedBy []string
	// ProviderOff holds the names of disabled providers.
	ProviderOff map[string]bool
	CSRF        string
	CanEdit     bool
	// Errors of a refused quick action on deployment ErrorRow; WeightInput
	// is what the operator typed, shown again next to the message.
	Errors      config.FieldErrors
	ErrorRow    int64
	WeightInput string
}

// WeightSums adds the deployments' weights as the dry-run check
// weights_sum does (config.SumWeights).
func (p Panel) WeightSums() config.WeightSums { return config.SumWeights(p.Model.Deployments) }

// WeightsOK reports whether the dry-run check weights_sum passes.
func (p Panel) WeightsOK() bool { return p.WeightSums().Balanced() }

// Embedding reports whether the model is an embedding model.
func (p Panel) Embedding() bool { return p.Model.Kind == config.KindEmbedding }

// Target is the CSS selector of the panel, for hx-target.
func (p Panel) Target() string { return "#" + p.DOMID() }

// DOMID is the panel's element id.
func (p Panel) DOMID() string { return "model-" + id(p.Model.ID) }

func (p Panel) weightValue(d config.Deployment) string {
	if p.ErrorRow == d.ID && p.Errors["weight"] != "" {
		return p.WeightInput
	}
	return itoa(d.Weight)
}

func (p Panel) rowError(d config.Deployment, field string) string {
	if p.ErrorRow != d.ID {
		return ""
	}
	return p.Errors[field]
}

// ModelForm is the create/edit form of a logic model.
type ModelForm struct {
	ID     int64
	V      config.LogicModel
	Posted url.Values // raw input, shown again after an error
	Errors config.FieldErrors
	CSRF   string
}

// Action is where the form posts.
func (f ModelForm) Action() string {
	if f.ID == 0 {
		return "/logic-models"
	}
	return "/logic-models/" + id(f.ID)
}

func (f ModelForm) val(name, v string) string { return posted(f.Posted, name, v) }

// DeploymentForm is the create/edit form of a deployment.
type DeploymentForm struct {
	ID        int64             // 0 when adding
	Model     config.LogicModel // the logic model it serves
	V         config.Deployment
	Providers []components.Option
	Posted    url.Values
	Errors    config.FieldErrors
	CSRF      string
	// Rebalance, when adding to a logic model whose deployments already
	// take the whole 100, is what they would become beside the proposed
	// weight (config.ProposeWeight); RebalanceOn ticks the box.
	Rebalance   map[int64]int
	RebalanceOn bool
}

// RebalanceWords describes the proposed rebalancing: "openai gpt-4o 100 → 50".
func (f DeploymentForm) RebalanceWords() string {
	var parts []string
	for _, d := range f.Model.Deployments {
		if w, ok := f.Rebalance[d.ID]; ok {
			parts = append(parts, d.Provider+" "+d.UpstreamModel+" "+itoa(d.Weight)+" → "+itoa(w))
		}
	}
	return strings.Join(parts, ", ")
}

// Action is where the form posts.
func (f DeploymentForm) Action() string {
	if f.ID == 0 {
		return "/logic-models/" + id(f.Model.ID) + "/deployments"
	}
	return "/deployments/" + id(f.ID)
}

// Embedding reports whether the deployment serves an embedding model.
func (f DeploymentForm) Embedding() bool { return f.Model.Kind == config.KindEmbedding }

func (f DeploymentForm) val(name, v string) string { return posted(f.Posted, name, v) }

func (f DeploymentForm) breaker() config.BreakerSettings {
	if f.V.Breaker == nil {
		return config.BreakerSettings{}
	}
	return *f.V.Breaker
}

// known lists the form's fields, so errors on anything else are
// shown in the banner on top.
func (f DeploymentForm) known() []string {
	return []string{"provider", "upstream_model", "weight", "max_concurrency", "max_inflight_tokens", "timeout_ms",
		"price_input", "price_output", "price_cached", "currency", "embedding_batch_limit",
		"breaker", "breaker_window", "breaker_min_calls", "breaker_failure_percent", "breaker_open_ms", "breaker_half_open_probes"}
}

func posted(p url.Values, name, v string) string {
	if p != nil {
		if _, ok := p[name]; ok {
			return p.Get(name)
		}
	}
	return v
}

// breakerDefaults are the circuit-breaker defaults a blank breaker field keeps.
var breakerDefaults = breaker.Defaults

func kindOptions() []components.Option {
	return []components.Option{
		{Value: string(config.KindChat), Label: "chat (completions)"},
		{Value: string(config.KindEmbedding), Label: "embedding"},
	}
}

func id(v int64) string { return strconv.FormatInt(v, 10) }

func itoa(v int) string { return strconv.Itoa(v) }

func i64(v int64) string { return strconv.FormatInt(v, 10) }

// blank shows 0 as an empty input (the default applies).
func blank(v int) string {
	if v == 0 {
		return ""
	}
	return strconv.Itoa(v)
}

// price is a price per 1M tokens as exact decimal text, also as a form value.
func price(v config.Micros) string { return components.MoneyInput(int64(v), false) }

func testid(v string) templ.Attributes { return templ.Attributes{"data-testid": v} }

// Usable counts deployments that can receive traffic: not parked, enabled,
// on an enabled provider.
func (p Panel) Usable() int {
	n := 0
	for _, d := range p.Model.Deployments {
		if !d.Parked && d.Enabled && !p.ProviderOff[d.Provider] {
			n++
		}
	}
	return n
}
