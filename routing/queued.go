package routing

import (
	"context"
	"errors"
	"net/http"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/limit"
	"switchyard/routing/queue"
	"switchyard/routing/reason"
)

// Waiting for capacity. A plan is walked without waiting: a deployment at
// its max concurrency or max in-flight tokens is skipped and the next step
// tried. Only when a walk made no attempt and skipped steps for capacity
// does the request wait, in its class's queue (routing/queue), for a slot
// of one of those deployments; then the walk resumes at that step, holding
// the slot the queue took for it.

// heldSlot is a deployment slot the queue took for a waiting request.
type heldSlot struct {
	step    int // index into the plan's steps
	id      int64
	release func()
	used    bool
}

// acquire takes a slot of d for the call: the slot the queue took for it,
// or one from the shared counters — unless requests of this instance are
// queued for d, which come first (the newcomer queues behind them).
func (e *Executor) acquire(ctx context.Context, load Load, d *config.RDeployment, call Call) (func(), error) {
	if h := call.held; h != nil && !h.used && h.id == d.ID {
		h.used = true
		return h.release, nil
	}
	capped := d.MaxConcurrency > 0 || d.MaxInflightTokens > 0
	if capped && e.Queue.Busy(d.ID) {
		return nil, ErrFull
	}
	return load.Acquire(ctx, LoadRequest{Deployment: d, Tokens: call.Tokens})
}

// capacitySkip is the run-time skip reason of a failed Acquire.
func capacitySkip(err error, d *config.RDeployment) reason.Reason {
	switch {
	case errors.Is(err, ErrFull):
		return reason.Reason{Code: reason.OverCapacity, Max: d.MaxConcurrency}
	case errors.Is(err, ErrTokensFull):
		return reason.Reason{Code: reason.OverTokenCapacity, Max: int(d.MaxInflightTokens)}
	}
	return reason.Reason{Code: reason.LoadUnavailable, Detail: err.Error()}
}

// runQueued is run, waiting in the queue while every step it could use is
// at capacity and nothing was attempted.
func (e *Executor) runQueued(ctx context.Context, p *Plan, call Call, tr *Trail, do attemptFn) (Served, finishFn, *Failure) {
	for {
		mark := len(tr.Attempts)
		served, finish, fail := e.run(ctx, p, call, tr, do)
		if h := call.held; h != nil && !h.used {
			h.release() // the step was skipped after all (its breaker opened meanwhile)
		}
		if fail == nil || e.Queue == nil || fail.Class == adapter.ClassCancelled || !e.Queue.Queues(queue.ClassOf(call.Class)) {
			// A class without a queue fails fast at capacity: the plan's
			// capacity skips answer it (a deployment_cap refusal).
			return served, finish, fail
		}
		h, fail := e.queueFor(ctx, p, call, tr, mark, fail)
		if h == nil {
			return Served{}, finishFn{}, fail
		}
		call.from, call.held = h.step, h
	}
}

// queueFor waits in the call's class queue for a slot on a step the run
// just skipped for capacity (from mark on in the trail); without one, the
// failure the caller gets (the run's own when it skipped nothing for
// capacity).
//
//go:noinline (runQueued is on the stack through the vendor call; see walk.keys)
func (e *Executor) queueFor(ctx context.Context, p *Plan, call Call, tr *Trail, mark int, fail *Failure) (*heldSlot, *Failure) {
	steps := capacitySteps(p, call.from, tr.Attempts[mark:])
	if len(steps) == 0 {
		return nil, fail
	}
	h, waited, err := e.awaitCapacity(ctx, p, call, steps)
	tr.waited(waited)
	if err != nil {
		return nil, queueFailure(ctx, err, fail, p, tr, waited.For, call.Class)
	}
	return h, nil
}

// capacitySteps are the plan steps (from index from on) a run skipped for
// capacity, in order; none when the run attempted anything.
func capacitySteps(p *Plan, from int, run []Attempt) []int {
	var out []int
	for _, a := range run {
		if a.Outcome != AttemptSkipped {
			return nil
		}
		if a.Skip == nil || (a.Skip.Code != reason.OverCapacity && a.Skip.Code != reason.OverTokenCapacity) {
			continue
		}
		for i := from; i < len(p.Steps); i++ {
			if p.Steps[i].Deployment.ID == a.DeploymentID {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// awaitCapacity waits in the call's class queue until one of the steps'
// deployments has room for it, and returns the slot taken.
func (e *Executor) awaitCapacity(ctx context.Context, p *Plan, call Call, steps []int) (*heldSlot, queue.Waited, error) {
	load := e.State.Load
	if load == nil {
		load = noLoad{}
	}
	class := queue.ClassOf(call.Class)
	needs := make([]queue.Need, len(steps))
	for i, s := range steps {
		needs[i] = queue.Need{Key: p.Steps[s].Deployment.ID, Tokens: call.Tokens}
	}
	var h *heldSlot
	try := func(pass *queue.Pass) (func(), bool) {
		for _, s := range steps {
			d := p.Steps[s].Deployment
			if !pass.Fits(d.ID, call.Tokens) {
				continue
			}
			rel, err := load.Acquire(ctx, LoadRequest{Deployment: d, Tokens: call.Tokens})
			switch {
			case err == nil:
				h = &heldSlot{step: s, id: d.ID, release: rel}
				return rel, true
			case ctx.Err() != nil:
				return nil, false
			case errors.Is(err, ErrTokensFull):
				pass.Full(d.ID, false, call.Tokens)
			default: // full, or the counter failed: try again next pass
				pass.Full(d.ID, true, 0)
			}
		}
		return nil, false
	}
	_, waited, err := e.Queue.Wait(ctx, class, call.Deadline, needs, try)
	return h, waited, err
}

// queueFailure is what a request is told when it left the queue without a
// slot: refused or shed (429 with Retry-After), its deadline passed (504,
// the time budget spent waiting), or the caller left.
func queueFailure(ctx context.Context, err error, last *Failure, p *Plan, tr *Trail, waited time.Duration, class config.PriorityClass) *Failure {
	var r *queue.Refusal
	switch {
	case errors.As(err, &r):
		return refusedByQueue(r, p, tr)
	case errors.Is(err, queue.ErrExpired):
		t := toldChain(ToldBudgetSpent, p, tr, 0)
		t.Queued, t.Queue = waited, string(class)
		return &Failure{Status: http.StatusGatewayTimeout, Code: CodeTimeout, Class: adapter.ClassTimeout, Told: t}
	case ctx.Err() != nil:
		return cancelled(ctx)
	}
	return last
}

// QueueRetryAfter is the Retry-After of a queue refusal: capacity frees
// continually, so soon.
const QueueRetryAfter = time.Second

// refusedByQueue is the 429 of a full or shedding queue.
func refusedByQueue(r *queue.Refusal, p *Plan, tr *Trail) *Failure {
	kind, code := limit.KindQueueFull, CodeQueueFull
	if r.Shed {
		kind, code = limit.KindQueueShed, CodeQueueShed
	}
	t := Told{Code: ToldQueueRefused, Queue: r.Class.String(), QueueBound: r.Bound, Shed: r.Shed}
	if p != nil {
		t.Model, t.Tier = toldTarget(p)
		t.Steps = toldSteps(tr)
	}
	return &Failure{Status: http.StatusTooManyRequests, Code: code, Class: adapter.ClassRateLimited, RetryAfter: QueueRetryAfter, Told: t,
		Refusal: &Refusal{Limit: kind, Class: r.Class.String(), Value: int64(r.Bound), RetryAfter: QueueRetryAfter}}
}
