package routing

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/frontdoor"
	"switchyard/routing/idem"
	"switchyard/routing/limit"
	"switchyard/routing/record"
)

// The request journey: the seven steps every data-plane request takes —
// authenticate, idempotency, route, limits, execute, account, log — as one
// pipeline without an HTTP framework or a database. It takes a parsed
// request and returns an Answer (a body, or a stream of SSE events); the
// HTTP handler only copies the answer onto the wire, and the console's test
// request reads the same Answer.
//
// Each step has its file, in the order a request meets them:
//
//	journey.go          Serve and finish: the order of the steps
//	journey_auth.go     authenticate the caller key
//	journey_body.go     read the body within its bounds (bodybudget.go)
//	journey_idem.go     Idempotency-Key: claim, replay, store or release
//	journey_route.go    the request budget, resolve and plan, the gate
//	journey_queue.go    the instance's in-flight cap and class queues
//	journey_limit.go    the caller × tier limits and the token estimate
//	journey_serve.go    chat, stream, embeddings and model listings
//	                    (journey_count.go: count_tokens)
//	journey_fail.go     what a caller is told when nothing served
//	journey_degraded.go the degradation ladder: step-down, cached, static
//	journey_answer.go   errors and bodies in the front door's shape
//	journey_settle.go   usage, cost, and the settlement of the limits
//	refusal.go          the refusing limit, as codes, on the row
//	journey_record.go   the call-log row, the log line and the observer

// Limiter is the caller × tier limit check.
type Limiter interface {
	Check(ctx context.Context, req limit.Request) (limit.Decision, error)
	// Settle runs after the answer, even when the client has gone: it
	// must ignore ctx's cancellation and bound its own time.
	Settle(ctx context.Context, r limit.Reservation, actualTokens, costMicros int64) error
}

// Idempotency stores and replays results by Idempotency-Key.
type Idempotency interface {
	Begin(ctx context.Context, callerID int64, key string, fingerprint [32]byte) (idem.Outcome, error)
	Complete(ctx context.Context, c idem.Claim, r idem.Result) error
	Abandon(ctx context.Context, c idem.Claim) error
}

// CallLogSink receives exactly one record per data-plane request.
type CallLogSink interface{ Write(record.Call) }

// Observer is told how each request ended (metrics).
type Observer interface {
	// Finished is called once per request with its call-log row and trail.
	Finished(c *record.Call, tr *Trail, elapsed time.Duration)
	// Refused counts a request refused by a limit ("rate_limited",
	// "quota_exceeded", "budget_exceeded") or by a priority queue
	// ("queue_full", "queue_shed").
	Refused(code string)
}

// KeyUseRecorder keeps the last use of each caller key, in memory; it
// writes them out in batches, never per request.
type KeyUseRecorder interface {
	CallerKeyUsed(keyID int64, at time.Time, addr string)
}

// Journey serves data-plane requests.
type Journey struct {
	Live   interface{ Current() *config.Runtime }
	Exec   *Executor
	Limits Limiter     // nil: no limits
	Idem   Idempotency // nil: Idempotency-Key is refused with 503
	Calls  CallLogSink // nil: records are dropped
	Watch  Observer    // nil: nothing observes
	// The instance's in-flight cap and priority queues are Exec.Queue.
	MaxBody int64 // default 10 MB
	// CountTokens bounds POST /v1/messages/count_tokens, which spends no
	// tokens but costs CPU: a rate of its own and a body size of its own.
	CountTokens CountTokensLimits
	// BodyBytes bounds the request-body bytes in flight (nil: no bound).
	BodyBytes *BodyBudget
	Log       *slog.Logger
	// DefaultTimeout is the request budget without X-Request-Timeout.
	DefaultTimeout time.Duration
	// Clock is the time source of latencies (default time.Now).
	Clock func() time.Time
	// SLA and Answers serve the degradation ladder: the tiers' SLA windows
	// (nil: no step-down) and the answer cache (nil: no cached answers).
	SLA     SLAWatch
	Answers AnswerCache
	// KeyUse is told which caller key authenticated each request (nil:
	// nobody records last use). It must not block: it is called on every
	// request.
	KeyUse KeyUseRecorder
	// Trace starts a span per request (nil: nothing is traced).
	Trace Tracer

	avg outputAverages
}

// Endpoint is which data-plane operation a request asks for.
type Endpoint int

// Endpoints.
const (
	EndpointChat Endpoint = iota
	EndpointEmbeddings
	EndpointModels
	EndpointModel // one model: Request.ModelID
	// EndpointMessages is Anthropic's POST /v1/messages front door.
	EndpointMessages
	// EndpointCountTokens is POST /v1/messages/count_tokens.
	EndpointCountTokens
	// EndpointResponses is OpenAI's POST /v1/responses front door.
	EndpointResponses
)

// Request is one data-plane request as it arrived.
type Request struct {
	Endpoint Endpoint
	// Path is the request path, part of the idempotency fingerprint.
	Path string
	// Query is the request's raw query; a native path passes the door's
	// own switches in it (Messages' beta=true) to the vendor.
	Query string
	// Authorization is the Authorization header ("Bearer <caller key>").
	Authorization string
	// APIKey is the x-api-key header (the Anthropic SDKs' way of sending
	// the key) or the api-key header (Azure-style clients); used when
	// Authorization carries no bearer token.
	APIKey string
	// ClientAddr is the client's network address (host:port), recorded as
	// the caller key's last user.
	ClientAddr string
	// CallerID, when not 0, is a caller chosen by a signed-in operator (the
	// console's test request): no key is checked.
	CallerID int64
	Body     io.Reader
	// BodyLen is the body's declared length (Content-Length), or -1 when
	// unknown (0 is read as unknown too).
	BodyLen int64
	// IdempotencyKey, RequestTimeout and InputType are the headers
	// Idempotency-Key, X-Request-Timeout and X-Input-Type.
	IdempotencyKey string
	RequestTimeout string
	InputType      string
	// ModelID is the {id} of GET /v1/models/{id}.
	ModelID string
	// Header is the caller's request headers. Only the names a provider's
	// passthrough allowlist names ever reach that vendor.
	Header http.Header
	// Reply, when set, is where the answer's headers are set: the HTTP
	// response's own header map, so they need no copy. Nil: a new map.
	Reply http.Header
}

// Answer is what the caller gets. A streamed answer has Stream set: send
// Status and Header, then every event Stream.Next returns. Done must be
// called exactly once when the answer is on the wire (or could not be
// sent): it settles limits, stores the idempotent result and writes the
// call log.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
	Stream *Stream
	// Silent is set when the client is gone: nothing is to be sent.
	Silent    bool
	RequestID string
	// Trail is the request's attempt trail (for the console's test request).
	Trail *Trail
	// Refusal names the limit that refused the request, if one did.
	Refusal *Refusal

	x *exchange
}

// Refusal is a limit's refusal, as codes and numbers.
type Refusal struct {
	Limit      limit.Kind
	Value      int64
	RetryAfter time.Duration
	// Class is the priority class a queue refusal concerns (Value is then
	// the queue's bound).
	Class string
}

// closingGrace is how long past the attempt's deadline a stream may still
// write: room for the error event that says the attempt timed out.
const closingGrace = time.Second

// BodyWriteTimeout bounds writing a whole non-streamed answer to a caller
// that does not read it.
const BodyWriteTimeout = 30 * time.Second

// WriteDeadline is when the answer must be on the wire: for a stream, the
// committed attempt's deadline (the tier's timeout, within the request's
// budget) plus a second for the closing event; otherwise BodyWriteTimeout
// from now. A caller that has not taken the answer by then stalled: the
// sender gives up, and Done, given the write's error, releases the
// deployment's slot and the upstream and logs the call client_stalled.
func (a *Answer) WriteDeadline() time.Time {
	x := a.x
	if a.Stream == nil {
		return x.j.now().Add(BodyWriteTimeout)
	}
	end := a.Stream.committed.Deadline
	if end.IsZero() {
		end = x.deadlineAt
	}
	if end.IsZero() {
		end = x.start.Add(DefaultRequestTimeout)
	}
	return end.Add(closingGrace)
}

// Stalled reports whether err, the error writing an answer met, is its
// write deadline passing (WriteDeadline).
func Stalled(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// Done finishes the request; sendErr is the error writing the answer met
// (nil when it was sent). Safe to call more than once.
func (a *Answer) Done(sendErr error) {
	if a.Stream != nil {
		a.Stream.end(sendErr)
	}
	a.x.finish()
}

// finish is the journey's last step, run exactly once per request after
// the answer is on the wire (or could not be sent): it releases what the
// request held, settles the limits, stores or releases the idempotent
// result, feeds the degradation ladder, and writes the call-log row with
// the queue wait, the trail and any refusal, then tells the observer.
func (x *exchange) finish() {
	if x.logged {
		return
	}
	x.logged = true
	x.releaseHeld()
	x.settleNow()
	x.finishIdempotency()
	elapsed := x.recordTiming()
	x.finishLadder()
	x.recordQueue()
	x.recordTrail()
	x.recordRefusal()
	x.writeRow(elapsed)
	x.endSpan()
}

// exchange is one data-plane request in progress.
type exchange struct {
	j      *Journey
	ctx    context.Context
	req    Request
	a      *Answer
	ans    Answer // what a points at: one allocation with the exchange
	rec    record.Call
	start  time.Time
	rt     *config.Runtime
	caller *config.RCaller
	key    config.LiveKey // the caller key that authenticated (zero for a console test request)
	tier   string
	// explicit: the request named a logic model, not a tier (tier is then
	// only the tier whose timeouts and limits apply).
	explicit bool
	trail    Trail
	idem     idemState
	logged   bool
	release  func() // the saturation gate's slot
	plan     *Plan
	// deadlineAt is the request budget's end.
	deadlineAt time.Time
	// bodyCharge is what the body holds of Journey.BodyBytes.
	bodyCharge int64
	// gateDec is the limit decision that admitted the request (its window
	// headers are re-sent to agree with an upstream's 429).
	gateDec    limit.Decision // zero (not Allowed) until a limit admitted
	settlement settlement     // waits until the answer is on the wire (see finish)
	ladder     ladderState
	nums       *rowNumbers
	requestID  [1]string // the X-Request-Id header value
	// contentLength is the Content-Length header value (an answer is set
	// once, or replaced whole by a later one).
	contentLength [1]string
	chatEstimate  chatEstimate
	admitted      admittedChat
	tr            *traced // the request's span, when the journey traces
}

// chatEstimate is what a chat request's token estimate is made of.
type chatEstimate struct {
	bodyLen   int
	maxTokens *int
}

// Estimate is a chat request's estimated tokens on tier (the exchange is
// its own Estimator, so routing a request allocates no closure for it).
func (x *exchange) Estimate(tier string) int64 {
	return x.j.estimateTokens(tier, x.chatEstimate.bodyLen, x.chatEstimate.maxTokens)
}

func (j *Journey) now() time.Time {
	if j.Clock != nil {
		return j.Clock()
	}
	return time.Now()
}

// Serve runs the journey for one request.
func (j *Journey) Serve(ctx context.Context, req Request) *Answer {
	x := &exchange{j: j, ctx: ctx, req: req, start: j.now()}
	x.a = &x.ans
	// Field by field, not as composite literals: a literal is built on the
	// stack first, and this frame stays there through the vendor call.
	x.ans.Header, x.ans.x, x.ans.Trail = req.Reply, x, &x.trail
	if x.ans.Header == nil {
		x.ans.Header = make(http.Header, 16)
	}
	x.rec.At, x.rec.RequestID, x.rec.Status, x.rec.Endpoint = x.start.UTC(), record.NewRequestID(), record.StatusRejected, req.Endpoint.String()
	x.a.RequestID = x.rec.RequestID
	x.requestID[0] = x.rec.RequestID
	x.a.Header["X-Request-Id"] = x.requestID[:] // no allocation of its own
	x.startSpan()
	if !x.authenticate() {
		return x.a
	}
	switch req.Endpoint {
	case EndpointModels:
		x.models()
	case EndpointModel:
		x.model()
	case EndpointEmbeddings:
		x.embeddings()
	case EndpointCountTokens:
		x.countTokens()
	default:
		x.chat()
	}
	return x.a
}

// door is the request's front door, the caller's wire shape.
func (x *exchange) door() frontdoor.Door { return doorOf(x.req.Endpoint) }
