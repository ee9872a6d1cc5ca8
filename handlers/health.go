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
	if h.Health != nil {
		s := h.Health.Settings()
		b.Rules = healthpage.Rules{Window: time.Duration(s.Buckets()) * s.Bucket, MinSamples: s.MinSamples, DegradedBelow: s.DegradedBelow, DownBelow: s.DownBelow, RecoverProbes: s.RecoverProbes}
		var err error
		if statuses, err = h.Health.Statuses(ctx); err != nil {
			h.Log.Warn("health states unavailable", "err", err)
			b.Error = "Health states could not be read from Redis: " + err.Error()
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
