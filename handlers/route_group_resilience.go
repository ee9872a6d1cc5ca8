package handlers

import (
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"switchyard/routing/config"
	"switchyard/views/pages/groups"
)

// resilienceFromForm reads a route group's retry budget and degradation
// ladder from the route-group form into g; errs gets the fields that are
// not numbers.
func resilienceFromForm(c echo.Context, g *config.RouteGroup, errs config.FieldErrors) {
	b := config.RetryBudget{
		Percent:  formInt(c, groups.FieldBudgetPercent, errs),
		MinPerS:  formInt(c, groups.FieldBudgetMinPerS, errs),
		WindowMS: formInt(c, groups.FieldBudgetWindowMS, errs),
		Off:      formBool(c, groups.FieldBudgetOff),
	}
	if b != (config.RetryBudget{}) {
		g.RetryBudget = &b
	}
	var d config.Degradation
	for _, t := range config.TierNames {
		to := strings.TrimSpace(c.FormValue(groups.StepDownField(t, "to")))
		if to == "" {
			continue
		}
		d.StepDown = append(d.StepDown, config.StepDown{Tier: t, To: config.TierName(to),
			P95MS:        formInt(c, groups.StepDownField(t, "p95_ms"), errs),
			ErrorPercent: formInt(c, groups.StepDownField(t, "error_percent"), errs),
			WindowMS:     formInt(c, groups.StepDownField(t, "window_ms"), errs),
			MinCalls:     formInt(c, groups.StepDownField(t, "min_calls"), errs),
			HoldMS:       formInt(c, groups.StepDownField(t, "hold_ms"), errs)})
	}
	if formBool(c, groups.FieldCacheOn) {
		d.Cache = &config.Cache{Scope: strings.TrimSpace(c.FormValue(groups.FieldCacheScope)),
			TTLMS: formInt(c, groups.FieldCacheTTLMS, errs), MaxEntries: formInt(c, groups.FieldCacheMax, errs)}
	}
	d.StaticAnswer = strings.TrimSpace(c.FormValue(groups.FieldStatic))
	if len(d.StepDown) > 0 || d.Cache != nil || d.StaticAnswer != "" {
		g.Degradation = &d
	}
}

// resilienceErrors renames the validation's step-down errors (by rule
// index) to the form's fields (by tier).
func resilienceErrors(g config.RouteGroup, errs config.FieldErrors) config.FieldErrors {
	if g.Degradation == nil {
		return errs
	}
	for i, s := range g.Degradation.StepDown {
		for _, part := range append([]string{"tier"}, groups.StepDownParts...) {
			k := fmt.Sprintf("degradation.step_down[%d].%s", i, part)
			if msg, ok := errs[k]; ok {
				delete(errs, k)
				if part == "tier" {
					part = "to"
				}
				errs.Add(groups.StepDownField(s.Tier, part), msg)
			}
		}
	}
	return errs
}
