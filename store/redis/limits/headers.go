package limits

import (
	"net/http"
	"strconv"
	"time"
)

// Header kinds for Window.Headers.
const (
	KindRequests = "requests"
	KindTokens   = "tokens"
)

// Headers writes OpenAI's x-ratelimit-limit-<kind>, x-ratelimit-remaining-<kind>
// and x-ratelimit-reset-<kind> for the window; nothing if it is unlimited.
func (w Window) Headers(h http.Header, kind string) {
	if w.Limit <= 0 {
		return
	}
	h.Set("x-ratelimit-limit-"+kind, strconv.FormatInt(w.Limit, 10))
	h.Set("x-ratelimit-remaining-"+kind, strconv.FormatInt(max(w.Remaining, 0), 10))
	h.Set("x-ratelimit-reset-"+kind, FormatReset(w.Reset))
}

// SetHeaders writes the rate-limit headers of both windows and, on a
// rejection, Retry-After (whole seconds, rounded up), Retry-After-Ms (which
// openai-go prefers) and, when a retry cannot help soon, x-should-retry: false.
func (d Decision) SetHeaders(h http.Header) {
	d.Requests.Headers(h, KindRequests)
	d.Tokens.Headers(h, KindTokens)
	if d.Allowed {
		return
	}
	ms := (d.RetryAfter + time.Millisecond - 1) / time.Millisecond
	secs := (d.RetryAfter + time.Second - 1) / time.Second
	h.Set("Retry-After", strconv.FormatInt(max(int64(secs), 1), 10))
	h.Set("Retry-After-Ms", strconv.FormatInt(max(int64(ms), 1), 10))
	if !d.ShouldRetry() {
		h.Set("x-should-retry", "false")
	}
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
