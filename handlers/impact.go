package handlers

import (
	"context"
	"errors"
	"time"

	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/store/rows"
)

// ImpactWindow is how much call-log history the impact preview replays.
const ImpactWindow = 24 * time.Hour

// impactQueryTimeout bounds the call-log aggregation of one preview.
const impactQueryTimeout = 5 * time.Second

// impactBase is what a preview compares a draft with: the live version
// compiled for replay and the request shapes of the last day. Problem says
// why there is nothing to compare (nothing published, the call log
// unreadable); the static dry-run still runs then.
type impactBase struct {
	live      *config.Runtime
	shapes    []routing.TrafficShape
	truncated bool
	problem   string
}

func (h *Handler) impactBase(ctx context.Context) impactBase {
	v, err := h.Versions.LatestVersion(ctx)
	if errors.Is(err, rows.ErrNotFound) {
		return impactBase{problem: "Nothing is published yet, so there is no traffic to compare the draft with."}
	}
	if err != nil {
		h.Log.Warn("impact preview: live version", "err", err)
		return impactBase{problem: "The live version could not be read: " + err.Error()}
	}
	snap, err := config.Decode([]byte(v.Snapshot))
	var live *config.Runtime
	if err == nil {
		live, err = routing.CompileForReplay(snap)
	}
	if err != nil {
		return impactBase{problem: "The live version does not compile for the replay: " + err.Error()}
	}
	qctx, cancel := context.WithTimeout(ctx, impactQueryTimeout)
	defer cancel()
	now := time.Now()
	shapes, truncated, err := h.CallLogs.Shapes(qctx, now.Add(-ImpactWindow), now)
	if err != nil {
		h.Log.Warn("impact preview: call-log shapes", "err", err)
		return impactBase{problem: "The call log could not be read for the replay: " + err.Error()}
	}
	return impactBase{live: live, shapes: shapes, truncated: truncated}
}

// impactOf replays the base's traffic against a draft; nil with a problem
// when it cannot.
func (b impactBase) impactOf(draft config.Snapshot) (*routing.Impact, string) {
	if b.live == nil {
		return nil, b.problem
	}
	rt, err := routing.CompileForReplay(draft)
	if err != nil {
		return nil, "The draft does not compile (the dry-run's errors say why), so its traffic cannot be replayed."
	}
	im, err := routing.Replay(b.live, rt, b.shapes, ImpactWindow)
	if err != nil {
		return nil, err.Error()
	}
	return im, ""
}

// withImpact adds the impact's findings to a dry-run result.
func withImpact(r config.Result, im *routing.Impact) config.Result {
	if im == nil {
		return r
	}
	lost, partly := im.Findings()
	r.Add(routing.CheckTrafficLost, config.SeverityAcknowledge, lost)
	r.Add(routing.CheckTrafficPartlyLost, config.SeverityWarning, partly)
	return r
}

// publishCheck is the dry-run a publish runs: the static checks and the
// replay of the last day's traffic against the snapshot about to go live.
func (h *Handler) publishCheck(ctx context.Context) func(config.Snapshot) config.Result {
	base := h.impactBase(ctx)
	return func(s config.Snapshot) config.Result {
		im, _ := base.impactOf(s)
		return withImpact(h.dryRun(s), im)
	}
}

// draftCheck runs the whole dry-run of the draft: result, impact and why
// there is no impact.
func (h *Handler) draftCheck(ctx context.Context, snap config.Snapshot) (config.Result, *routing.Impact, string, bool) {
	base := h.impactBase(ctx)
	im, problem := base.impactOf(snap)
	return withImpact(h.dryRun(snap), im), im, problem, base.truncated
}
