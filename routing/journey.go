package routing

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/frontdoor"
	"switchyard/routing/idem"
	"switchyard/routing/limit"
	"switchyard/routing/queue"
	"switchyard/routing/record"
)

// The request journey: the seven steps every data-plane request takes —
// authenticate, idempotency, route, limits, execute, account, log — as one
// pipeline without an HTTP framework or a database. It takes a parsed
// request and returns an Answer (a body, or a stream of SSE events); the
// HTTP handler only copies the answer onto the wire, and the console's test
// request reads the same Answer.

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
	tier   string
	// explicit: the request named a logic model, not a tier (tier is then
	// only the tier whose timeouts and limits apply).
	explicit bool
	trail    Trail
	claim    *idem.Claim
	capture  *capture // what we sent, for idempotency storage
	logged   bool
	release  func() // the saturation gate's slot
	plan     *Plan
	// deadlineAt is the request budget's end.
	deadlineAt time.Time
	// bodyCharge is what the body holds of Journey.BodyBytes.
	bodyCharge int64
	// gateDec is the limit decision that admitted the request (its window
	// headers are re-sent to agree with an upstream's 429).
	gateDec limit.Decision // zero (not Allowed) until a limit admitted
	// settlement waits until the answer is on the wire (see finish).
	settleDec    limit.Decision // Allowed: a settlement waits for finish
	settleActual int64
	settleCost   int64
	ladder       ladderState
	nums         *rowNumbers
	requestID    [1]string // the X-Request-Id header value
	// contentLength is the Content-Length header value (an answer is set
	// once, or replaced whole by a later one).
	contentLength [1]string
	chatEstimate  chatEstimate
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

// rowNumbers holds the optional numbers of a request's call-log row, so
// that its pointers cost one allocation per request instead of one each.
// They must not point into the exchange: a row waiting in the call-log
// writer's queue would keep the whole request, and the configuration it
// was served with, alive.
type rowNumbers struct {
	i64   [12]int64
	n64   int
	ints  [2]int
	nInts int
}

// int64p returns a pointer to a copy of v for the call-log row.
func (x *exchange) int64p(v int64) *int64 {
	if x.nums == nil || x.nums.n64 == len(x.nums.i64) {
		x.nums = new(rowNumbers)
	}
	p := &x.nums.i64[x.nums.n64]
	x.nums.n64++
	*p = v
	return p
}

// intp returns a pointer to a copy of v for the call-log row.
func (x *exchange) intp(v int) *int {
	if x.nums == nil || x.nums.nInts == len(x.nums.ints) {
		x.nums = new(rowNumbers)
	}
	p := &x.nums.ints[x.nums.nInts]
	x.nums.nInts++
	*p = v
	return p
}

func (j *Journey) now() time.Time {
	if j.Clock != nil {
		return j.Clock()
	}
	return time.Now()
}

// ErrShuttingDown is the cause a server gives a request's context when it
// cuts the request at the end of its shutdown grace. The journey then
// answers the caller (an error event on a stream, a 503 otherwise) instead
// of treating the cancellation as the caller's, and records the call as
// interrupted.
var ErrShuttingDown = errors.New("the gateway is shutting down")

// shuttingDown reports whether ctx was cancelled by a shutdown cut.
func shuttingDown(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrShuttingDown)
}

// interrupted records the call as cut by this instance's shutdown.
func (x *exchange) interrupted() {
	x.rec.Status, x.rec.ErrorClass, x.rec.ErrorCode, x.rec.HTTPStatus = record.StatusInterrupted, "", codeShuttingDown, http.StatusServiceUnavailable
}

const codeShuttingDown = "shutting_down"

// CodeClientStalled is the call-log error code of an answer its caller did
// not read within the write deadline (Answer.WriteDeadline).
const CodeClientStalled = "client_stalled"

// msgShuttingDown tells a cut caller what happened and that a retry is safe
// to send (to another instance).
const msgShuttingDown = "this gateway instance is shutting down and cut the request when its shutdown grace ran out; send it again"

// Serve runs the journey for one request.
func (j *Journey) Serve(ctx context.Context, req Request) *Answer {
	x := &exchange{j: j, ctx: ctx, req: req, start: j.now()}
	x.a = &x.ans
	x.ans = Answer{Header: req.Reply, x: x, Trail: &x.trail}
	if x.ans.Header == nil {
		x.ans.Header = make(http.Header, 16)
	}
	x.rec = record.Call{At: x.start.UTC(), RequestID: record.NewRequestID(), Status: record.StatusRejected, Endpoint: req.Endpoint.String()}
	x.a.RequestID = x.rec.RequestID
	x.requestID[0] = x.rec.RequestID
	x.a.Header["X-Request-Id"] = x.requestID[:] // no allocation of its own
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

// reject answers with an error in the front door's shape and records a
// rejected call.
func (x *exchange) reject(status int, code, class, msg string) {
	x.rec.Status = record.StatusRejected
	x.rec.ErrorCode, x.rec.ErrorClass, x.rec.HTTPStatus = code, class, status
	x.writeError(status, code, msg, nil)
}

func (x *exchange) writeError(status int, code, msg string, param *string) {
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		// A refusal that a retry cannot change carries no wait to retry after.
		if x.a.Header.Get("Retry-After") == "" && x.a.Header.Get("x-should-retry") != "false" {
			x.a.Header.Set("Retry-After", "1")
		}
	}
	x.writeBody(status, "application/json", x.door().Error(status, code, msg, param))
}

// writeBody sets a complete answer, keeping a copy for idempotency.
func (x *exchange) writeBody(status int, ctype string, body []byte) {
	x.rec.HTTPStatus = status
	setShared(x.a.Header, "Content-Type", ctype)
	x.contentLength[0] = strconv.Itoa(len(body))
	x.a.Header["Content-Length"] = x.contentLength[:]
	if x.capture != nil {
		x.capture.status, x.capture.ctype = status, ctype
		x.capture.buf = append(x.capture.buf, body...)
	}
	x.a.Status, x.a.Body = status, body
}

// authenticate finds the caller for the bearer key.
func (x *exchange) authenticate() bool {
	x.rt = x.j.Live.Current()
	if x.rt == nil {
		x.reject(http.StatusServiceUnavailable, "no_available_model", "", "nothing has been published yet: an operator must publish a configuration in the Switchyard console")
		return false
	}
	x.rec.ConfigVersion = x.int64p(x.rt.Version)
	if x.req.CallerID != 0 {
		// A console test request: the caller was chosen by a signed-in
		// operator, not authenticated by key.
		x.caller = x.rt.Callers[x.req.CallerID]
		if x.caller == nil {
			x.reject(http.StatusNotFound, "caller_not_live", "", "this caller is not in the live version; publish first")
			return false
		}
		x.rec.CallerID, x.rec.Caller, x.rec.Tenant, x.rec.RouteGroup = x.int64p(x.caller.ID), x.caller.Name, x.caller.Tenant, x.caller.Group.Name
		return x.caller.Enabled || x.refuseDisabled()
	}
	key, ok := strings.CutPrefix(x.req.Authorization, "Bearer ")
	if key = strings.TrimSpace(key); (!ok || key == "") && x.req.APIKey != "" {
		key, ok = strings.TrimSpace(x.req.APIKey), true
	}
	if !ok || key == "" {
		x.a.Header.Set("x-should-retry", "false")
		x.reject(http.StatusUnauthorized, "invalid_api_key", "auth", "missing API key: send your Switchyard caller key as 'Authorization: Bearer <key>', 'x-api-key: <key>' or 'api-key: <key>'")
		return false
	}
	// One hash of the key serves the lookup and the call log's fingerprint.
	h := config.HashCallerKey(key)
	x.rec.PresentedKey = config.PresentedKeyFingerprintHashed(key, h)
	var absent string
	x.caller, absent = x.rt.AuthenticateHashed(h)
	if x.caller == nil {
		x.a.Header.Set("x-should-retry", "false")
		msg := "invalid or revoked API key"
		if absent != "" {
			msg = "API key suspended: its caller " + strconv.Quote(absent) + " is absent from the live version " +
				strconv.FormatInt(x.rt.Version, 10) + "; the key works again when a version that contains the caller is published"
		}
		x.reject(http.StatusUnauthorized, "invalid_api_key", "auth", msg)
		return false
	}
	x.rec.CallerID, x.rec.Caller, x.rec.Tenant, x.rec.RouteGroup = x.int64p(x.caller.ID), x.caller.Name, x.caller.Tenant, x.caller.Group.Name
	return x.caller.Enabled || x.refuseDisabled()
}

func (x *exchange) refuseDisabled() bool {
	x.a.Header.Set("x-should-retry", "false")
	x.reject(http.StatusForbidden, "caller_disabled", "auth", "caller "+x.caller.Name+" is disabled")
	return false
}

// readBody reads the request body within the size limit and checks UTF-8.
func (x *exchange) readBody() ([]byte, bool) {
	max := x.j.MaxBody
	if max <= 0 {
		max = 10 << 20
	}
	return x.readBodyUpTo(max, "")
}

// readBodyUpTo reads the body, refusing one larger than max with a 413
// that names what (e.g. "count_tokens ") the bound is for.
func (x *exchange) readBodyUpTo(max int64, what string) ([]byte, bool) {
	if x.req.Body == nil {
		x.req.Body = strings.NewReader("")
	}
	if !x.chargeBody(max + 1) {
		return nil, false
	}
	body, ok := x.readBodyBytes(max, what)
	x.trueUpBody(len(body))
	return body, ok
}

func (x *exchange) readBodyBytes(max int64, what string) ([]byte, bool) {
	var body []byte
	var err error
	if n := x.req.BodyLen; n > 0 && n <= max {
		// The declared length (the server holds the body to it): one
		// allocation of the right size.
		body = make([]byte, n)
		var got int
		got, err = io.ReadFull(x.req.Body, body)
		body = body[:got]
	} else {
		body, err = io.ReadAll(io.LimitReader(x.req.Body, max+1))
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		x.reject(http.StatusRequestTimeout, "request_timeout", "bad_request", "the request body did not arrive within the server's read timeout")
		return nil, false
	}
	if err != nil {
		x.reject(http.StatusBadRequest, "invalid_request", "bad_request", "could not read the request body: "+err.Error())
		return nil, false
	}
	if int64(len(body)) > max {
		x.reject(http.StatusRequestEntityTooLarge, "invalid_request", "bad_request", "the "+what+"request body is larger than "+formatBytes(max)+"; send a smaller one")
		return nil, false
	}
	if !utf8.Valid(body) {
		x.reject(http.StatusBadRequest, "invalid_request", "bad_request", "the request body is not valid UTF-8")
		return nil, false
	}
	return body, true
}

// invalid answers a request the parser refused.
func (x *exchange) invalid(err error) {
	var re *frontdoor.RequestError
	var param *string
	msg, code := err.Error(), "invalid_request"
	if errors.As(err, &re) {
		if re.Param != "" {
			p := re.Param
			param = &p
		}
		msg = re.Message
		if re.Code != "" {
			code = re.Code
		}
	}
	x.rec.Status, x.rec.ErrorCode, x.rec.ErrorClass = record.StatusRejected, code, "bad_request"
	x.a.Header.Set("x-should-retry", "false")
	x.writeError(http.StatusBadRequest, code, msg, param)
}

// idempotent handles Idempotency-Key: it returns false when the answer is
// already decided (replay, conflict or error).
func (x *exchange) idempotent(body []byte) bool {
	key := x.req.IdempotencyKey
	if key == "" {
		return true
	}
	if err := idem.ValidKey(key); err != nil {
		x.reject(http.StatusBadRequest, "invalid_request", "bad_request", "Idempotency-Key must be 1–255 printable ASCII characters")
		return false
	}
	if x.j.Idem == nil {
		x.reject(http.StatusServiceUnavailable, "idempotency_unavailable", "", "idempotency keys are not available on this instance")
		return false
	}
	out, err := x.j.Idem.Begin(x.ctx, x.caller.ID, key, idem.Fingerprint([]byte(x.req.Path), body))
	switch {
	case err != nil:
		if x.ctx.Err() != nil {
			x.rec.Status, x.rec.ErrorClass = record.StatusClientCancelled, "client_cancelled"
			x.rec.HTTPStatus = 499
			x.a.Status, x.a.Silent = 499, true
			return false
		}
		x.j.Log.Error("idempotency store unavailable", "err", err, "request_id", x.rec.RequestID)
		x.reject(http.StatusServiceUnavailable, "idempotency_unavailable", "", "the idempotency store is unreachable; retry, or send the request without Idempotency-Key")
		return false
	case out.Conflict:
		x.a.Header.Set("x-should-retry", "false")
		x.reject(http.StatusUnprocessableEntity, "idempotency_conflict", "bad_request", "Idempotency-Key "+strconv.Quote(key)+" was already used with a different request body")
		return false
	case out.Replay != nil:
		x.rec.IdempotencyReplay = true
		x.rec.Status = record.StatusOK
		if out.Replay.Status >= 400 {
			x.rec.Status = record.StatusUpstreamError
		}
		for k, v := range out.Replay.Header {
			x.a.Header.Set(k, v)
		}
		x.a.Header.Set("Idempotent-Replayed", "true")
		x.a.Header.Set("X-Request-Id", x.rec.RequestID)
		ctype := out.Replay.Header["Content-Type"]
		if ctype == "" {
			ctype = "application/json"
		}
		x.writeBody(out.Replay.Status, ctype, out.Replay.Body)
		return false
	}
	x.claim = &out.Claim
	x.capture = &capture{}
	return true
}

// finishIdempotency stores a result worth replaying, or releases the claim.
// Only what a retry cannot change is stored: a complete success, and a
// vendor's refusal of the request itself (invalid, content filtered).
// Rejections of ours, upstream failures and a stream that failed or was cut
// after it started release the key, so the retry runs.
func (x *exchange) finishIdempotency() {
	if x.claim == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.ctx), 2*time.Second)
	defer cancel()
	cp := x.capture
	if !replayable(cp.status, x.rec.Status, adapter.Class(x.rec.ErrorClass)) {
		if err := x.j.Idem.Abandon(ctx, *x.claim); err != nil {
			x.j.Log.Warn("idempotency abandon failed", "err", err, "request_id", x.rec.RequestID)
		}
		return
	}
	hdr := map[string]string{"Content-Type": cp.ctype}
	for _, k := range []string{"X-Switchyard-Tier", "X-Switchyard-Model", "X-Switchyard-Provider", "X-Switchyard-Attempts"} {
		if v := x.a.Header.Get(k); v != "" {
			hdr[k] = v
		}
	}
	if err := x.j.Idem.Complete(ctx, *x.claim, idem.Result{Status: cp.status, Header: hdr, Body: cp.buf, Stream: cp.stream}); err != nil {
		x.j.Log.Warn("idempotency complete failed", "err", err, "request_id", x.rec.RequestID)
	}
}

// replayable reports an answer a retry cannot change: a complete success
// (status 200 and the call ended ok — a stream that ended with an error
// event also began with 200), or the vendor's refusal of the request as
// invalid or filtered (400 of an upstream error that is not a failure).
func replayable(status int, st string, class adapter.Class) bool {
	switch {
	case status == http.StatusOK:
		return st == record.StatusOK
	case status == http.StatusBadRequest:
		return st == record.StatusUpstreamError && (class == adapter.ClassBadRequest || class == adapter.ClassContentFilter)
	}
	return false
}

// capture keeps what was sent to the caller.
type capture struct {
	status int
	ctype  string
	stream bool
	buf    []byte
}

// finish settles, stores the idempotent result, writes the call-log row and
// tells the observer; it runs exactly once per request, after the answer is
// on the wire.
func (x *exchange) finish() {
	if x.logged {
		return
	}
	x.logged = true
	x.releaseBody()
	if x.release != nil {
		x.release()
	}
	x.releasePlan()
	if x.settleDec.Allowed {
		x.settleNow(x.settleDec, x.settleActual, x.settleCost)
	}
	x.finishIdempotency()
	elapsed := x.j.now().Sub(x.start)
	x.rec.LatencyMS = int(elapsed.Milliseconds())
	x.rec.Retries = max(countAttempts(x.trail)-1, 0)
	if x.caller != nil {
		x.finishLadder()
	}
	x.recordQueue()
	if x.rec.Tier == "" {
		x.rec.Tier = x.tier
	}
	if len(x.trail.Attempts) > 0 || len(x.trail.Skips) > 0 || len(x.trail.Degraded) > 0 {
		x.rec.Attempts, _ = json.Marshal(x.trail)
		x.rec.Fallback = x.trail.Fallback
	}
	x.recordRefusal()
	if x.j.Calls != nil {
		x.j.Calls.Write(x.rec)
	}
	x.logRequest()
	if x.j.Watch != nil {
		x.j.Watch.Finished(&x.rec, &x.trail, elapsed)
	}
}

// releasePlan gives the plan back to its pool once nothing reads it (a
// stream that committed keeps only its deployment: its plan, a few
// kilobytes, would otherwise be held for as long as the stream lasts).
func (x *exchange) releasePlan() {
	if x.plan != nil {
		x.plan.Release()
		x.plan = nil
	}
}

// logRequest writes one structured line per request: failures at warn,
// everything else at debug (the call log is the full record).
func (x *exchange) logRequest() {
	level := slog.LevelDebug
	if x.rec.Status == record.StatusUpstreamError {
		level = slog.LevelWarn
	}
	if !x.j.Log.Enabled(context.Background(), level) {
		return
	}
	x.j.Log.Log(context.Background(), level, "data-plane request",
		"request_id", x.rec.RequestID, "caller", x.rec.Caller, "tier", x.rec.Tier, "model", x.rec.LogicModel,
		"provider", x.rec.Provider, "status", x.rec.Status, "http_status", x.rec.HTTPStatus,
		"error_class", x.rec.ErrorClass, "error_code", x.rec.ErrorCode, "latency_ms", x.rec.LatencyMS,
		"attempts", len(x.trail.Attempts))
}

// deadline is the request budget: X-Request-Timeout (seconds, or a Go
// duration such as 1500ms), else the default, at most 10 minutes.
func (x *exchange) deadline() (time.Time, error) {
	d := x.j.DefaultTimeout
	if d <= 0 {
		d = DefaultRequestTimeout
	}
	if v := strings.TrimSpace(x.req.RequestTimeout); v != "" {
		parsed, err := time.ParseDuration(v)
		if err != nil {
			secs, ferr := strconv.ParseFloat(v, 64)
			if ferr != nil {
				return time.Time{}, errors.New("X-Request-Timeout must be seconds (e.g. 30) or a duration (e.g. 1500ms)")
			}
			parsed = time.Duration(secs * float64(time.Second))
		}
		if parsed <= 0 || parsed > 10*time.Minute {
			return time.Time{}, errors.New("X-Request-Timeout must be between 0 and 10 minutes")
		}
		d = parsed
	}
	return x.start.Add(d), nil
}

// limit runs the caller × tier limit check; false when the request was
// refused (answer set).
func (x *exchange) limit(estimate int64) (limit.Decision, bool) {
	if x.j.Limits == nil {
		return limit.Decision{Allowed: true}, true
	}
	tl := x.caller.Limit(config.TierName(x.tier))
	req := limit.Request{CallerID: x.caller.ID, Tier: x.tier, EstimatedTokens: estimate,
		Limits: limit.Limits{RPM: tl.RPM, TPM: tl.TPM, DailyTokens: tl.DailyTokens, MonthlyBudgetMicros: x.caller.BudgetMicros}}
	dec, err := x.j.Limits.Check(x.ctx, req)
	if err != nil {
		if errors.Is(err, limit.ErrInvalidRequest) {
			x.j.Log.Warn("limit check refused its input", "err", err)
			return limit.Decision{Allowed: true}, true
		}
		x.j.Log.Error("limit check failed; serving without limits", "err", err, "request_id", x.rec.RequestID)
		return limit.Decision{Allowed: true}, true
	}
	dec.SetHeaders(x.a.Header)
	if dec.Allowed {
		x.gateDec = dec
		return dec, true
	}
	code := string(dec.Reason)
	if x.j.Watch != nil {
		x.j.Watch.Refused(code)
	}
	x.a.Refusal = &Refusal{Limit: dec.Limit, Value: dec.Value, RetryAfter: dec.RetryAfter}
	x.reject(http.StatusTooManyRequests, code, code, refusalMessage(dec, x.caller.Name, x.tier))
	return dec, false
}

// refusalMessage says in words which limit refused.
func refusalMessage(dec limit.Decision, caller, tier string) string {
	var msg string
	switch dec.Limit {
	case limit.KindRPM:
		msg = "rate limit of " + strconv.FormatInt(dec.Value, 10) + " requests per minute reached for caller " + caller + " on tier " + tier
	case limit.KindTPM:
		msg = "rate limit of " + strconv.FormatInt(dec.Value, 10) + " tokens per minute reached for caller " + caller + " on tier " + tier
	case limit.KindDaily:
		msg = "daily token quota of caller " + caller + " on tier " + tier + " is used up; it resets at local midnight"
	case limit.KindBudget:
		msg = "monthly budget of caller " + caller + " is spent; it resets at the start of next month"
	default:
		msg = "rate limit reached for caller " + caller + " on tier " + tier
	}
	if dec.RetryAfter > 0 {
		msg += " (retry after " + dec.RetryAfter.Round(time.Millisecond).String() + ")"
	}
	return msg
}

// outputAverages tracks each tier's recent average completion tokens, used
// to estimate a request's tokens when it sets no max_tokens.
type outputAverages struct {
	mu sync.Mutex
	m  map[string]float64
}

func (a *outputAverages) get(tier string) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if v, ok := a.m[tier]; ok {
		return int64(v)
	}
	return 512
}

func (a *outputAverages) observe(tier string, completion int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]float64{}
	}
	v, ok := a.m[tier]
	if !ok {
		v = float64(completion)
	}
	a.m[tier] = 0.9*v + 0.1*float64(completion)
}

// estimateTokens reserves prompt size (about four bytes a token) plus the
// caller's max_tokens, or the tier's recent average output.
func (j *Journey) estimateTokens(tier string, bodyLen int, maxTokens *int) int64 {
	est := int64(bodyLen / 4)
	if maxTokens != nil && *maxTokens > 0 {
		return est + int64(*maxTokens)
	}
	return est + j.avg.get(tier)
}

// account fills the record's usage and cost and settles the limits.
func (x *exchange) account(dec limit.Decision, served Served, u adapter.Usage, estimate int64) {
	d := served.Deployment
	if d != nil {
		x.rec.LogicModel, x.rec.DeploymentID, x.rec.Provider, x.rec.KeyFingerprint = d.Model.Code, x.int64p(d.ID), d.Provider.Name, served.KeyFingerprint
	}
	actual := estimate // unknown usage keeps the reservation
	var costMicros int64
	if u.Known {
		p, c := u.Prompt, u.Completion
		x.rec.PromptTokens, x.rec.CompletionTokens, x.rec.UsageEstimated = x.int64p(p), x.int64p(c), u.Estimated
		if u.CachedKnown {
			x.rec.CachedTokens = x.int64p(u.Cached)
		}
		if u.ReasoningKnown {
			x.rec.ReasoningTokens = x.int64p(u.Reasoning)
		}
		actual = p + c
		if d != nil {
			pr := d.Prices
			cost := pr.CostMicros(p, c, u.Cached)
			x.rec.CostMicros, x.rec.Currency = x.int64p(cost), pr.Currency
			// A budget in another currency is refused at publish (dry-run
			// check budget_currency_mismatch); this guard only keeps a
			// stale runtime from charging the wrong money.
			if x.caller.BudgetCurrency == "" || x.caller.BudgetCurrency == pr.Currency {
				costMicros = cost
			}
		}
		x.j.avg.observe(x.tier, c)
	}
	x.settle(dec, actual, costMicros)
}

// settle schedules the return of unused reservations for after the answer
// is sent; it runs even if the client left.
func (x *exchange) settle(dec limit.Decision, actual, costMicros int64) {
	if x.j.Limits == nil || !dec.Allowed {
		return
	}
	x.settleDec, x.settleActual, x.settleCost = dec, actual, costMicros
}

func (x *exchange) settleNow(dec limit.Decision, actual, costMicros int64) {
	if err := x.j.Limits.Settle(x.ctx, dec.Reservation, actual, costMicros); err != nil {
		x.j.Log.Warn("limit settle failed", "err", err, "request_id", x.rec.RequestID)
	}
}

// TierExplicit is X-Switchyard-Tier for a request that named a logic model.
const TierExplicit = "explicit"

// tierHeader is X-Switchyard-Tier: the tier asked for (or forced), or
// "explicit" for a request that named a logic model — not a tier the model
// happens to appear in.
func (x *exchange) tierHeader() string {
	if x.explicit {
		return TierExplicit
	}
	return x.tier
}

// routeHeaders sets the X-Switchyard-* headers of a served request.
func (x *exchange) routeHeaders(served Served) {
	h := x.a.Header
	setShared(h, "X-Switchyard-Tier", x.tierHeader())
	if d := served.Deployment; d != nil {
		setShared(h, "X-Switchyard-Model", d.Model.Code)
		setShared(h, "X-Switchyard-Provider", d.Provider.Name)
	}
	h["X-Switchyard-Attempts"] = countValue(served.Attempts)
}

// failed answers a request nothing could serve.
func (x *exchange) failed(f *Failure) {
	h := x.a.Header
	h.Set("X-Switchyard-Tier", x.tierHeader())
	h.Set("X-Switchyard-Attempts", strconv.Itoa(len(x.trail.Attempts)))
	x.rec.ErrorCode, x.rec.ErrorClass = f.Code, string(f.Class)
	switch {
	case f.Class == adapter.ClassCancelled && shuttingDown(x.ctx):
		// The caller is still there: tell it, and that a retry is safe.
		x.interrupted()
		x.writeError(http.StatusServiceUnavailable, codeShuttingDown, msgShuttingDown, nil) // with Retry-After: 1
		return
	case f.Class == adapter.ClassCancelled:
		x.rec.Status, x.rec.HTTPStatus = record.StatusClientCancelled, 499
		x.a.Status, x.a.Silent = 499, true // nobody is listening
		return
	case countAttempts(x.trail) == 0:
		x.rec.Status = record.StatusRejected
		if r := capRefusal(&x.trail, f); r != nil {
			x.a.Refusal = r
		}
	default:
		x.rec.Status = record.StatusUpstreamError
	}
	if x.degrade(f) {
		return
	}
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
		h.Set("Retry-After-Ms", strconv.FormatInt(int64((f.RetryAfter+time.Millisecond-1)/time.Millisecond), 10))
		if f.Status == http.StatusTooManyRequests && x.gateDec.Allowed {
			x.gateDec.CapResets(f.RetryAfter).SetHeaders(h)
		}
	}
	if f.NoRetry {
		h.Set("x-should-retry", "false")
	}
	if f.Refusal != nil { // our queue refused it
		x.a.Refusal = f.Refusal
		if x.j.Watch != nil {
			x.j.Watch.Refused(f.Code)
		}
	}
	var param *string
	if f.Param != "" {
		param = &f.Param
	}
	x.writeError(f.Status, f.Code, f.Text(x.rec.RequestID), param)
}

func countAttempts(tr Trail) int {
	n := 0
	for _, a := range tr.Attempts {
		if a.Outcome != "skipped" {
			n++
		}
	}
	return n
}

// route resolves the request's model and builds its plan (the journey's
// route step). It answers itself (false) for an unknown model, and for a
// plan with nothing to try — before any limit is spent. finish releases
// the plan.
func (x *exchange) route(model string, reasoning bool, needs Needs) (*Plan, bool) {
	target, err := Resolve(x.caller, model, needs.Kind, reasoning)
	if err == nil {
		x.rec.ModelAlias = target.Alias
		target = x.stepDown(target, reasoning)
	}
	if err != nil {
		var nf *ModelNotFoundError
		if errors.As(err, &nf) {
			x.a.Header.Set("x-should-retry", "false")
			x.reject(http.StatusNotFound, "model_not_found", "bad_request", nf.Error())
			return nil, false
		}
		x.reject(http.StatusInternalServerError, "internal_error", "", "could not resolve the model: "+err.Error())
		return nil, false
	}
	x.rec.Needs, x.rec.Fields = needs.Record()
	p := NewPlan()
	x.plan = p
	Build(p, x.caller, target, needs, &x.j.Exec.State)
	x.tier = string(p.Tier.Name)
	x.explicit = target.Explicit != nil
	x.rec.Tier = x.tier
	if fail := x.j.Exec.Unavailable(p, &x.trail); fail != nil {
		if u := unsupportedParameter(p, &x.trail); u != nil {
			fail = u
		}
		x.failed(fail)
		return nil, false
	}
	return p, true
}

// gate applies the saturation gate and the caller's limits (the journey's
// limits step); false when the request was refused (answer set).
func (x *exchange) gate(estimate int64) (limit.Decision, bool) {
	if !x.admit() {
		return limit.Decision{}, false
	}
	return x.limit(estimate)
}

// admit takes one of the instance's in-flight slots
// (SWITCHYARD_MAX_INFLIGHT), waiting in the caller's class queue while the
// instance is at its cap; a full queue answers 429 queue_full (a full
// interactive queue sheds a batch waiter first), and a request still waiting
// at its deadline 504.
func (x *exchange) admit() bool {
	q := x.j.Exec.Queue
	if q == nil {
		return true
	}
	class := queue.ClassOf(x.caller.PriorityClass)
	rel, waited, err := q.Admit(x.ctx, class, x.deadlineAt)
	x.trail.waited(waited)
	if err == nil {
		x.release = rel
		return true
	}
	return x.queueRefused(q, class, waited, err)
}

// queueRefused answers a request the instance's queue did not admit.
func (x *exchange) queueRefused(q *queue.Queue, class queue.Class, waited queue.Waited, err error) bool {
	var r *queue.Refusal
	switch {
	case errors.As(err, &r) && !q.Queues(class):
		// This class does not queue: refused at the instance's cap at once.
		if x.j.Watch != nil {
			x.j.Watch.Refused(string(limit.KindInstance))
		}
		x.a.Header.Set("Retry-After", "1")
		x.a.Refusal = &Refusal{Limit: limit.KindInstance, Class: class.String(), Value: int64(q.InstanceCap()), RetryAfter: time.Second}
		x.reject(http.StatusTooManyRequests, "rate_limited", "rate_limited", "this gateway instance is at its in-flight cap of "+strconv.Itoa(q.InstanceCap())+
			" and "+class.String()+" requests do not queue; retry shortly (request id "+x.rec.RequestID+")")
	case errors.As(err, &r):
		f := refusedByQueue(r, nil, nil)
		if x.j.Watch != nil {
			x.j.Watch.Refused(f.Code)
		}
		x.a.Header.Set("Retry-After", strconv.Itoa(int(QueueRetryAfter/time.Second)))
		x.a.Refusal = f.Refusal
		x.reject(http.StatusTooManyRequests, f.Code, "rate_limited", f.Told.Text(x.rec.RequestID))
	case errors.Is(err, queue.ErrExpired):
		x.reject(http.StatusGatewayTimeout, "timeout", string(adapter.ClassTimeout), "the request's time budget ran out after waiting "+
			waited.For.Round(time.Millisecond).String()+" in the "+class.String()+" queue for this gateway instance's in-flight cap (request id "+x.rec.RequestID+")")
	default: // the caller left
		x.rec.Status, x.rec.ErrorClass, x.rec.ErrorCode, x.rec.HTTPStatus = record.StatusClientCancelled, string(adapter.ClassCancelled), "client_cancelled", 499
		x.a.Status, x.a.Silent = 499, true
	}
	return false
}

// recordQueue puts the caller's class and the time queued (for the
// instance's cap and for deployments at capacity) in the call-log row.
func (x *exchange) recordQueue() {
	if x.caller != nil {
		x.rec.PriorityClass = string(x.caller.PriorityClass)
	}
	if x.trail.queued {
		x.rec.QueueWaitMS = x.intp(int(x.trail.QueuedMS))
	}
}

// formatBytes says a byte bound in whole MB or KB when it is one, else in
// bytes.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
