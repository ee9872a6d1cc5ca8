// Package reason names why the router left a candidate or deployment out of a
// request's chain: a code with parameters, defined once. The call log stores
// these codes; the caller's error message (Reason.String) and the console
// (views) turn them into words. Nothing parses the words back.
package reason

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Code is what kind of skip a Reason is.
type Code string

// Skip codes. The parameters each code fills are noted beside it.
const (
	// Recorded before typed reasons existed: Detail holds the old text. The
	// zero Reason (Code "") means no reason: usable.
	Legacy Code = "legacy"

	DisabledByOperator Code = "disabled_by_operator" // the deployment is disabled
	Parked             Code = "parked"               // the deployment is parked (Weight: only on old records)
	CandidateParked    Code = "candidate_parked"     // the candidate is parked (Weight: only on old records)
	ProviderDisabled   Code = "provider_disabled"    // Provider
	NoActiveKey        Code = "no_active_key"        // Provider: its pool has no active key
	LacksCapability    Code = "lacks_capability"     // Capability: thinking | vision | tools
	WrongKind          Code = "wrong_kind"           // Kind: the model's kind; Want: the request's
	AlreadyInChain     Code = "already_in_chain"     // the same deployment is earlier in the chain
	NoDeployments      Code = "no_deployments"       // the logic model has none
	ChainFull          Code = "chain_full"           // Max: the chain's length limit was reached
	Unhealthy          Code = "unhealthy"            // the health checker marked it down
	BreakerOpen        Code = "breaker_open"         // its circuit breaker is open
	OverCapacity       Code = "over_capacity"        // Max: its max concurrency, all slots busy
	// OverTokenCapacity: the request's estimated tokens do not fit beside
	// those in flight. Max: its max in-flight tokens.
	OverTokenCapacity Code = "over_token_capacity"
	LoadUnavailable   Code = "load_unavailable"         // Detail: why the load counter failed
	NoProtocol        Code = "protocol_not_implemented" // Protocol
	NoKeys            Code = "no_keys"                  // the provider has no key (or no key pool)
	KeysCooling       Code = "keys_cooling"             // every key is cooling after a 429
	KeysQuarantined   Code = "keys_quarantined"         // every key is quarantined (auth, billing)
	KeysTried         Code = "keys_tried"               // every key was tried for this request
	// UnsupportedParameter: the deployment's protocol cannot carry a field
	// the request set (its adapter's field table refuses it). Param: the
	// field; Protocol.
	UnsupportedParameter Code = "unsupported_parameter"
	// RetryBudgetExhausted: the route group × tier has spent its retry
	// budget, so this step was not tried after the previous one failed.
	// Percent: retries allowed per 100 first attempts; PerSecond: the
	// floor; WindowMS: the sliding window; Tier.
	RetryBudgetExhausted Code = "retry_budget_exhausted"
)

// Codes lists every code, in the order declared above: the list tests walk
// to prove each code has words (a test checks it holds every Code constant).
var Codes = []Code{
	Legacy, DisabledByOperator, Parked, CandidateParked, ProviderDisabled, NoActiveKey, LacksCapability,
	WrongKind, AlreadyInChain, NoDeployments, ChainFull, Unhealthy, BreakerOpen, OverCapacity,
	OverTokenCapacity, LoadUnavailable, NoProtocol, NoKeys, KeysCooling, KeysQuarantined, KeysTried,
	UnsupportedParameter, RetryBudgetExhausted,
}

// Reason is one skip: a code and the parameters it needs.
type Reason struct {
	Code       Code   `json:"code"`
	Weight     int    `json:"weight,omitempty"`
	Provider   string `json:"provider,omitempty"`
	Capability string `json:"capability,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Want       string `json:"want,omitempty"`
	Max        int    `json:"max,omitempty"`
	Protocol   string `json:"protocol,omitempty"`
	Param      string `json:"param,omitempty"`
	Tier       string `json:"tier,omitempty"`
	Percent    int    `json:"percent,omitempty"`
	PerSecond  int    `json:"per_second,omitempty"`
	WindowMS   int64  `json:"window_ms,omitempty"`
	// Until is, for a temporary skip, when it is expected to pass (a key's
	// cooling ends, a breaker half-opens), in Unix milliseconds; 0 when
	// nobody knows (a concurrency slot frees at any moment). An integer, not
	// a time.Time: a skip is copied into every plan.
	Until int64 `json:"until,omitempty"`
	// Detail is text from outside the router (an error of the load
	// counter) or, for Legacy, the whole old reason.
	Detail string `json:"detail,omitempty"`
}

// Of is a Reason with only a code.
func Of(c Code) Reason { return Reason{Code: c} }

// Temporary reports a skip that passes by itself — keys cooling, a breaker
// open, every concurrency slot busy, the health checker's verdict, a load
// counter that did not answer, every key tried by this request — as opposed
// to one an operator must fix (disabled, parked, lacks a capability,
// protocol not implemented, keys quarantined or missing, ...). A request
// refused only for permanent skips is not worth retrying.
func (c Code) Temporary() bool {
	switch c {
	case Unhealthy, BreakerOpen, OverCapacity, OverTokenCapacity, LoadUnavailable, KeysCooling, KeysTried, RetryBudgetExhausted:
		return true
	}
	return false
}

// Temporary reports whether the reason's code is temporary.
func (r Reason) Temporary() bool { return r.Code.Temporary() }

// SoonRetry is how long a temporary skip with no known end (Until 0) is
// expected to last: a slot or a counter may free up at any moment.
const SoonRetry = time.Second

// Passes is when the skip is expected to pass: Until, else now + SoonRetry.
// A permanent skip never passes by itself (ok false).
func (r Reason) Passes(now time.Time) (at time.Time, ok bool) {
	if !r.Code.Temporary() {
		return time.Time{}, false
	}
	if r.Until > 0 {
		if t := time.UnixMilli(r.Until); t.After(now) {
			return t, true
		}
	}
	return now.Add(SoonRetry), true
}

// UntilOf is t as a Reason's Until (0 for the zero time).
func UntilOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// String is the reason in the few words of the caller's error message, e.g.
// "parked" or "lacks vision".
func (r Reason) String() string {
	if s, ok := r.words(); ok {
		return s
	}
	return string(r.Code)
}

// words is String for the codes it knows; ok false for one it has no words
// for (a test walks every code).
func (r Reason) words() (string, bool) {
	switch r.Code {
	case Legacy:
		return r.Detail, true
	case DisabledByOperator:
		return "disabled", true
	case Parked:
		return "parked", true
	case CandidateParked:
		return "candidate parked", true
	case ProviderDisabled:
		return "provider " + r.Provider + " disabled", true
	case NoActiveKey:
		return "provider " + r.Provider + " has no active key", true
	case LacksCapability:
		return "lacks " + r.Capability, true
	case WrongKind:
		return "is " + withArticle(r.Kind) + " model; this is " + withArticle(r.Want) + " request", true
	case AlreadyInChain:
		return "already in the chain", true
	case NoDeployments:
		return "has no deployments", true
	case ChainFull:
		return "beyond the chain's limit of " + strconv.Itoa(r.Max) + " steps", true
	case Unhealthy:
		return "unhealthy", true
	case BreakerOpen:
		return "breaker open", true
	case OverCapacity:
		return "at max concurrency (" + strconv.Itoa(r.Max) + ")", true
	case OverTokenCapacity:
		return "at max in-flight tokens (" + strconv.Itoa(r.Max) + ")", true
	case LoadUnavailable:
		return "load counter unavailable: " + r.Detail, true
	case NoProtocol:
		return "protocol " + r.Protocol + " is not implemented", true
	case NoKeys:
		return "no keys", true
	case KeysCooling:
		return "all keys cooling", true
	case KeysQuarantined:
		return "all keys quarantined", true
	case KeysTried:
		return "all keys tried", true
	case UnsupportedParameter:
		return "cannot carry parameter " + r.Param + " (" + r.Protocol + " protocol)", true
	case RetryBudgetExhausted:
		return "not tried: the retry budget of tier " + r.Tier + " is spent (" + strconv.Itoa(r.Percent) + "% of first attempts, at least " +
			strconv.Itoa(r.PerSecond) + "/s, over " + (time.Duration(r.WindowMS) * time.Millisecond).String() + ")", true
	}
	return "", false
}

// UnmarshalJSON reads a Reason, and also the plain strings call logs held
// before reasons were typed: those become Legacy with the text as Detail,
// shown as they were written.
func (r *Reason) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*r = Reason{Code: Legacy, Detail: s}
		return nil
	}
	type plain Reason
	return json.Unmarshal(b, (*plain)(r))
}

// withArticle puts "a" or "an" before a word by its first letter ("an
// embedding", "a chat").
func withArticle(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}
