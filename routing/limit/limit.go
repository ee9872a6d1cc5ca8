// Package limit is the vocabulary of a caller's limits as the request journey
// sees them: what a request asks to spend, what the limiter decided, and the
// reservation an admitted request holds until it is settled. The limiter
// itself (Redis, with a per-instance fallback) lives in store/redis/limits.
package limit

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// ErrInvalidRequest reports a negative limit or estimate.
var ErrInvalidRequest = errors.New("limits: invalid request")

// Reason is the OpenAI-style error code of a rejection.
type Reason string

// Reasons for a rejection.
const (
	ReasonNone           Reason = ""
	ReasonRateLimited    Reason = "rate_limited"
	ReasonQuotaExceeded  Reason = "quota_exceeded"
	ReasonBudgetExceeded Reason = "budget_exceeded"
)

// Kind names the one limit that refused a request.
type Kind string

// The limits a caller has.
const (
	KindNone   Kind = ""
	KindRPM    Kind = "rpm"    // requests per minute
	KindTPM    Kind = "tpm"    // tokens per minute
	KindDaily  Kind = "daily"  // daily token quota
	KindBudget Kind = "budget" // monthly budget
	// KindInstance is the instance's in-flight cap (SWITCHYARD_MAX_INFLIGHT)
	// refusing a request of a class configured without a queue; classes with
	// a queue wait at the cap instead (KindQueueFull, KindQueueShed when the
	// queue refuses). Rows from before the queues used it for the batch shed.
	KindInstance Kind = "instance"
	// KindQueueFull: the request's class queue (for the instance's
	// in-flight cap or a deployment at capacity) was full. The refusal
	// names the class and the queue's bound.
	KindQueueFull Kind = "queue_full"
	// KindQueueShed: the request was shed from its queue to make room for
	// an interactive one. The refusal names its class.
	KindQueueShed Kind = "queue_shed"
	// KindDeploymentCap is the max concurrency of deployments, not a caller
	// limit: every deployment that could serve had all its slots busy.
	KindDeploymentCap Kind = "deployment_cap"
	// KindCountTokens is count_tokens' own requests-per-minute limit (a
	// multiple of the caller's RPM on the tier); Value is that rate.
	KindCountTokens Kind = "count_tokens_rpm"
	// KindBodyBytes is the instance's bound on request-body bytes in flight
	// (SWITCHYARD_MAX_BODY_BYTES_IN_FLIGHT); Value is that bound in bytes.
	KindBodyBytes Kind = "body_bytes"
)

// Limits are a caller's limits for one tier. Zero means unlimited and costs
// nothing (no Redis work for that limit).
type Limits struct {
	RPM      int64 // requests per minute
	RPMBurst int64 // requests admitted at once; 0 means RPM
	TPM      int64 // tokens per minute
	TPMBurst int64 // tokens admitted at once; 0 means TPM
	// DailyTokens is the token quota per local day. A request is rejected
	// when used + estimate > quota, and once the quota is used up even
	// without an estimate.
	DailyTokens int64
	// MonthlyBudgetMicros is the caller's budget for the local calendar month
	// across all tiers (pass the same value with every tier), in micro-units
	// of currency. A request is rejected once spent >= budget.
	MonthlyBudgetMicros int64
}

// Unlimited reports whether no limit is set.
func (l Limits) Unlimited() bool {
	return l.RPM == 0 && l.TPM == 0 && l.DailyTokens == 0 && l.MonthlyBudgetMicros == 0
}

// WithDefaults fills the bursts left at zero with their rates.
func (l Limits) WithDefaults() Limits {
	if l.RPMBurst == 0 {
		l.RPMBurst = l.RPM
	}
	if l.TPMBurst == 0 {
		l.TPMBurst = l.TPM
	}
	return l
}

// Request is one data-plane request to admit.
type Request struct {
	CallerID int64
	Tier     string
	Limits   Limits
	// EstimatedTokens is reserved in TPM and the daily quota until Settle.
	EstimatedTokens int64
}

// Validate refuses negative limits and estimates.
func (r Request) Validate() error {
	l := r.Limits
	for _, v := range []int64{l.RPM, l.RPMBurst, l.TPM, l.TPMBurst, l.DailyTokens, l.MonthlyBudgetMicros, r.EstimatedTokens} {
		if v < 0 {
			return fmt.Errorf("%w: negative limit or estimate for caller %d tier %q", ErrInvalidRequest, r.CallerID, r.Tier)
		}
	}
	return nil
}

// Window is the state of one rate (requests or tokens) after a decision, as
// OpenAI reports it. A zero Limit means the rate is unlimited.
type Window struct {
	Limit     int64
	Remaining int64
	// Reset is the time until the window is back to its full Limit.
	Reset time.Duration
}

// Decision is the outcome of a limit check.
type Decision struct {
	Allowed bool
	Reason  Reason
	// Limit is the limit that refused (the one with the longest wait when
	// several did); Value is that limit's configured value.
	Limit Kind
	Value int64
	// RetryAfter is, on rejection, the earliest time the request could pass
	// if nothing else were spent meanwhile: the longest wait of all failing
	// checks (local midnight for the quota, the month start for the budget).
	RetryAfter time.Duration
	Requests   Window
	Tokens     Window
	// Reservation is what an admitted request holds; pass it to Settle.
	Reservation Reservation
	// Local is set when the per-instance fallback decided (Redis down).
	Local bool
	// Leased is set when the decision was taken from this instance's
	// leased slice of the shared limits, without a Redis round trip.
	Leased bool
	// Never is set when a failing check can never pass for this request (its
	// estimate exceeds the TPM burst or the whole daily quota).
	Never bool
}

// ShouldRetry reports whether retrying the same request later can succeed
// soon, i.e. what `x-should-retry` should say: false for an exhausted quota or
// budget and for a request larger than a limit.
func (d Decision) ShouldRetry() bool {
	return d.Allowed || (d.Reason == ReasonRateLimited && !d.Never)
}

// Reservation is what an admitted request holds until Settle. The zero value
// holds nothing. Only the limiter that made it reads its fields.
type Reservation struct {
	CallerID int64
	Tier     string
	Tokens   int64 // estimate held in TPM and the daily quota
	TPM      int64 // 0: TPM unlimited, nothing held there
	Day      string
	Daily    bool
	Month    string
	MonthTTL time.Duration
	Budget   bool
	Local    bool
}

// Empty reports whether the reservation holds nothing.
func (r Reservation) Empty() bool { return !r.Daily && !r.Budget && r.TPM == 0 }

// Header kinds for Window.Headers.
const (
	HeaderRequests = "requests"
	HeaderTokens   = "tokens"
)

// Headers writes OpenAI's x-ratelimit-limit-<kind>, x-ratelimit-remaining-<kind>
// and x-ratelimit-reset-<kind> for the window; nothing if it is unlimited.
func (w Window) Headers(h http.Header, kind string) {
	var buf [64]byte
	hs := headerSet{b: buf[:0]}
	hs.window(w, kind)
	hs.set(h)
}

// windowHeaders are the canonical names of a kind's three headers, so that
// setting them needs neither a concatenation nor a canonicalisation.
func windowHeaders(kind string) [3]string {
	switch kind {
	case HeaderRequests:
		return requestsHeaders
	case HeaderTokens:
		return tokensHeaders
	}
	return [3]string{http.CanonicalHeaderKey("x-ratelimit-limit-" + kind),
		http.CanonicalHeaderKey("x-ratelimit-remaining-" + kind), http.CanonicalHeaderKey("x-ratelimit-reset-" + kind)}
}

var (
	requestsHeaders = [3]string{"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests"}
	tokensHeaders   = [3]string{"X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens"}
)

// headerSet collects rate-limit headers and sets them with one string and
// one slice of values for all of them (the per-request cost of the headers
// was a dozen allocations).
type headerSet struct {
	b     []byte
	names [8]string
	ends  [8]int
	n     int
}

func (hs *headerSet) addString(name, v string) {
	hs.b = append(hs.b, v...)
	hs.names[hs.n], hs.ends[hs.n] = name, len(hs.b)
	hs.n++
}

func (hs *headerSet) addInt(name string, v int64) {
	hs.b = strconv.AppendInt(hs.b, v, 10)
	hs.names[hs.n], hs.ends[hs.n] = name, len(hs.b)
	hs.n++
}

func (hs *headerSet) window(w Window, kind string) {
	if w.Limit <= 0 {
		return
	}
	names := windowHeaders(kind)
	hs.addInt(names[0], w.Limit)
	hs.addInt(names[1], max(w.Remaining, 0))
	hs.addString(names[2], FormatReset(w.Reset))
}

func (hs *headerSet) set(h http.Header) {
	if hs.n == 0 {
		return
	}
	all := string(hs.b)
	vals := make([]string, hs.n)
	start := 0
	for i := range hs.n {
		vals[i] = all[start:hs.ends[i]]
		start = hs.ends[i]
		h[hs.names[i]] = vals[i : i+1 : i+1]
	}
}

// SetHeaders writes the rate-limit headers of both windows and, on a
// rejection, Retry-After (whole seconds, rounded up), Retry-After-Ms (which
// openai-go prefers) and, when a retry cannot help soon, x-should-retry: false.
// On a rejection the reset headers agree with Retry-After: the window that
// refused (and any exhausted one) resets when the request could pass, and no
// window claims a later reset.
func (d Decision) SetHeaders(h http.Header) {
	if !d.Allowed {
		d = d.CapResets(d.RetryAfter)
		if d.Requests.Limit > 0 && (d.Limit == KindRPM || d.Requests.Remaining <= 0) {
			d.Requests.Reset = d.RetryAfter
		}
		if d.Tokens.Limit > 0 && (d.Limit == KindTPM || d.Tokens.Remaining <= 0) {
			d.Tokens.Reset = d.RetryAfter
		}
	}
	var buf [160]byte
	hs := headerSet{b: buf[:0]}
	hs.window(d.Requests, HeaderRequests)
	hs.window(d.Tokens, HeaderTokens)
	if !d.Allowed {
		ms := (d.RetryAfter + time.Millisecond - 1) / time.Millisecond
		secs := (d.RetryAfter + time.Second - 1) / time.Second
		hs.addInt("Retry-After", max(int64(secs), 1))
		hs.addInt("Retry-After-Ms", max(int64(ms), 1))
	}
	hs.set(h)
	if !d.ShouldRetry() {
		h.Set("x-should-retry", "false")
	}
}

// CapResets returns d with no window resetting later than wait: a 429 whose
// Retry-After is wait (an upstream's rate limit, after this decision admitted
// the request) sends window headers that do not contradict it.
func (d Decision) CapResets(wait time.Duration) Decision {
	if wait <= 0 {
		return d
	}
	d.Requests.Reset = min(d.Requests.Reset, wait)
	d.Tokens.Reset = min(d.Tokens.Reset, wait)
	return d
}

// FormatReset formats a reset time the way OpenAI does ("1s", "6m0s",
// "20ms", "1.5s"): a Go duration rounded up to the millisecond, so a client
// that waits that long finds the window reset. Zero or less is "0s".
func FormatReset(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if r := d % time.Millisecond; r != 0 {
		d += time.Millisecond - r
	}
	return d.String()
}
