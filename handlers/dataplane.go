package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"switchyard/routing"
	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/record"
	"switchyard/store/calllog"
	"switchyard/store/redis/idempotency"
	"switchyard/store/redis/limits"
	"switchyard/web/metrics"
)

// Limiter is the per caller × tier limit check (one Redis round trip).
type Limiter interface {
	Check(ctx context.Context, req limits.Request) (limits.Decision, error)
	Settle(ctx context.Context, r limits.Reservation, actualTokens, costMicros int64) error
}

// Idempotency stores and replays results by Idempotency-Key.
type Idempotency interface {
	Begin(ctx context.Context, callerID int64, key string, fingerprint [32]byte) (idempotency.Outcome, error)
	Complete(ctx context.Context, c idempotency.Claim, r idempotency.Result) error
	Abandon(ctx context.Context, c idempotency.Claim) error
}

// CallLog receives exactly one record per data-plane request.
type CallLog interface{ Write(calllog.Record) }

// DataPlane serves the OpenAI-compatible API (SPEC §4–§5).
type DataPlane struct {
	Live    interface{ Current() *config.Runtime }
	Exec    *routing.Executor
	Limits  Limiter     // nil: no limits
	Idem    Idempotency // nil: Idempotency-Key is refused with 503
	CallLog CallLog     // nil: records are dropped
	Metrics *metrics.Metrics
	// Admit is the instance-level saturation gate: batch callers are shed
	// first. nil admits everything.
	Admit   func(batch bool) (release func(), ok bool)
	MaxBody int64 // default 10 MB
	Log     *slog.Logger
	// DefaultTimeout is the request budget without X-Request-Timeout.
	DefaultTimeout time.Duration

	avg outputAverages
}

// exchange is one data-plane request in progress.
type exchange struct {
	d       *DataPlane
	c       echo.Context
	rec     calllog.Record
	start   time.Time
	rt      *config.Runtime
	caller  *config.RCaller
	tier    string
	trail   routing.Trail
	claim   *idempotency.Claim
	capture *captureWriter // what we sent, for idempotency storage
	logged  bool
	// settlement waits until the answer is on the wire (see finish).
	settleDec    *limits.Decision
	settleActual int64
	settleCost   int64
}

func (d *DataPlane) begin(c echo.Context) *exchange {
	x := &exchange{d: d, c: c, start: time.Now()}
	x.rec = calllog.Record{At: x.start.UTC(), RequestID: record.NewRequestID(), Status: calllog.StatusRejected}
	h := c.Response().Header()
	h.Set("X-Request-Id", x.rec.RequestID)
	return x
}

// reject answers with an OpenAI error and records a rejected call.
func (x *exchange) reject(status int, code, class, msg string) error {
	x.rec.Status = calllog.StatusRejected
	x.rec.ErrorCode, x.rec.ErrorClass, x.rec.HTTPStatus = code, class, status
	return x.writeError(status, code, msg, nil)
}

func (x *exchange) writeError(status int, code, msg string, param *string) error {
	h := x.c.Response().Header()
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		if h.Get("Retry-After") == "" {
			h.Set("Retry-After", "1")
		}
	}
	body, _ := json.Marshal(map[string]OpenAIError{"error": {Message: msg, Type: errorType(status), Code: code, Param: param}})
	return x.writeBody(status, echo.MIMEApplicationJSON, body)
}

// writeBody writes a complete response, keeping a copy for idempotency. The
// length is set so the answer can be flushed before the bookkeeping runs.
func (x *exchange) writeBody(status int, ctype string, body []byte) error {
	x.rec.HTTPStatus = status
	x.c.Response().Header().Set(echo.HeaderContentType, ctype)
	x.c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
	if x.capture != nil {
		x.capture.status, x.capture.ctype = status, ctype
		x.capture.buf = append(x.capture.buf, body...)
	}
	x.c.Response().WriteHeader(status)
	_, err := x.c.Response().Write(body)
	return err
}

// authenticate finds the caller for the bearer key.
func (x *exchange) authenticate() error {
	x.rt = x.d.Live.Current()
	if x.rt == nil {
		return x.reject(http.StatusServiceUnavailable, "no_available_model", "", "nothing has been published yet: an operator must publish a configuration in the Switchyard console")
	}
	v := x.rt.Version
	x.rec.ConfigVersion = &v
	if id, ok := x.c.Get(testCallerKey).(int64); ok {
		// A console test request: the caller was chosen by a signed-in
		// operator, not authenticated by key.
		x.caller = x.rt.Callers[id]
		if x.caller == nil {
			return x.reject(http.StatusNotFound, "caller_not_live", "", "this caller is not in the live version; publish first")
		}
		cid := x.caller.ID
		x.rec.CallerID, x.rec.Caller, x.rec.Tenant, x.rec.RouteGroup = &cid, x.caller.Name, x.caller.Tenant, x.caller.Group.Name
		return nil
	}
	auth := x.c.Request().Header.Get("Authorization")
	key, ok := strings.CutPrefix(auth, "Bearer ")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		x.c.Response().Header().Set("x-should-retry", "false")
		return x.reject(http.StatusUnauthorized, "invalid_api_key", "auth", "missing API key: send 'Authorization: Bearer <your Switchyard caller key>'")
	}
	x.caller = x.rt.Authenticate(key)
	if x.caller == nil {
		x.c.Response().Header().Set("x-should-retry", "false")
		return x.reject(http.StatusUnauthorized, "invalid_api_key", "auth", "invalid or revoked API key")
	}
	id := x.caller.ID
	x.rec.CallerID, x.rec.Caller, x.rec.Tenant, x.rec.RouteGroup = &id, x.caller.Name, x.caller.Tenant, x.caller.Group.Name
	if !x.caller.Enabled {
		x.c.Response().Header().Set("x-should-retry", "false")
		return x.reject(http.StatusForbidden, "caller_disabled", "auth", "caller "+x.caller.Name+" is disabled")
	}
	return nil
}

// readBody reads the request body within the size limit and checks UTF-8.
func (x *exchange) readBody() ([]byte, error) {
	limit := x.d.MaxBody
	if limit <= 0 {
		limit = 10 << 20
	}
	body, err := io.ReadAll(io.LimitReader(x.c.Request().Body, limit+1))
	if err != nil {
		return nil, x.reject(http.StatusBadRequest, "invalid_request", "bad_request", "could not read the request body: "+err.Error())
	}
	if int64(len(body)) > limit {
		return nil, x.reject(http.StatusRequestEntityTooLarge, "invalid_request", "bad_request", "the request body is larger than "+strconv.FormatInt(limit>>20, 10)+" MB")
	}
	if !utf8.Valid(body) {
		return nil, x.reject(http.StatusBadRequest, "invalid_request", "bad_request", "the request body is not valid UTF-8")
	}
	return body, nil
}

// invalid answers a request the parser refused.
func (x *exchange) invalid(err error) error {
	var re *adapter.RequestError
	var param *string
	msg := err.Error()
	if errors.As(err, &re) {
		if re.Param != "" {
			p := re.Param
			param = &p
		}
		msg = re.Message
	}
	x.rec.Status, x.rec.ErrorCode, x.rec.ErrorClass = calllog.StatusRejected, "invalid_request", "bad_request"
	x.c.Response().Header().Set("x-should-retry", "false")
	return x.writeError(http.StatusBadRequest, "invalid_request", msg, param)
}

// idempotent handles Idempotency-Key: it returns done=true when the answer
// was already written (replay, conflict or error).
func (x *exchange) idempotent(path string, body []byte) (done bool, err error) {
	key := x.c.Request().Header.Get("Idempotency-Key")
	if key == "" {
		return false, nil
	}
	if err := idempotency.ValidKey(key); err != nil {
		return true, x.reject(http.StatusBadRequest, "invalid_request", "bad_request", "Idempotency-Key must be 1–255 printable ASCII characters")
	}
	if x.d.Idem == nil {
		return true, x.reject(http.StatusServiceUnavailable, "idempotency_unavailable", "", "idempotency keys are not available on this instance")
	}
	out, err := x.d.Idem.Begin(x.c.Request().Context(), x.caller.ID, key, idempotency.Fingerprint([]byte(path), body))
	switch {
	case err != nil:
		if ctxErr := x.c.Request().Context().Err(); ctxErr != nil {
			x.rec.Status, x.rec.ErrorClass = calllog.StatusClientCancelled, "client_cancelled"
			x.rec.HTTPStatus = 499
			return true, nil
		}
		x.d.Log.Error("idempotency store unavailable", "err", err, "request_id", x.rec.RequestID)
		return true, x.reject(http.StatusServiceUnavailable, "idempotency_unavailable", "", "the idempotency store is unreachable; retry, or send the request without Idempotency-Key")
	case out.Conflict:
		x.c.Response().Header().Set("x-should-retry", "false")
		return true, x.reject(http.StatusUnprocessableEntity, "idempotency_conflict", "bad_request", "Idempotency-Key "+strconv.Quote(key)+" was already used with a different request body")
	case out.Replay != nil:
		x.rec.IdempotencyReplay = true
		x.rec.Status = calllog.StatusOK
		if out.Replay.Status >= 400 {
			x.rec.Status = calllog.StatusUpstreamError
		}
		for k, v := range out.Replay.Header {
			x.c.Response().Header().Set(k, v)
		}
		x.c.Response().Header().Set("Idempotent-Replayed", "true")
		x.c.Response().Header().Set("X-Request-Id", x.rec.RequestID)
		return true, x.writeBody(out.Replay.Status, firstNonEmpty(out.Replay.Header["Content-Type"], echo.MIMEApplicationJSON), out.Replay.Body)
	}
	x.claim = &out.Claim
	x.capture = &captureWriter{}
	return false, nil
}

// finishIdempotency stores a result worth replaying, or releases the claim.
// Successes and answers a retry cannot change (content filtered, refused by
// the vendor as invalid) are stored; rejections of ours and upstream
// failures are not, so a retry can succeed.
func (x *exchange) finishIdempotency() {
	if x.claim == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.c.Request().Context()), 2*time.Second)
	defer cancel()
	cap := x.capture
	keep := cap.status == http.StatusOK || (cap.status == http.StatusBadRequest && x.rec.Status == calllog.StatusUpstreamError)
	if !keep || x.rec.Status == calllog.StatusClientCancelled {
		if err := x.d.Idem.Abandon(ctx, *x.claim); err != nil {
			x.d.Log.Warn("idempotency abandon failed", "err", err, "request_id", x.rec.RequestID)
		}
		return
	}
	hdr := map[string]string{"Content-Type": cap.ctype}
	for _, k := range []string{"X-Switchyard-Tier", "X-Switchyard-Model", "X-Switchyard-Provider", "X-Switchyard-Attempts"} {
		if v := x.c.Response().Header().Get(k); v != "" {
			hdr[k] = v
		}
	}
	if err := x.d.Idem.Complete(ctx, *x.claim, idempotency.Result{Status: cap.status, Header: hdr, Body: cap.buf, Stream: cap.stream}); err != nil {
		x.d.Log.Warn("idempotency complete failed", "err", err, "request_id", x.rec.RequestID)
	}
}

// captureWriter keeps what was sent to the caller.
type captureWriter struct {
	status int
	ctype  string
	stream bool
	buf    []byte
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// finish writes the call-log row and metrics; called exactly once per request.
func (x *exchange) finish() {
	if x.logged {
		return
	}
	x.logged = true
	// The caller has its answer before any bookkeeping round trip.
	if x.c.Response().Committed {
		x.c.Response().Flush()
	}
	if x.settleDec != nil {
		x.settleNow(*x.settleDec, x.settleActual, x.settleCost)
	}
	x.finishIdempotency()
	x.rec.LatencyMS = int(time.Since(x.start).Milliseconds())
	if x.rec.Tier == "" {
		x.rec.Tier = x.tier
	}
	if x.c.Get(testCallerKey) != nil {
		x.c.Set(trailKey, x.trail) // a console test request reads its trail back
	}
	if len(x.trail.Attempts) > 0 || len(x.trail.Skips) > 0 {
		x.rec.Attempts, _ = json.Marshal(x.trail)
		x.rec.Fallback = x.trail.Fallback
	}
	if x.d.CallLog != nil {
		x.d.CallLog.Write(x.rec)
	}
	x.logRequest()
	if m := x.d.Metrics; m != nil {
		m.Requests.WithLabelValues(x.rec.Caller, x.rec.Tier, x.rec.LogicModel, x.rec.Status, x.rec.ErrorClass).Inc()
		m.Duration.WithLabelValues(x.rec.Tier, x.rec.Status).Observe(time.Since(x.start).Seconds())
		if x.rec.TTFCMS != nil {
			m.TTFC.WithLabelValues(x.rec.Tier).Observe(float64(*x.rec.TTFCMS) / 1000)
		}
		for _, tk := range [...]struct {
			kind string
			n    *int64
		}{{"prompt", x.rec.PromptTokens}, {"completion", x.rec.CompletionTokens}, {"cached", x.rec.CachedTokens}, {"reasoning", x.rec.ReasoningTokens}} {
			if tk.n != nil && *tk.n > 0 {
				m.Tokens.WithLabelValues(x.rec.Caller, x.rec.Tier, x.rec.LogicModel, tk.kind).Add(float64(*tk.n))
			}
		}
		if x.rec.CostMicros != nil && *x.rec.CostMicros > 0 {
			m.Cost.WithLabelValues(x.rec.Caller, x.rec.Currency).Add(float64(*x.rec.CostMicros) / 1e6)
		}
		for _, a := range x.trail.Attempts {
			if a.Outcome == "ok" {
				m.Attempts.WithLabelValues(a.Provider, "ok").Inc()
			} else if a.Outcome == "failed" {
				m.Attempts.WithLabelValues(a.Provider, a.Class).Inc()
			}
		}
	}
}

// logRequest writes one structured line per request: failures at warn,
// everything else at debug (the call log is the full record).
func (x *exchange) logRequest() {
	level := slog.LevelDebug
	if x.rec.Status == calllog.StatusUpstreamError {
		level = slog.LevelWarn
	}
	if !x.d.Log.Enabled(context.Background(), level) {
		return
	}
	x.d.Log.Log(context.Background(), level, "data-plane request",
		"request_id", x.rec.RequestID, "caller", x.rec.Caller, "tier", x.rec.Tier, "model", x.rec.LogicModel,
		"provider", x.rec.Provider, "status", x.rec.Status, "http_status", x.rec.HTTPStatus,
		"error_class", x.rec.ErrorClass, "error_code", x.rec.ErrorCode, "latency_ms", x.rec.LatencyMS,
		"attempts", len(x.trail.Attempts))
}

// deadline is the request budget: X-Request-Timeout (seconds, or a Go
// duration such as 1500ms), else the default, at most 10 minutes.
func (x *exchange) deadline() (time.Time, error) {
	d := x.d.DefaultTimeout
	if d <= 0 {
		d = routing.DefaultRequestTimeout
	}
	if v := strings.TrimSpace(x.c.Request().Header.Get("X-Request-Timeout")); v != "" {
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

// limit runs the caller × tier limit check; it returns done=true when the
// request was rejected (answer written).
func (x *exchange) limit(estimate int64) (limits.Decision, bool, error) {
	if x.d.Limits == nil {
		return limits.Decision{Allowed: true}, false, nil
	}
	tl := x.caller.Limit(config.TierName(x.tier))
	req := limits.Request{CallerID: x.caller.ID, Tier: x.tier, EstimatedTokens: estimate,
		Limits: limits.Limits{RPM: tl.RPM, TPM: tl.TPM, DailyTokens: tl.DailyTokens, MonthlyBudgetMicros: x.caller.BudgetMicros}}
	dec, err := x.d.Limits.Check(x.c.Request().Context(), req)
	if err != nil {
		if errors.Is(err, limits.ErrInvalidRequest) {
			x.d.Log.Warn("limit check refused its input", "err", err)
			return limits.Decision{Allowed: true}, false, nil
		}
		x.d.Log.Error("limit check failed; serving without limits", "err", err, "request_id", x.rec.RequestID)
		return limits.Decision{Allowed: true}, false, nil
	}
	dec.SetHeaders(x.c.Response().Header())
	if dec.Allowed {
		return dec, false, nil
	}
	reason := string(dec.Reason)
	if x.d.Metrics != nil {
		x.d.Metrics.Rejections.WithLabelValues(reason).Inc()
	}
	msg := "rate limit reached for caller " + x.caller.Name + " on tier " + x.tier
	switch dec.Reason {
	case limits.ReasonQuotaExceeded:
		msg = "daily token quota of caller " + x.caller.Name + " on tier " + x.tier + " is used up; it resets at local midnight"
	case limits.ReasonBudgetExceeded:
		msg = "monthly budget of caller " + x.caller.Name + " is spent; it resets at the start of next month"
	}
	if dec.RetryAfter > 0 {
		msg += " (retry after " + dec.RetryAfter.Round(time.Millisecond).String() + ")"
	}
	return dec, true, x.reject(http.StatusTooManyRequests, reason, reason, msg)
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
func (d *DataPlane) estimateTokens(tier string, bodyLen int, maxTokens *int) int64 {
	est := int64(bodyLen / 4)
	if maxTokens != nil && *maxTokens > 0 {
		return est + int64(*maxTokens)
	}
	return est + d.avg.get(tier)
}

// account fills the record's usage and cost and settles the limits.
func (x *exchange) account(dec limits.Decision, served routing.Served, u adapter.Usage, estimate int64) {
	d := served.Deployment
	if d != nil {
		dep := d.ID
		x.rec.LogicModel, x.rec.DeploymentID, x.rec.Provider, x.rec.KeyFingerprint = d.Model.Code, &dep, d.Provider.Name, served.KeyFingerprint
	}
	actual := estimate // unknown usage keeps the reservation
	var costMicros int64
	if u.Known {
		p, c := u.Prompt, u.Completion
		x.rec.PromptTokens, x.rec.CompletionTokens = &p, &c
		if u.CachedKnown {
			cached := u.Cached
			x.rec.CachedTokens = &cached
		}
		if u.ReasoningKnown {
			r := u.Reasoning
			x.rec.ReasoningTokens = &r
		}
		actual = p + c
		if d != nil {
			pr := d.Prices
			cost := pr.CostMicros(p, c, u.Cached)
			x.rec.CostMicros, x.rec.Currency = &cost, pr.Currency
			if x.caller.BudgetCurrency == "" || x.caller.BudgetCurrency == pr.Currency {
				costMicros = cost
			}
		}
		x.d.avg.observe(x.tier, c)
	}
	x.settle(dec, actual, costMicros)
}

// settle schedules the return of unused reservations for after the answer
// is sent; it runs even if the client left.
func (x *exchange) settle(dec limits.Decision, actual, costMicros int64) {
	if x.d.Limits == nil || !dec.Allowed {
		return
	}
	x.settleDec, x.settleActual, x.settleCost = &dec, actual, costMicros
}

func (x *exchange) settleNow(dec limits.Decision, actual, costMicros int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.c.Request().Context()), time.Second)
	defer cancel()
	if err := x.d.Limits.Settle(ctx, dec.Reservation, actual, costMicros); err != nil {
		x.d.Log.Warn("limit settle failed", "err", err, "request_id", x.rec.RequestID)
	}
}

// routeHeaders sets the X-Switchyard-* headers of a served request.
func (x *exchange) routeHeaders(served routing.Served) {
	h := x.c.Response().Header()
	h.Set("X-Switchyard-Tier", x.tier)
	if d := served.Deployment; d != nil {
		h.Set("X-Switchyard-Model", d.Model.Code)
		h.Set("X-Switchyard-Provider", d.Provider.Name)
	}
	h.Set("X-Switchyard-Attempts", strconv.Itoa(served.Attempts))
}

// failed answers a request nothing could serve.
func (x *exchange) failed(f *routing.Failure) error {
	h := x.c.Response().Header()
	h.Set("X-Switchyard-Tier", x.tier)
	h.Set("X-Switchyard-Attempts", strconv.Itoa(len(x.trail.Attempts)))
	x.rec.ErrorCode, x.rec.ErrorClass = f.Code, string(f.Class)
	switch {
	case f.Class == adapter.ClassCancelled:
		x.rec.Status, x.rec.HTTPStatus = calllog.StatusClientCancelled, 499
		return nil // nobody is listening
	case countAttempts(x.trail) == 0:
		x.rec.Status = calllog.StatusRejected
	default:
		x.rec.Status = calllog.StatusUpstreamError
	}
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
	}
	if f.NoRetry {
		h.Set("x-should-retry", "false")
	}
	return x.writeError(f.Status, f.Code, f.Message, nil)
}

func countAttempts(tr routing.Trail) int {
	n := 0
	for _, a := range tr.Attempts {
		if a.Outcome != "skipped" {
			n++
		}
	}
	return n
}

// route resolves the request's model and builds its plan (SPEC §5 step 3).
// It answers itself (done) for an unknown model, and for a plan with nothing
// to try — before any limit is spent. The caller releases the plan.
func (x *exchange) route(model string, reasoning bool, needs routing.Needs) (p *routing.Plan, done bool, err error) {
	target, err := routing.Resolve(x.caller, model, needs.Kind, reasoning)
	if err != nil {
		var nf *routing.ModelNotFoundError
		if errors.As(err, &nf) {
			x.c.Response().Header().Set("x-should-retry", "false")
			return nil, true, x.reject(http.StatusNotFound, "model_not_found", "bad_request", nf.Error())
		}
		return nil, true, err
	}
	p = routing.NewPlan()
	routing.Build(p, x.caller, target, needs, &x.d.Exec.State)
	x.tier = string(p.Tier.Name)
	x.rec.Tier = x.tier
	if fail := x.d.Exec.Unavailable(p, &x.trail); fail != nil {
		p.Release()
		return nil, true, x.failed(fail)
	}
	return p, false, nil
}

// gate applies the saturation gate and the caller's limits (SPEC §5 step 4).
// When done, the request was refused and the answer written.
func (x *exchange) gate(estimate int64) (release func(), dec limits.Decision, done bool, err error) {
	release, done, err = x.admit()
	if done {
		return nil, dec, true, err
	}
	dec, done, err = x.limit(estimate)
	if done {
		release()
		return nil, dec, true, err
	}
	return release, dec, false, nil
}

// admit applies the instance saturation gate (batch shed first).
func (x *exchange) admit() (release func(), done bool, err error) {
	if x.d.Admit == nil {
		return func() {}, false, nil
	}
	rel, ok := x.d.Admit(x.caller.PriorityClass == config.ClassBatch)
	if !ok {
		if x.d.Metrics != nil {
			x.d.Metrics.Rejections.WithLabelValues("shed").Inc()
		}
		x.c.Response().Header().Set("Retry-After", "1")
		return nil, true, x.reject(http.StatusTooManyRequests, "rate_limited", "rate_limited", "this gateway instance is saturated; "+string(x.caller.PriorityClass)+" requests are shed first, retry shortly")
	}
	return rel, false, nil
}
