package handlers

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/store/calllog"
	"switchyard/store/redis/keypool"
	"switchyard/views/components"
	"switchyard/views/pages/dashboard"
)

// Dashboard shows traffic over a range from the roll-up tables (never the
// raw call logs), and the live breaker and key states per deployment. An
// htmx request gets the body below the filter.
func (h *Handler) Dashboard(c echo.Context) error {
	ctx := c.Request().Context()
	p := dashboard.Page{Range: c.QueryParam("range"), GroupBy: c.QueryParam("group")}
	d, step, ok := dashboard.RangeSpec(p.Range)
	if !ok {
		p.Range = dashboard.DefaultRange
		d, step, _ = dashboard.RangeSpec(p.Range)
	}
	switch p.GroupBy {
	case calllog.GroupNone, calllog.GroupCaller, calllog.GroupTier, calllog.GroupLogicModel:
	default:
		p.GroupBy = calllog.GroupNone
	}
	if step < time.Hour && p.GroupBy != calllog.GroupNone && p.GroupBy != calllog.GroupTier {
		step = time.Hour // the per-minute roll-up knows route groups and tiers only
	}
	now := time.Now().UTC()
	p.To, p.Step = now, step
	p.From = now.Add(-d).Truncate(step) // whole steps: the oldest one is shown in full

	logs := h.CallLogs
	points, err := h.dashboardCharts(ctx, logs, &p)
	if err != nil {
		return err
	}
	for _, b := range []struct {
		group string
		dst   *[]dashboard.Breakdown
	}{{calllog.GroupCaller, &p.ByCaller}, {calllog.GroupTier, &p.ByTier}, {calllog.GroupLogicModel, &p.ByModel}} {
		pts := points
		if b.group != p.GroupBy || p.Step < time.Hour {
			// Daily points are enough for a breakdown of the whole range.
			if pts, err = dashboardSeries(ctx, logs, calllog.SeriesQuery{From: p.From.Truncate(time.Hour), To: p.To, Step: 24 * time.Hour, GroupBy: b.group}); err != nil {
				return err
			}
		}
		*b.dst = dashboard.Aggregate(pts, calllog.HistogramQuantile)
	}
	costs, err := logs.Costs(ctx, p.From, p.To)
	if err != nil {
		return err
	}
	p.Costs = make([]dashboard.CostRow, len(costs))
	for i, c := range costs {
		p.Costs[i] = dashboard.CostRow{Day: c.Day, Caller: c.Caller, Tier: c.Tier, LogicModel: c.LogicModel, Currency: c.Currency,
			Requests: c.Requests, Errors: c.Errors, PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens,
			CachedTokens: c.CachedTokens, CostMicros: c.CostMicros}
	}
	p.States, p.StatesNote = h.deploymentStates(ctx)
	if p.Resilience, err = h.dashboardResilience(ctx, logs, p.From.Truncate(time.Hour), p.To, max(step, time.Hour)); err != nil {
		return err
	}

	if httpx.IsPartial(c) {
		return httpx.Render(c, http.StatusOK, dashboard.Body(p), nil)
	}
	p.Page = h.page(c, "Dashboard", "dashboard")
	return httpx.Render(c, http.StatusOK, dashboard.View(p), nil)
}

// dashboardCharts fills the totals, charts and error causes of p and
// returns the hourly (or daily) series points. The error rate counts every
// non-2xx by cause from the per-minute outcome roll-up; a per-minute range
// draws requests and latency from it too, tokens and cost (rolled up by
// the hour) per hour.
func (h *Handler) dashboardCharts(ctx context.Context, logs CallLogReader, p *dashboard.Page) ([]dashboard.Point, error) {
	hourly, hourFrom := p.Step, p.From
	if p.Step < time.Hour {
		hourly, hourFrom = time.Hour, p.From.Truncate(time.Hour)
	}
	points, err := dashboardSeries(ctx, logs, calllog.SeriesQuery{From: hourFrom, To: p.To, Step: hourly, GroupBy: p.GroupBy})
	if err != nil {
		return nil, err
	}
	outcomes, err := dashboardOutcomes(ctx, logs, p.From, p.To, p.Step)
	if err != nil {
		return nil, err
	}
	times, hourTimes := dashboard.Steps(p.From, p.To, p.Step), dashboard.Steps(hourFrom, p.To, hourly)
	byTier := p.GroupBy == calllog.GroupTier
	p.Charts = dashboard.Charts(points, hourTimes, p.GroupBy, calllog.HistogramQuantile)
	if p.Step < time.Hour {
		minute := dashboard.Charts(dashboard.MinutePoints(outcomes, byTier), times, p.GroupBy, calllog.HistogramQuantile)
		if p.GroupBy == calllog.GroupNone {
			minute[0].Series = minute[0].Series[:1] // requests; errors are the next chart
		}
		p.Charts[0], p.Charts[2] = minute[0], minute[2]
		p.Charts[2].Note = "Every call, refusals included (the per-minute roll-up)."
	}
	if p.GroupBy == calllog.GroupNone || byTier {
		p.Charts[1] = dashboard.ErrorChart(outcomes, times, byTier)
	}
	p.Causes = dashboard.Causes(outcomes)
	p.Totals = dashboard.Total(points, calllog.HistogramQuantile)
	for _, o := range outcomes {
		p.Totals.Outcomes += o.Requests
		if o.Outcome != "" {
			p.Totals.Non2xx += o.Requests
		}
	}
	if p.Step < time.Hour {
		p.Totals.Requests = p.Totals.Outcomes // the hourly roll-up holds calls before the range
	}
	queues, err := dashboardQueues(ctx, logs, hourFrom, p.To, hourly)
	if err != nil {
		return nil, err
	}
	p.Charts = append(p.Charts, dashboard.QueueCharts(queues, hourTimes, p.Totals.Requests, calllog.HistogramQuantile)...)
	return points, nil
}

// dashboardOutcomes reads the outcome roll-up as the Dashboard's view model.
func dashboardOutcomes(ctx context.Context, logs CallLogReader, from, to time.Time, step time.Duration) ([]dashboard.OutcomePoint, error) {
	pts, err := logs.OutcomeSeries(ctx, calllog.OutcomeQuery{From: from, To: to, Step: step})
	if err != nil {
		return nil, err
	}
	out := make([]dashboard.OutcomePoint, len(pts))
	for i, p := range pts {
		out[i] = dashboard.OutcomePoint{Time: p.Time, Group: p.Group, Tier: p.Tier, Outcome: p.Outcome, Requests: p.Requests, Hist: slices.Clone(p.Hist[:])}
	}
	return out, nil
}

// dashboardSeries reads the roll-up series as the Dashboard's view model
// (views do not import the store).
func dashboardSeries(ctx context.Context, logs CallLogReader, q calllog.SeriesQuery) ([]dashboard.Point, error) {
	pts, err := logs.Series(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]dashboard.Point, len(pts))
	for i, p := range pts {
		out[i] = dashboard.Point{Time: p.Time, Group: p.Group, Requests: p.Requests, Errors: p.Errors, Rejected: p.Rejected,
			Cancelled: p.Cancelled, PromptTokens: p.PromptTokens, CompletionTokens: p.CompletionTokens, CachedTokens: p.CachedTokens,
			ReasoningTokens: p.ReasoningTokens, CostMicros: p.CostMicros, Hist: slices.Clone(p.Hist[:])}
	}
	return out, nil
}

// dashboardQueues reads the queue roll-up as the Dashboard's view model.
func dashboardQueues(ctx context.Context, logs CallLogReader, from, to time.Time, step time.Duration) ([]dashboard.QueuePoint, error) {
	pts, err := logs.QueueSeries(ctx, from, to, step)
	if err != nil {
		return nil, err
	}
	out := make([]dashboard.QueuePoint, len(pts))
	for i, p := range pts {
		out[i] = dashboard.QueuePoint{Time: p.Time, Class: p.Class, Queued: p.Queued, Refused: p.Refused, MeanDepth: p.MeanDepth, Hist: slices.Clone(p.Hist[:])}
	}
	return out, nil
}

// deploymentStates reads every live deployment's breakers (on every
// instance), load and keys.
func (h *Handler) deploymentStates(ctx context.Context) ([]dashboard.DeploymentState, string) {
	if h.Ops == nil {
		return nil, "The data plane is not running on this instance, so breaker, load and key states are not available here."
	}
	rt := h.Ops.Runtime()
	if rt == nil {
		return nil, "Nothing is published yet: no deployment is serving."
	}
	live := h.liveState(ctx)
	notes := live.notes
	out := make([]dashboard.DeploymentState, 0, len(rt.Deployments))
	for _, d := range rt.Deployments {
		ds := dashboard.DeploymentState{ID: d.ID, Model: d.Model.Code, Provider: d.Provider.Name, Upstream: d.UpstreamModel,
			Weight: d.Weight, StaticSkip: d.StaticSkip.String(), Load: live.loads[d.ID], MaxConc: d.MaxConcurrency}
		for _, inst := range live.instances() {
			if st, ok := live.breakers[inst][d.ID]; ok {
				ds.Breakers = append(ds.Breakers, dashboard.InstanceBreaker{Instance: inst, State: st.State, FailureRate: st.FailureRate, Calls: st.Calls})
			}
		}
		for _, k := range d.Provider.Keys {
			kv := dashboard.KeyView{ID: k.ID, Fingerprint: k.Fingerprint, Status: "disabled"}
			if k.Status != "disabled" {
				ks, status := live.keyState(k.ID)
				kv.Status = string(status)
				switch status {
				case keypool.StatusCooling:
					kv.Note = "until " + ks.Until.UTC().Format("15:04:05") + " UTC"
				case keypool.StatusQuarantined:
					kv.Note = components.KeyStateWords(string(ks.Status), ks.Fault, ks.Reason)
				}
			}
			ds.Keys = append(ds.Keys, kv)
		}
		out = append(out, ds)
	}
	slices.SortFunc(out, func(a, b dashboard.DeploymentState) int {
		if c := strings.Compare(a.Model, b.Model); c != 0 {
			return c
		}
		if c := strings.Compare(a.Provider, b.Provider); c != 0 {
			return c
		}
		return int(a.ID - b.ID)
	})
	if len(out) == 0 {
		return nil, fmt.Sprintf("The live version %d has no deployments.", rt.Version)
	}
	note := strings.Join(notes, "; ")
	if note != "" {
		note = "Live state is partial: " + note + "."
	}
	return out, note
}
