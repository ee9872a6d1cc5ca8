package handlers

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/routing/health"
	"switchyard/store"
	healthpage "switchyard/views/pages/health"
)

// healthHistory is how many probes and state changes a deployment shows.
const healthHistory = 10

// HealthPage shows every deployment of the live version with its health
// score and state, recent probes and state history.
func (h *Handler) HealthPage(c echo.Context) error {
	ctx := c.Request().Context()
	b := healthpage.Board{Tracking: h.Health != nil}
	var statuses map[int64]health.Status
	var ledger map[int64]health.ProbeLedger
	if h.Health != nil {
		s := h.Health.Settings()
		b.Rules = healthpage.Rules{Window: time.Duration(s.Buckets()) * s.Bucket, MinSamples: s.MinSamples, DegradedBelow: s.DegradedBelow, DownBelow: s.DownBelow, RecoverProbes: s.RecoverProbes}
		var err error
		if statuses, err = h.Health.Statuses(ctx); err != nil {
			h.Log.Warn("health states unavailable", "err", err)
			b.Error = "Health states could not be read from Redis: " + err.Error()
		} else if ledger, err = h.Health.ProbeLedger(ctx); err != nil {
			h.Log.Warn("probe ledger unavailable", "err", err)
			b.Error = "Probe counts and cost could not be read from Redis: " + err.Error()
		}
	}
	var rt *config.Runtime
	if h.Ops != nil {
		rt = h.Ops.Runtime()
	}
	if rt == nil {
		b.NoConfig = true
	} else {
		probes, err := h.Store.RecentProbes(ctx, healthHistory)
		if err != nil {
			return err
		}
		events, err := h.Store.HealthEvents(ctx, healthHistory)
		if err != nil {
			return err
		}
		for id, d := range rt.Deployments {
			r := healthpage.Row{ID: id, Model: d.Model.Code, Provider: d.Provider.Name, Upstream: d.UpstreamModel, Kind: string(d.Model.Kind),
				Parked: d.Enabled && d.Weight <= 0, NotProbed: health.NotProbed(d), Probes: probeViews(probes[id]), Events: healthEventViews(events[id])}
			if l, ok := ledger[id]; ok {
				r.Cost = healthpage.ProbeCost{Sent: l.Sent, Skipped: l.Skipped, Micros: l.CostMicros, Currency: cmp.Or(d.Prices.Currency, config.DefaultCurrency)}
				// A skip newer than the latest recorded probe is what happened
				// this round.
				if !l.LastSkip.IsZero() && (len(r.Probes) == 0 || l.LastSkip.After(r.Probes[0].At)) {
					r.Skip = healthpage.Skip{Code: string(health.SkipLiveTraffic), At: l.LastSkip, LiveOK: l.LastLiveOK}
				}
				b.Total.Sent += l.Sent
				b.Total.Skipped += l.Skipped
				if l.CostMicros != 0 {
					if b.Total.Micros == nil {
						b.Total.Micros = map[string]int64{}
					}
					b.Total.Micros[r.Cost.Currency] += l.CostMicros
				}
			}
			if s, ok := statuses[id]; ok {
				r.Evaluated, r.State, r.Score, r.Samples, r.Since, r.Reason = true, string(s.State), s.Score, s.Samples, s.Since, s.Reason
				r.LiveOK, r.LiveFail, r.ProbeOK, r.ProbeFail = s.Counts.OK, s.Counts.Failed, s.Counts.ProbeOK, s.Counts.ProbeFailed
			}
			b.Rows = append(b.Rows, r)
		}
		slices.SortFunc(b.Rows, func(x, y healthpage.Row) int {
			return cmp.Or(cmp.Compare(x.Model, y.Model), cmp.Compare(x.Provider, y.Provider), cmp.Compare(x.ID, y.ID))
		})
	}
	return httpx.Render(c, http.StatusOK, healthpage.Show(healthpage.Page{Page: h.page(c, "Health", "health"), Board: b}), healthpage.BoardView(b))
}

// probeViews turns stored probes into the page's rows.
func probeViews(ps []store.Probe) []healthpage.Probe {
	var out []healthpage.Probe
	for _, p := range ps {
		out = append(out, healthpage.Probe{At: p.At, Outcome: p.Outcome, LatencyMS: p.LatencyMS, Class: p.Class, HTTPStatus: p.HTTPStatus, Message: p.Message})
	}
	return out
}

// healthEventViews turns stored state changes into the page's rows.
func healthEventViews(es []store.HealthEvent) []healthpage.Event {
	var out []healthpage.Event
	for _, e := range es {
		out = append(out, healthpage.Event{At: e.At, From: e.From, To: e.To, HasScore: e.Score.Valid, Score: e.Score.Float64, Samples: e.Samples, Reason: e.Reason})
	}
	return out
}
