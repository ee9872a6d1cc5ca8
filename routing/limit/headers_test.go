package limit

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFormatReset(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{time.Second, "1s"},
		{6 * time.Minute, "6m0s"},
		{20 * time.Millisecond, "20ms"},
		{8640 * time.Millisecond, "8.64s"},
		{86400 * time.Millisecond, "1m26.4s"},
		{time.Hour + 30*time.Minute, "1h30m0s"},
		{1500 * time.Microsecond, "2ms"}, // rounded up: waiting that long finds it reset
		{time.Nanosecond, "1ms"},
		{0, "0s"},
		{-time.Second, "0s"},
	}
	for _, tt := range tests {
		if got := FormatReset(tt.d); got != tt.want {
			t.Errorf("FormatReset(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestHeaders(t *testing.T) {
	tests := []struct {
		name string
		d    Decision
		want http.Header
	}{
		{
			name: "admitted",
			d: Decision{Allowed: true,
				Requests: Window{Limit: 60, Remaining: 59, Reset: time.Second},
				Tokens:   Window{Limit: 150000, Remaining: 149984, Reset: 6 * time.Millisecond}},
			want: http.Header{
				"X-Ratelimit-Limit-Requests":     {"60"},
				"X-Ratelimit-Remaining-Requests": {"59"},
				"X-Ratelimit-Reset-Requests":     {"1s"},
				"X-Ratelimit-Limit-Tokens":       {"150000"},
				"X-Ratelimit-Remaining-Tokens":   {"149984"},
				"X-Ratelimit-Reset-Tokens":       {"6ms"},
			},
		},
		{
			name: "unlimited windows write nothing",
			d:    Decision{Allowed: true},
			want: http.Header{},
		},
		{
			name: "rate limited",
			d: Decision{Reason: ReasonRateLimited, RetryAfter: 1200 * time.Millisecond,
				Requests: Window{Limit: 50, Remaining: 0, Reset: time.Minute}},
			want: http.Header{
				"X-Ratelimit-Limit-Requests":     {"50"},
				"X-Ratelimit-Remaining-Requests": {"0"},
				// The exhausted window resets when the request can pass:
				// the same moment as Retry-After-Ms, not when it is full.
				"X-Ratelimit-Reset-Requests": {"1.2s"},
				"Retry-After":                {"2"},
				"Retry-After-Ms":             {"1200"},
			},
		},
		{
			name: "refused by TPM: its reset is the wait, the other window's never later",
			d: Decision{Reason: ReasonRateLimited, Limit: KindTPM, RetryAfter: 2500 * time.Millisecond,
				Requests: Window{Limit: 60, Remaining: 30, Reset: 30 * time.Second},
				Tokens:   Window{Limit: 1000, Remaining: 200, Reset: 48 * time.Second}},
			want: http.Header{
				"X-Ratelimit-Limit-Requests":     {"60"},
				"X-Ratelimit-Remaining-Requests": {"30"},
				"X-Ratelimit-Reset-Requests":     {"2.5s"},
				"X-Ratelimit-Limit-Tokens":       {"1000"},
				"X-Ratelimit-Remaining-Tokens":   {"200"},
				"X-Ratelimit-Reset-Tokens":       {"2.5s"},
				"Retry-After":                    {"3"},
				"Retry-After-Ms":                 {"2500"},
			},
		},
		{
			name: "an admitted decision capped by an upstream's Retry-After",
			d: Decision{Allowed: true,
				Requests: Window{Limit: 60, Remaining: 59, Reset: time.Second},
				Tokens:   Window{Limit: 1000, Remaining: 10, Reset: 50 * time.Second}}.CapResets(20 * time.Second),
			want: http.Header{
				"X-Ratelimit-Limit-Requests":     {"60"},
				"X-Ratelimit-Remaining-Requests": {"59"},
				"X-Ratelimit-Reset-Requests":     {"1s"},
				"X-Ratelimit-Limit-Tokens":       {"1000"},
				"X-Ratelimit-Remaining-Tokens":   {"10"},
				"X-Ratelimit-Reset-Tokens":       {"20s"},
			},
		},
		{
			name: "quota exhausted: do not retry",
			d:    Decision{Reason: ReasonQuotaExceeded, RetryAfter: 3 * time.Hour},
			want: http.Header{
				"Retry-After":    {"10800"},
				"Retry-After-Ms": {"10800000"},
				"X-Should-Retry": {"false"},
			},
		},
		{
			name: "too large for the TPM burst: do not retry",
			d:    Decision{Reason: ReasonRateLimited, RetryAfter: 0, Never: true},
			want: http.Header{
				"Retry-After":    {"1"},
				"Retry-After-Ms": {"1"},
				"X-Should-Retry": {"false"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			tt.d.SetHeaders(h)
			if diff := cmp.Diff(tt.want, h); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
		})
	}
}
