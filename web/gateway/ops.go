package gateway

import (
	"context"

	"switchyard/handlers"
	"switchyard/routing"
	"switchyard/routing/breaker"
	"switchyard/routing/config"
	"switchyard/routing/ladder"
	"switchyard/store/redis/breakerboard"
	"switchyard/store/redis/keypool"
	"switchyard/store/redis/limits"
)

// ops is the console's view of this instance (handlers.Ops).
type ops struct {
	g      *Gateway
	prefix string
}

var _ handlers.Ops = ops{}

func (o ops) Runtime() *config.Runtime { return o.g.Holder.Current() }
func (o ops) State() *routing.State    { return &o.g.Exec.State }

func (o ops) Breakers(ctx context.Context) (map[string]map[int64]breaker.Status, error) {
	all, err := breakerboard.ReadAll(ctx, o.g.redis, o.prefix)
	if all == nil {
		all = map[string]map[int64]breaker.Status{}
	}
	// This instance's own view is always current, even with Redis down.
	all[o.g.Reporter.InstanceID()] = o.g.Breakers.Snapshot()
	return all, err
}

func (o ops) Loads(ctx context.Context) (map[int64]int64, error) { return o.g.Load.Snapshot(ctx) }

func (o ops) KeyStates(ctx context.Context) (map[int64]keypool.KeyState, error) {
	return o.g.Keys.States(ctx)
}

func (o ops) PeekLimits(ctx context.Context, req limits.Request) (limits.Decision, error) {
	return o.g.Limiter.Peek(ctx, req)
}

func (o ops) LimitUsage(ctx context.Context, callerID int64, tier string) (limits.Usage, error) {
	return o.g.Limiter.Usage(ctx, callerID, tier)
}

func (o ops) TestRequest(ctx context.Context, callerID int64, path string, body []byte) handlers.TestResult {
	return o.g.Data.TestRequest(ctx, callerID, path, body)
}

func (o ops) SLA() routing.SLAWatch { return slaWatch{o.g.SLA} }

func (o ops) Resilience(ctx context.Context, g *config.RGroup, tier config.TierName) handlers.ResilienceState {
	var st handlers.ResilienceState
	k := routing.TierKey{Group: g.ID, Tier: tier}
	if !g.Budget.Off {
		st.Budget, st.BudgetErr = o.g.Budget.Peek(ctx, k, g.Budget)
	}
	if g.Ladder != nil {
		st.SLA = o.g.SLA.State(ladder.Key{Group: g.ID, Tier: tier}, g.Ladder.StepDownFor(tier))
		if g.Ladder.Cache != nil {
			st.CacheSize, st.CacheErr = o.g.Answers.Size(ctx, g.ID)
		}
	}
	return st
}
