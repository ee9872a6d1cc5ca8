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
	Class        string         `json:"class,omitempty"`
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
	breakers, load := e.State.Breakers, e.State.Load
	if breakers == nil {
		breakers = noBreakers{}
	}
	if load == nil {
		load = noLoad{}
	}
	var last *adapter.Error
	attempts := 0
	for _, step := range p.Steps[call.from:] {
		d := step.Deployment
		skipNow := func(r reason.Reason) {
			tr.add(Attempt{Model: d.Model.Code, DeploymentID: d.ID, Deployment: d.Label(), Provider: d.Provider.Name, Outcome: AttemptSkipped, Skip: &r, Fallback: step.Fallback})
		}
		if ctx.Err() != nil {
			return Served{}, finishFn{}, cancelled(ctx)
		}
		remaining := call.Deadline.Sub(e.now())
		if remaining <= 0 {
			return Served{}, finishFn{}, &Failure{Status: http.StatusGatewayTimeout, Code: CodeTimeout, Class: adapter.ClassTimeout,
				Told: toldChain(ToldBudgetSpent, p, tr, attempts)}
		}
		ad := e.Adapters[d.Provider.Protocol]
		if ad == nil {
			skipNow(reason.Reason{Code: reason.NoProtocol, Protocol: string(d.Provider.Protocol)})
			continue
		}
		done, ok := breakers.Allow(d.ID, d.Breaker)
		if !ok {
			until, _ := breakers.Open(d.ID) // zero while half-open probes are all out
			skipNow(reason.Reason{Code: reason.BreakerOpen, Until: reason.UntilOf(until)})
			continue
		}
		release, err := e.acquire(ctx, load, d, call)
		if err != nil {
			done(OutcomeIgnored)
			if ctx.Err() != nil {
				return Served{}, finishFn{}, cancelled(ctx)
			}
			skipNow(capacitySkip(err, d))
			continue
		}
		var tried []int64 // allocated only once a key has failed
		outcome := OutcomeIgnored
		for {
			keyID, skip, ok := int64(0), reason.Of(reason.NoKeys), false
			if e.State.Keys != nil {
				keyID, skip, ok = e.State.Keys.Pick(d.Provider.ID, d.Provider.ActiveKey, tried)
			} else if len(tried) < len(d.Provider.ActiveKey) {
				keyID, ok = d.Provider.ActiveKey[len(tried)], true
			}
			if !ok {
				if len(tried) == 0 {
					skipNow(skip)
				}
				break
			}
			key := d.Provider.Key(keyID)
			timeout := p.Tier.Timeout
			if d.Timeout > 0 {
				timeout = d.Timeout
			}
			if timeout <= 0 || timeout > remaining {
				timeout = remaining
			}
			if skip, ok := e.budgetAllows(ctx, p, attempts); !ok {
				skipNow(skip)
				done(OutcomeIgnored)
				release()
				return Served{}, finishFn{}, budgetSpent(final(last, p, tr), skip, p)
			}
			actx, cancel := context.WithTimeout(ctx, timeout)
			start := e.now()
			attempts++
			err := safely(do, actx, cancel, d, adapter.Target{BaseURL: d.Provider.BaseURL, APIKey: key.Secret, Bearer: key.Bearer, UpstreamModel: d.UpstreamModel, Capabilities: d.Capabilities, Client: e.Client, Header: d.Provider.Outgoing(call.Header),
				APIVersion: d.Provider.APIVersion, Region: d.Provider.Region, AuthURL: d.Provider.AuthURL})
			at := Attempt{Model: d.Model.Code, DeploymentID: d.ID, Deployment: d.Label(), Provider: d.Provider.Name, Key: key.Fingerprint,
				LatencyMS: e.now().Sub(start).Milliseconds(), Fallback: step.Fallback}
			if err == nil {
				at.Outcome = AttemptOK
				tr.add(at)
				if step.Fallback && p.Fallback != nil {
					tr.Fallback = "policy " + p.Fallback.Name + ": dedicated group " + p.Group.Name + " could not serve; served by shared group " + p.Fallback.Name
				}
				finish := finishFn{ctx: ctx, done: done, release: release, cancel: cancel}
				return Served{Deployment: d, KeyFingerprint: key.Fingerprint, Fallback: step.Fallback, Attempts: attempts}, finish, nil
			}
			cancel()
			class := classOf(ctx, err)
			ue := asUpstream(err, class, timeout)
			at.Outcome, at.Class, at.Status, at.Reason = AttemptFailed, string(class), ue.Status, ue.Message
			tr.add(at)
			if class == adapter.ClassCancelled {
				done(OutcomeIgnored)
				release()
				return Served{}, finishFn{}, cancelled(ctx)
			}
			last = ue
			pol := class.Policy()
			if pol.Breaker {
				outcome = OutcomeFailure
			}
			if e.State.Keys != nil {
				switch pol.Key {
				case adapter.KeyCool:
					e.State.Keys.Cool(keyID, ue.RetryAfter)
				case adapter.KeyQuarantine:
					e.State.Keys.Quarantine(keyID, keyFault(ue))
				}
			}
			if pol.NextKey {
				tried = append(tried, keyID)
				continue
			}
			if !pol.NextCandidate {
				done(OutcomeIgnored)
				release()
				return Served{}, finishFn{}, final(ue, p, tr)
			}
			break
		}
		done(outcome)
		release()
	}
	if last == nil {
		f := &Failure{Status: http.StatusServiceUnavailable, Code: CodeNoAvailableModel, Class: "",
			Told: toldChain(ToldNoModel, p, tr, attempts)}
		hintRetry(f, tr, e.now())
		return Served{}, finishFn{}, f
	}
	f := final(last, p, tr)
	if f.Code == CodeNoAvailableModel {
		hintRetry(f, tr, e.now())
	}
	return Served{}, finishFn{}, f
}

// safely runs one attempt, turning a panic in an adapter into a server
// failure so the slot, the breaker permit and the attempt context are
// released like for any other failure.
func safely(do attemptFn, ctx context.Context, cancel context.CancelFunc, d *config.RDeployment, t adapter.Target) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &adapter.Error{Class: adapter.ClassServer, Message: fmt.Sprintf("internal error in the %s adapter: %v", d.Provider.Protocol, r)}
		}
	}()
	return do(ctx, cancel, d, t)
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
