package gateway

import (
	"context"
	"time"

	"switchyard/routing/config"
)

// MaxDefaultGrace caps the shutdown grace taken from tier timeouts: a deep
// tier may allow minutes per attempt, but a process manager should not have
// to wait that long to replace an instance. SWITCHYARD_SHUTDOWN_GRACE sets
// any other value.
const MaxDefaultGrace = 120 * time.Second

// minDefaultGrace is the grace when no version is loaded.
const minDefaultGrace = 10 * time.Second

// DefaultGrace is the shutdown grace when none is set: the longest tier
// timeout of the live version, capped at MaxDefaultGrace.
func DefaultGrace(rt *config.Runtime) time.Duration {
	grace := time.Duration(0)
	if rt != nil {
		for _, g := range rt.Groups {
			for _, t := range g.Tiers {
				if t != nil && t.Timeout > grace {
					grace = t.Timeout
				}
			}
		}
	}
	return min(max(grace, minDefaultGrace), MaxDefaultGrace)
}

// BeginDrain marks the instance as draining: /readyz answers 503 so load
// balancers stop sending new requests. In-flight requests go on.
func (g *Gateway) BeginDrain() { g.draining.Store(true) }

// Draining reports whether BeginDrain was called.
func (g *Gateway) Draining() bool { return g.draining.Load() }

// Ready reports whether this instance should receive traffic: a version is
// loaded (from PostgreSQL or the last-known-good cache) and it is not
// draining.
func (g *Gateway) Ready() bool { return g.Holder.Loaded() && !g.draining.Load() }

// CutInFlight ends every data-plane request still in flight: streams end
// with an error event, other requests answer 503, and each is logged as
// interrupted.
func (g *Gateway) CutInFlight() {
	g.Data.Cutting()
	g.cutNow()
}

// InFlight is how many data-plane requests are being served.
func (g *Gateway) InFlight() int64 { return g.Data.InFlight() }

// Drain waits until no data-plane request is in flight or ctx ends, then
// cuts what is left and waits (up to cutWait) for the cut requests to
// finish writing their last event and log row. It returns how many
// requests were in flight at the start and how many it cut.
func (g *Gateway) Drain(ctx context.Context, cutWait time.Duration) (waitedFor, cut int64) {
	waitedFor = g.InFlight()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for g.InFlight() > 0 {
		select {
		case <-ctx.Done():
			g.CutInFlight()
			deadline := time.Now().Add(cutWait)
			for g.InFlight() > 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			return waitedFor, g.Data.CutCount()
		case <-t.C:
		}
	}
	return waitedFor, g.Data.CutCount()
}
