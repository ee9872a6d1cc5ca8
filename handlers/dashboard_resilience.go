package handlers

import (
	"context"
	"time"

	"switchyard/routing/config"
	"switchyard/store/calllog"
	"switchyard/views/pages/dashboard"
	"switchyard/views/pages/groups"
)

// dashboardResilience reads the retry budget and ladder section: the
// ladder_stats series over the range and, for the live configuration, each
// tier's budget and step-down rule with its state on this instance.
func (h *Handler) dashboardResilience(ctx context.Context, logs CallLogReader, from, to time.Time, step time.Duration) (dashboard.Resilience, error) {
	pts, err := logs.LadderSeries(ctx, calllog.LadderQuery{From: from, To: to, Step: step})
	if err != nil {
		return dashboard.Resilience{}, err
	}
	points := make([]dashboard.LadderPoint, len(pts))
	for i, p := range pts {
		points[i] = dashboard.LadderPoint{Time: p.Time, Group: p.Group, Tier: p.Tier, Requests: p.Requests, Retries: p.Retries,
			Exhausted: p.Exhausted, StepDown: p.StepDown, Cached: p.Cached, Static: p.Static}
	}
	var live []dashboard.LadderRow
	budgets := map[string]string{}
	if h.Ops != nil {
		if rt := h.Ops.Runtime(); rt != nil {
			for _, g := range rt.Snapshot.RouteGroups {
				budgets[g.Name] = groups.BudgetWords(g.RetryBudget)
			}
			// Tiers with a step-down rule are listed even without traffic.
			for _, g := range rt.Groups {
				for _, t := range config.TierNames {
					if sd := g.Ladder.StepDownFor(t); sd != nil {
						st := h.Ops.Resilience(ctx, g, t)
						live = append(live, dashboard.LadderRow{Group: g.Name, Tier: string(t), Rule: stepDownWords(sd), SteppedDown: st.SLA.SteppedDown, Until: st.SLA.Until})
					}
				}
			}
		}
	}
	times := dashboard.Steps(from, to, step)
	return dashboard.Resilience{Charts: dashboard.ResilienceCharts(points, times), Rows: dashboard.LadderRows(points, live, budgets)}, nil
}
