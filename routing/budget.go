package routing

import (
	"context"
	"net/http"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/reason"
)

// The retry budget (the "retry storm" defence): per route group × tier,
// attempts after a request's first — the next key after a 429 as much as
// the next candidate — are capped at a share of the first attempts over a
// sliding window, counted across instances. When a vendor degrades, every
// caller's failover would otherwise multiply the load on the candidates
// that are left.

// TierKey names a route group's tier: one retry budget, one SLA window.
type TierKey struct {
	Group int64
	Tier  config.TierName
}

// BudgetVerdict is the answer to a retry: allowed or not, and how the
// budget stood before it (for the trail and Test route).
type BudgetVerdict struct {
	Allowed bool
	// Firsts and Retries are counted in the window; Allowance is how many
	// retries the window allows (max(percent × firsts, floor × window)).
	Firsts, Retries, Allowance int64
	// Local is set when the count is this instance's alone (Redis unreachable).
	Local bool
}

// RetryBudget counts first attempts and spends retries.
type RetryBudget interface {
	// First counts one first attempt. It must not wait on the network:
	// it is on every request's path.
	First(k TierKey, b config.RBudget)
	// Retry spends one retry when the budget allows it. An implementation
	// that cannot reach its shared counter decides per instance and says so
	// (Local); an error allows the retry.
	Retry(ctx context.Context, k TierKey, b config.RBudget) (BudgetVerdict, error)
}

func (p *Plan) tierKey() TierKey {
	k := TierKey{Group: p.Group.ID}
	if p.Tier != nil {
		k.Tier = p.Tier.Name
	}
	return k
}

// budgetAllows asks the budget before an attempt after the first; a
// refusal is recorded on the trail as the skip of the step not tried.
func (e *Executor) budgetAllows(ctx context.Context, p *Plan, attempts int) (reason.Reason, bool) {
	b := e.State.Budget
	if b == nil || p.Group == nil || p.Group.Budget.Off {
		return reason.Reason{}, true
	}
	k, s := p.tierKey(), p.Group.Budget
	if attempts == 0 {
		b.First(k, s)
		return reason.Reason{}, true
	}
	v, err := b.Retry(ctx, k, s)
	if err != nil || v.Allowed {
		return reason.Reason{}, true
	}
	return reason.Reason{Code: reason.RetryBudgetExhausted, Tier: string(k.Tier), Percent: s.Percent, PerSecond: s.MinPerS,
		WindowMS: s.Window.Milliseconds(), Until: reason.UntilOf(e.now().Add(budgetRetryAfter(s)))}, false
}

// budgetRetryAfter is when a spent budget is expected to have room again:
// a tenth of the window (one bucket slides out), at least a second.
func budgetRetryAfter(s config.RBudget) time.Duration {
	return max(s.Window/10, time.Second)
}

// budgetSpent is the failure of a request stopped by the retry budget: the
// last attempt's failure, answered 503 retry_budget_exhausted with a wait.
func budgetSpent(f *Failure, skip reason.Reason, p *Plan) *Failure {
	f.Status, f.Code, f.NoRetry = http.StatusServiceUnavailable, CodeRetryBudgetExhausted, false
	f.RetryAfter = budgetRetryAfter(p.Group.Budget)
	r, group := skip, p.Group.Name
	f.Told.Budget, f.Told.Group = &r, group
	return f
}
