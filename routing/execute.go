package routing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/queue"
	"switchyard/routing/reason"
)

// DefaultRequestTimeout is the request budget when the caller sets none.
const DefaultRequestTimeout = 120 * time.Second

// Executor runs plans against vendors.
type Executor struct {
	Adapters map[config.Protocol]adapter.Adapter
	// Client is shared by every attempt; it must have no Timeout (deadlines
	// come from each attempt's context).
	Client *http.Client
	State  State
	Now    func() time.Time
	// Queue is where a request waits when every deployment it may use is
	// at capacity (nil: it fails at once).
	Queue *queue.Queue
}

// Call is one request to execute.
type Call struct {
	Class    config.PriorityClass // the caller's priority class
	Deadline time.Time            // the request budget (layer 1 of the timeouts)
	// Tokens is the request's estimated tokens, held against deployments'
	// max in-flight tokens.
	Tokens int64
	// Header is the caller's request headers; each provider passes on only
	// those its allowlist names (config.RProvider.Outgoing).
	Header http.Header

	// Set by runQueued for a run after waiting: the step to start from and
	// the slot the queue took for it.
	from int
	held *heldSlot
	// span is the request's span (nil: not traced): each call to a vendor
	// is a child span of it.
	span RequestSpan
}

// Attempt is one entry of the attempt trail: a call made, or a step skipped
// at run time.
type Attempt struct {
	Model        string         `json:"model"`
	DeploymentID int64          `json:"deployment_id,omitempty"`
	Deployment   string         `json:"deployment,omitempty"`
	Provider     string         `json:"provider,omitempty"`
	Key          string         `json:"key,omitempty"` // fingerprint only
	Outcome      AttemptOutcome `json:"outcome"`
	Class        adapter.Class  `json:"class,omitempty"`
	Status       int            `json:"status,omitempty"`
	// Skip says why a skipped step was not tried.
	Skip *reason.Reason `json:"skip,omitempty"`
	// Reason is the vendor's or the network's account of a failed attempt
	// (in rows written before typed skips, also a skip's text).
	Reason    string `json:"reason,omitempty"`
	LatencyMS int64  `json:"latency_ms"`
	Fallback  bool   `json:"fallback,omitempty"`
}

// AttemptOutcome is how one entry of the attempt trail ended. The values
// are stored in the call log's trail (jsonb) and read back by the console.
type AttemptOutcome string

// Attempt outcomes.
const (
	AttemptOK      AttemptOutcome = "ok"      // the deployment served
	AttemptFailed  AttemptOutcome = "failed"  // the call was made and failed
	AttemptSkipped AttemptOutcome = "skipped" // the step was not tried (Skip says why)
)

// Trail is the attempt trail of a request: the plan's skips, then every
// attempt in order.
type Trail struct {
	Skips    []Skip    `json:"skips,omitempty"`
	Attempts []Attempt `json:"attempts"`
	Fallback string    `json:"fallback,omitempty"` // "policy → group X" when the fallback group served
	// Degraded lists the rungs of the degradation ladder the request took
	// (a step-down, then a cached or static answer).
	Degraded []Degraded `json:"degraded,omitempty"`
	// QueuedMS is how long the request waited in its class's queue for
	// capacity (this instance's in-flight cap, deployments at capacity);
	// QueuedBehind how many requests the queue let in meanwhile.
	QueuedMS     int64 `json:"queued_ms,omitempty"`
	QueuedBehind int64 `json:"queued_behind,omitempty"`
	// ServedProtocol is the protocol of the deployment that served (for
	// the metric of dropped fields; the call log has the provider).
	ServedProtocol string `json:"-"`
	queued         bool   // it queued, if only for less than a millisecond
	first          [1]Attempt
}

// Made is how many calls the trail made to vendors: its attempts that were
// tried, not the steps it skipped (a spent retry budget, a deployment at
// capacity), which cost the vendor nothing.
func (t *Trail) Made() int {
	n := 0
	for _, a := range t.Attempts {
		if a.Outcome != AttemptSkipped {
			n++
		}
	}
	return n
}

// add appends an attempt; the first one (most requests make one) needs no
// allocation of its own.
func (tr *Trail) add(a Attempt) {
	if tr.Attempts == nil {
		tr.Attempts = tr.first[:0]
	}
	tr.Attempts = append(tr.Attempts, a)
}

// waited adds a wait in the queue to the trail.
func (tr *Trail) waited(w queue.Waited) {
	if w.Queued {
		tr.queued = true
		tr.QueuedMS += w.For.Milliseconds()
		tr.QueuedBehind += w.Behind
	}
}

// Served says which deployment and key answered.
type Served struct {
	Deployment     *config.RDeployment
	KeyFingerprint string
	Fallback       bool
	Attempts       int
}

// Failure is what the caller is told when nothing succeeded: an HTTP
// status and OpenAI error code, and the message as data (Told), rendered
// by Text once the request id is known.
type Failure struct {
	Status     int
	Code       ErrorCode
	Told       Told
	Class      adapter.Class
	RetryAfter time.Duration
	// NoRetry asks clients not to retry (x-should-retry: false).
	NoRetry bool
	// Param is the request field at fault, if any (OpenAI's error param).
	Param string
	// Refusal is set when our own queue refused the request (429).
	Refusal *Refusal
}

// Text is the caller's error message, naming requestID.
func (f *Failure) Text(requestID string) string { return f.Told.Text(requestID) }

func (f *Failure) Error() string { return string(f.Code) + ": " + f.Told.Text("") }

// attemptFn makes one call. It runs under the attempt's context; a nil
// error means the deployment served and its finish func (if any) will be
// called by the caller of run.
type attemptFn func(ctx context.Context, cancel context.CancelFunc, d *config.RDeployment, t adapter.Target) error

// finishFn completes a served attempt: it records the breaker outcome,
// releases the concurrency slot and cancels the attempt context (a value,
// not a closure: nothing to allocate per request). Its zero value does
// nothing.
type finishFn struct {
	ctx     context.Context
	done    func(Outcome)
	release func()
	cancel  context.CancelFunc
}

// call finishes the attempt; err is the error that ended a stream after it
// was committed (nil for success).
func (f finishFn) call(err error) {
	if f.done == nil {
		return
	}
	o := OutcomeSuccess
	if err != nil {
		if pol := classOf(f.ctx, err).Policy(); pol.Breaker {
			o = OutcomeFailure
		} else {
			o = OutcomeIgnored
		}
	}
	f.done(o)
	f.release()
	f.cancel()
}

func (e *Executor) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// run walks the plan: for each step, for each usable key, try; the failure
// class decides between the next key, the next step and returning at once.
func (e *Executor) run(ctx context.Context, p *Plan, call Call, tr *Trail, do attemptFn) (Served, finishFn, *Failure) {
	if call.held == nil {
		tr.Skips = append(tr.Skips, p.Skips...)
	}
	w := walk{e: e, ctx: ctx, p: p, call: call, tr: tr, breakers: e.State.Breakers, load: e.State.Load}
	if w.breakers == nil {
		w.breakers = noBreakers{}
	}
	if w.load == nil {
		w.load = noLoad{}
	}
	for _, step := range p.Steps[call.from:] {
		if served, finish, fail, over := w.step(step, do); over {
			return served, finish, fail
		}
	}
	return Served{}, finishFn{}, w.exhausted()
}

// walk is one run over a plan's steps: what its steps share. (The
// attempt function is passed along, not kept: kept, it would escape, and
// every request would allocate its closure.)
type walk struct {
	e        *Executor
	ctx      context.Context
	p        *Plan
	call     Call
	tr       *Trail
	breakers Breakers
	load     Load
	attempts int            // calls made so far
	last     *adapter.Error // the failure of the last call made
	target   adapter.Target // the call in flight's (see keys)
}

// skip records a step not tried at run time.
func (w *walk) skip(step Step, r reason.Reason) {
	d := step.Deployment
	w.tr.add(Attempt{Model: d.Model.Code, DeploymentID: d.ID, Deployment: d.Label(), Provider: d.Provider.Name, Outcome: AttemptSkipped, Skip: &r, Fallback: step.Fallback})
}

// step tries one step of the plan: its adapter, its breaker and a slot,
// then its keys. over reports that the walk ends here, served or with the
// failure the caller gets; otherwise the next step is tried.
func (w *walk) step(step Step, do attemptFn) (served Served, finish finishFn, fail *Failure, over bool) {
	remaining, done, release, fail := w.admit(step)
	if done == nil {
		return Served{}, finishFn{}, fail, fail != nil
	}
	return w.keys(step, remaining, done, release, do)
}

// admit checks what a step needs before its keys are tried: time left,
// an adapter, a breaker permit (done) and a slot (release). Without them
// (done is nil) the step is recorded as skipped, or fail ends the walk.
//
//go:noinline (its frame must not stay on the stack through the call; see keys)
func (w *walk) admit(step Step) (remaining time.Duration, done func(Outcome), release func(), fail *Failure) {
	d := step.Deployment
	if w.ctx.Err() != nil {
		return 0, nil, nil, cancelled(w.ctx)
	}
	remaining = w.call.Deadline.Sub(w.e.now())
	if remaining <= 0 {
		return 0, nil, nil, &Failure{Status: http.StatusGatewayTimeout, Code: CodeTimeout, Class: adapter.ClassTimeout,
			Told: toldChain(ToldBudgetSpent, w.p, w.tr, w.attempts)}
	}
	if w.e.Adapters[d.Provider.Protocol] == nil {
		w.skip(step, reason.Reason{Code: reason.NoProtocol, Protocol: string(d.Provider.Protocol)})
		return 0, nil, nil, nil
	}
	done, ok := w.breakers.Allow(d.ID, d.Breaker)
	if !ok {
		until, _ := w.breakers.Open(d.ID) // zero while half-open probes are all out
		w.skip(step, reason.Reason{Code: reason.BreakerOpen, Until: reason.UntilOf(until)})
		return 0, nil, nil, nil
	}
	release, err := w.e.acquire(w.ctx, w.load, d, w.call)
	if err != nil {
		done(OutcomeIgnored)
		if w.ctx.Err() != nil {
			return 0, nil, nil, cancelled(w.ctx)
		}
		w.skip(step, capacitySkip(err, d))
		return 0, nil, nil, nil
	}
	return remaining, done, release, nil
}

// keys calls the step's deployment with each usable key in turn, holding
// its breaker permit (done) and its slot (release): a served call hands
// both to its finish; otherwise both are given back here.
//
// keys is on the stack for the whole vendor call, a streamed one through
// its first content, so what it does before and after the call lives in
// the helpers below: a frame this small keeps a request's goroutine
// within a 16 KB stack (a thousand open streams would otherwise hold
// 32 KB each).
func (w *walk) keys(step Step, remaining time.Duration, done func(Outcome), release func(), do attemptFn) (Served, finishFn, *Failure, bool) {
	d := step.Deployment
	var tried []int64 // allocated only once a key has failed
	outcome := OutcomeIgnored
	for {
		keyID, ok := w.nextKey(step, tried)
		if !ok {
			break
		}
		timeout := attemptTimeout(w.p, d, remaining)
		if fail := w.budgetRefuses(step); fail != nil {
			done(OutcomeIgnored)
			release()
			return Served{}, finishFn{}, fail, true
		}
		actx, cancel := context.WithTimeout(w.ctx, timeout)
		start := w.e.now()
		w.attempts++
		key := d.Provider.Key(keyID)
		span := w.prepare(d, key, start)
		err := safely(do, actx, cancel, d, &w.target)
		w.target = adapter.Target{} // no secret outlives its call
		if err == nil {
			return w.served(step, key, start, span), finishFn{ctx: w.ctx, done: done, release: release, cancel: cancel}, nil, true
		}
		cancel()
		next, fail := w.failedCall(step, key, start, span, err, timeout, &outcome)
		switch next {
		case nextKey:
			tried = append(tried, keyID)
			continue
		case stopWalk:
			done(OutcomeIgnored)
			release()
			return Served{}, finishFn{}, fail, true
		}
		break // the next candidate
	}
	done(outcome)
	release()
	return Served{}, finishFn{}, nil, false
}

// nextKey picks the step's next usable key. When there is none before any
// was tried, the step is recorded as skipped, with why.
func (w *walk) nextKey(step Step, tried []int64) (int64, bool) {
	keyID, skip, ok := w.pick(step.Deployment, tried)
	if !ok && len(tried) == 0 {
		w.skip(step, skip)
	}
	return keyID, ok
}

// budgetRefuses is the failure the caller gets when the retry budget
// refuses another call (the step is recorded as skipped), or nil.
func (w *walk) budgetRefuses(step Step) *Failure {
	skip, ok := w.e.budgetAllows(w.ctx, w.p, w.attempts)
	if ok {
		return nil
	}
	w.skip(step, skip)
	return budgetSpent(final(w.last, w.p, w.tr), skip, w.p)
}

// prepare sets w.target for a call of d with key and starts the call's
// span (nil for an untraced request).
//
//go:noinline (see keys)
func (w *walk) prepare(d *config.RDeployment, key *config.RKey, start time.Time) AttemptSpan {
	out := d.Provider.Outgoing(w.call.Header)
	var span AttemptSpan
	if w.call.span != nil {
		span, out = w.call.span.Attempt(start, d, out)
	}
	w.target = adapter.Target{BaseURL: d.Provider.BaseURL, APIKey: key.Secret, Bearer: key.Bearer, UpstreamModel: d.UpstreamModel, Capabilities: d.Capabilities, Client: w.e.Client, Header: out,
		APIVersion: d.Provider.APIVersion, Region: d.Provider.Region, Project: d.Provider.Project, AuthURL: d.Provider.AuthURL, Quirks: d.Provider.Quirks}
	return span
}

// called is the attempt record of a call made with key since start.
func (w *walk) called(step Step, key *config.RKey, start, end time.Time) Attempt {
	d := step.Deployment
	return Attempt{Model: d.Model.Code, DeploymentID: d.ID, Deployment: d.Label(), Provider: d.Provider.Name, Key: key.Fingerprint,
		LatencyMS: end.Sub(start).Milliseconds(), Fallback: step.Fallback}
}

// afterFailure is where the walk goes after a failed call.
type afterFailure uint8

const (
	nextCandidate afterFailure = iota
	nextKey                    // the same deployment with another key
	stopWalk                   // the caller gets the failure
)

// failedCall records a failed call, penalises its key and says where the
// walk goes next; outcome becomes a breaker failure when the class counts.
//
//go:noinline (see keys)
func (w *walk) failedCall(step Step, key *config.RKey, start time.Time, span AttemptSpan, err error, timeout time.Duration, outcome *Outcome) (afterFailure, *Failure) {
	end := w.e.now()
	at := w.called(step, key, start, end)
	class := classOf(w.ctx, err)
	ue := asUpstream(err, class, timeout)
	at.Outcome, at.Class, at.Status, at.Reason = AttemptFailed, class, ue.Status, ue.Message
	endAttempt(span, end, at)
	w.tr.add(at)
	if class == adapter.ClassCancelled {
		return stopWalk, cancelled(w.ctx)
	}
	w.last = ue
	pol := class.Policy()
	if pol.Breaker {
		*outcome = OutcomeFailure
	}
	w.e.penalize(key.ID, pol, ue)
	switch {
	case pol.NextKey:
		return nextKey, nil
	case !pol.NextCandidate:
		return stopWalk, final(ue, w.p, w.tr)
	}
	return nextCandidate, nil
}

// served records the call that served and says who served.
//
//go:noinline (see keys)
func (w *walk) served(step Step, key *config.RKey, start time.Time, span AttemptSpan) Served {
	end := w.e.now()
	at := w.called(step, key, start, end)
	at.Outcome = AttemptOK
	endAttempt(span, end, at)
	w.tr.add(at)
	if step.Fallback && w.p.Fallback != nil {
		w.tr.Fallback = "policy " + w.p.Fallback.Name + ": dedicated group " + w.p.Group.Name + " could not serve; served by shared group " + w.p.Fallback.Name
	}
	return Served{Deployment: step.Deployment, KeyFingerprint: at.Key, Fallback: step.Fallback, Attempts: w.attempts}
}

// pick is the next key of d's provider to try: the key pool's choice, or
// without a pool the provider's active keys in order.
func (w *walk) pick(d *config.RDeployment, tried []int64) (int64, reason.Reason, bool) {
	if w.e.State.Keys != nil {
		return w.e.State.Keys.Pick(d.Provider.ID, d.Provider.ActiveKey, tried)
	}
	if len(tried) < len(d.Provider.ActiveKey) {
		return d.Provider.ActiveKey[len(tried)], reason.Reason{}, true
	}
	return 0, reason.Of(reason.NoKeys), false
}

// penalize cools or quarantines a key its failure's policy says to.
func (e *Executor) penalize(keyID int64, pol adapter.Policy, ue *adapter.Error) {
	if e.State.Keys == nil {
		return
	}
	switch pol.Key {
	case adapter.KeyCool:
		e.State.Keys.Cool(keyID, ue.RetryAfter)
	case adapter.KeyQuarantine:
		e.State.Keys.Quarantine(keyID, keyFault(ue))
	}
}

// attemptTimeout is one call's timeout: the deployment's, else the
// tier's, within what is left of the request budget.
func attemptTimeout(p *Plan, d *config.RDeployment, remaining time.Duration) time.Duration {
	timeout := p.Tier.Timeout
	if d.Timeout > 0 {
		timeout = d.Timeout
	}
	if timeout <= 0 || timeout > remaining {
		timeout = remaining
	}
	return timeout
}

// exhausted is the failure of a walk that ran out of steps: nothing could
// be tried (no_available_model), or the last call's failure.
func (w *walk) exhausted() *Failure {
	if w.last == nil {
		f := &Failure{Status: http.StatusServiceUnavailable, Code: CodeNoAvailableModel, Told: toldChain(ToldNoModel, w.p, w.tr, w.attempts)}
		hintRetry(f, w.tr, w.e.now())
		return f
	}
	f := final(w.last, w.p, w.tr)
	if f.Code == CodeNoAvailableModel {
		hintRetry(f, w.tr, w.e.now())
	}
	return f
}

// safely runs one attempt, turning a panic in an adapter into a server
// failure so the slot, the breaker permit and the attempt context are
// released like for any other failure.
func safely(do attemptFn, ctx context.Context, cancel context.CancelFunc, d *config.RDeployment, t *adapter.Target) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &adapter.Error{Class: adapter.ClassServer, Message: fmt.Sprintf("internal error in the %s adapter: %v", d.Provider.Protocol, r)}
		}
	}()
	return do(ctx, cancel, d, *t)
}

// Unavailable is the failure of a plan with no step to try (every
// candidate and deployment skipped), or nil when there is something to try.
// Callers check it before spending limits on a request that cannot be served.
func (e *Executor) Unavailable(p *Plan, tr *Trail) *Failure {
	if len(p.Steps) > 0 {
		return nil
	}
	_, _, f := e.run(context.Background(), p, Call{Deadline: e.now().Add(time.Second)}, tr, nil)
	return f
}

// classOf classifies an attempt error, telling the caller's cancellation
// (never the vendor's fault) from the attempt's own deadline.
func classOf(parent context.Context, err error) adapter.Class {
	if parent.Err() != nil && errors.Is(parent.Err(), context.Canceled) {
		return adapter.ClassCancelled
	}
	c := adapter.ClassOf(err)
	if c == adapter.ClassCancelled && parent.Err() == nil {
		// The attempt context was cancelled by us (first-chunk timeout).
		return adapter.ClassTimeout
	}
	return c
}

func asUpstream(err error, class adapter.Class, timeout time.Duration) *adapter.Error {
	var ue *adapter.Error
	if errors.As(err, &ue) {
		cp := *ue
		cp.Class = class
		if class == adapter.ClassTimeout && cp.Message == "" {
			cp.Message = "no answer within " + timeout.String()
		}
		return &cp
	}
	msg := err.Error()
	if class == adapter.ClassTimeout {
		msg = "no answer within " + timeout.String()
	}
	return &adapter.Error{Class: class, Message: msg, Err: err}
}

func keyFault(ue *adapter.Error) KeyFault {
	return KeyFault{Class: ue.Class, Status: ue.Status, Detail: truncate(ue.Message, 200)}
}

func cancelled(ctx context.Context) *Failure {
	return &Failure{Status: 499, Code: CodeClientCancelled, Class: adapter.ClassCancelled, Told: Told{Code: ToldCancelled, Class: adapter.ClassCancelled}}
}

// final turns the last failure into what the caller sees (the
// failure-classification table); toldFailure decides the words.
func final(ue *adapter.Error, p *Plan, tr *Trail) *Failure {
	pol := ue.Class.Policy()
	f := &Failure{Status: pol.Status, Code: ErrorCode(pol.Code), Class: ue.Class, RetryAfter: ue.RetryAfter, Told: toldFailure(ue, p, tr)}
	switch ue.Class {
	case adapter.ClassContentFilter, adapter.ClassBadRequest:
		f.NoRetry = true
		return f
	case adapter.ClassAuth, adapter.ClassBilling:
		f.Code = CodeNoAvailableModel
	}
	if f.Status == http.StatusTooManyRequests || f.Status == http.StatusServiceUnavailable {
		if f.RetryAfter <= 0 {
			f.RetryAfter = 5 * time.Second
		}
	}
	return f
}

// toldChain is a failure told as the chain's steps: nothing could be tried
// (ToldNoModel) or the time budget ran out (ToldBudgetSpent).
func toldChain(code ToldCode, p *Plan, tr *Trail, attempts int) Told {
	t := Told{Code: code, Attempts: attempts, Steps: toldSteps(tr)}
	t.Model, t.Tier = toldTarget(p)
	if code == ToldBudgetSpent {
		t.Class = adapter.ClassTimeout
	}
	if p.Tier != nil && len(p.Tier.Levels) == 0 && p.Target.Explicit == nil {
		t.Group = p.Group.Name
	}
	return t
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
