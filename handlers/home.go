package handlers

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/store/calllog"
	"switchyard/views/pages/dashboard"
	"switchyard/views/pages/overview"
)

// Home sends an empty installation to onboarding and shows everyone else
// the overview: can each route group × tier serve now, and how it is doing.
func (h *Handler) Home(c echo.Context) error {
	ctx := c.Request().Context()
	if !httpx.IsPartial(c) {
		snap, _, err := h.Drafts.Draft(ctx)
		if err != nil {
			return err
		}
		if len(snap.Providers) == 0 {
			return c.Redirect(http.StatusSeeOther, "/onboarding")
		}
	}
	b, err := h.overviewBoard(ctx)
	if err != nil {
		return err
	}
	return httpx.Render(c, http.StatusOK, overview.Show(overview.Page{Page: h.page(c, "Overview", "overview"), Board: b}), overview.BoardView(b))
}

// overviewBoard reads the verdicts, the last hour's per-minute outcomes
// and today's costs.
func (h *Handler) overviewBoard(ctx context.Context) (overview.Board, error) {
	now := time.Now().UTC()
	b := overview.Board{At: now}
	if h.Alerts != nil {
		firing, err := h.Alerts.FiringAlerts(ctx)
		if err != nil {
			return b, err
		}
		for _, f := range firing {
			b.Firing = append(b.Firing, overview.Firing{Rule: f.Rule, State: f.State})
		}
	}
	var rt *config.Runtime
	if h.Ops != nil {
		rt = h.Ops.Runtime()
	}
	if rt == nil {
		b.NoConfig = true
		return b, nil
	}
	for _, v := range h.verdicts() {
		b.Tiers = append(b.Tiers, overview.Tier{Verdict: v})
	}
	from := now.Add(-overview.Window).Truncate(time.Minute)
	outcomes, err := dashboardOutcomes(ctx, h.CallLogs, from, now, time.Minute)
	if err != nil {
		return b, err
	}
	outcomes = slices.DeleteFunc(outcomes, func(p overview.Point) bool { return p.Group == "" })
	overview.Figures(b.Tiers, outcomes, now, calllog.HistogramQuantile)
	b.Charts = overview.Charts(outcomes, dashboard.Steps(from, now, time.Minute))
	if err := h.overviewSpend(ctx, rt, now, &b); err != nil {
		return b, err
	}
	return b, nil
}

// topCallers is how many callers the overview lists.
const topCallers = 10

// overviewSpend adds today's spend per route group × tier (a caller's
// costs count for its live route group) and the busiest callers today with
// their month against their budget.
func (h *Handler) overviewSpend(ctx context.Context, rt *config.Runtime, now time.Time, b *overview.Board) error {
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	costs, err := h.CallLogs.Costs(ctx, month, now)
	if err != nil {
		return err
	}
	byName := map[string]*config.RCaller{}
	for _, c := range rt.Callers {
		byName[c.Name] = c
	}
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	callers := map[string]*overview.Caller{}
	for _, r := range costs {
		rc := byName[r.Caller]
		if rc == nil {
			continue // not a live caller (rejected before authentication, or removed)
		}
		oc := callers[r.Caller]
		if oc == nil {
			oc = &overview.Caller{Name: rc.Name, Group: rc.Group.Name, Spend: map[string]int64{}, BudgetMicros: rc.BudgetMicros, Currency: rc.BudgetCurrency}
			if oc.Currency == "" {
				oc.Currency = config.DefaultCurrency
			}
			callers[r.Caller] = oc
		}
		if r.Currency == oc.Currency {
			oc.Month += r.CostMicros
		}
		if r.Day.Before(today) {
			continue
		}
		oc.Requests += r.Requests
		if r.CostMicros != 0 {
			oc.Spend[r.Currency] += r.CostMicros
		}
		for i := range b.Tiers {
			if t := &b.Tiers[i]; t.Verdict.Group == rc.Group.Name && string(t.Verdict.Tier) == r.Tier && r.CostMicros != 0 {
				if t.Spend == nil {
					t.Spend = map[string]int64{}
				}
				t.Spend[r.Currency] += r.CostMicros
			}
		}
	}
	for _, c := range callers {
		if c.Requests > 0 {
			b.Callers = append(b.Callers, *c)
		}
	}
	slices.SortFunc(b.Callers, func(x, y overview.Caller) int {
		return cmp.Or(cmp.Compare(y.Requests, x.Requests), cmp.Compare(x.Name, y.Name))
	})
	if len(b.Callers) > topCallers {
		b.Callers = b.Callers[:topCallers]
	}
	return nil
}
