package calllogs

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"switchyard/routing"
	"switchyard/routing/reason"
	"switchyard/views/components"
)

// Step is one entry of an attempt trail as the timeline draws it: a plan
// skip, a run-time skip, or an attempt.
type Step struct {
	Kind       string // css class: ok | bad | skip
	Outcome    string // ok | failed | skipped
	Phase      string // "plan" (left out when the chain was built) or "run"
	Model      string
	Deployment string
	Provider   string
	Key        string
	Class      string
	Status     int
	LatencyMS  int64
	Fallback   bool
	// Words explains the step in a sentence.
	Words string
	// Detail is what the vendor or the router said, verbatim.
	Detail string
}

// ParseTrail reads the attempt trail stored on a call log. It accepts the
// trail object ({"skips","attempts","fallback"}) and a bare attempts array;
// ok is false when there is nothing readable.
func ParseTrail(raw json.RawMessage) (routing.Trail, bool) {
	var tr routing.Trail
	s := strings.TrimSpace(string(raw))
	switch {
	case s == "" || s == "null" || s == "[]" || s == "{}":
		return tr, false
	case strings.HasPrefix(s, "["):
		if err := json.Unmarshal(raw, &tr.Attempts); err != nil {
			return tr, false
		}
	default:
		if err := json.Unmarshal(raw, &tr); err != nil {
			return tr, false
		}
	}
	return tr, len(tr.Skips)+len(tr.Attempts)+len(tr.Degraded) > 0 || tr.Fallback != ""
}

// Steps turns a trail into timeline steps: the plan's skips first, then
// every attempt and run-time skip in order.
func Steps(tr routing.Trail) []Step {
	out := make([]Step, 0, len(tr.Skips)+len(tr.Attempts))
	for _, s := range tr.Skips {
		out = append(out, Step{Kind: "skip", Outcome: "skipped", Phase: "plan", Model: s.Model, Deployment: s.Deployment,
			Fallback: s.Fallback, Words: ExplainSkip(s.Reason), Detail: string(s.Reason.Code)})
	}
	for i, a := range tr.Attempts {
		var next *routing.Attempt
		if i+1 < len(tr.Attempts) {
			next = &tr.Attempts[i+1]
		}
		st := Step{Outcome: string(a.Outcome), Phase: "run", Model: a.Model, Deployment: a.Deployment, Provider: a.Provider,
			Key: a.Key, Class: string(a.Class), Status: a.Status, LatencyMS: a.LatencyMS, Fallback: a.Fallback, Detail: a.Reason}
		switch a.Outcome {
		case "ok":
			st.Kind = "ok"
		case "skipped":
			st.Kind = "skip"
		default:
			st.Kind = "bad"
		}
		st.Words = ExplainAttempt(a, next)
		out = append(out, st)
	}
	return out
}

// ExplainSkip turns a skip reason of the plan or the executor into a
// sentence an operator can act on (components.SkipWords).
func ExplainSkip(r reason.Reason) string { return components.SkipWords(r) }

// ExplainAttempt says what happened in one attempt and what the router did
// next. next is the following trail entry, or nil when this was the last.
func ExplainAttempt(a routing.Attempt, next *routing.Attempt) string {
	switch a.Outcome {
	case "ok":
		s := "answered"
		if a.Key != "" {
			s += " with key " + a.Key
		}
		s += " in " + ms(a.LatencyMS)
		if a.Fallback {
			s += ", from the shared fallback group"
		}
		return s
	case "skipped":
		return ExplainSkip(attemptSkip(a))
	}
	key := "its key"
	if a.Key != "" {
		key = "key " + a.Key
	}
	http := ""
	if a.Status != 0 {
		http = " (HTTP " + strconv.Itoa(a.Status) + ")"
	}
	then := thenWhat(a, next)
	switch a.Class {
	case "rate_limited":
		return "the vendor rate-limited " + key + http + "; the key cools down until its Retry-After and " + then
	case "auth":
		return "the vendor refused " + key + " as unauthorised" + http + "; the key is quarantined until an operator re-enables it, and " + then
	case "billing":
		return "the vendor refused " + key + " for billing or exhausted credit" + http + "; the key is quarantined until an operator re-enables it, and " + then
	case "server":
		return "the vendor failed with a server error" + http + "; this counts toward the deployment's circuit breaker and " + then
	case "timeout":
		return "no answer within the attempt's timeout (after " + ms(a.LatencyMS) + "); this counts toward the circuit breaker and " + then
	case "network":
		return "the vendor could not be reached (connection refused or reset, DNS or TLS failure); this counts toward the circuit breaker and " + then
	case "content_filter":
		return "the vendor's content filter blocked the request" + http + "; a filtered request is not retried elsewhere, so the caller got 400 content_filtered"
	case "bad_request":
		return "the vendor refused the request as invalid" + http + " (bad parameters or context too long); it is not retried elsewhere, so the caller got the vendor's message"
	case "client_cancelled":
		return "the client went away; the upstream call was cancelled at once and nothing was retried"
	}
	s := "failed"
	if a.Class != "" {
		s += " (" + string(a.Class) + ")"
	}
	return s + http + "; " + then
}

// thenWhat says where the router went after a failed attempt.
func thenWhat(a routing.Attempt, next *routing.Attempt) string {
	switch {
	case next == nil:
		return "nothing was left to try"
	case next.DeploymentID == a.DeploymentID && next.Deployment == a.Deployment:
		return "the next key was tried"
	case next.Fallback && !a.Fallback:
		return "the shared fallback group was tried next"
	}
	return "the next candidate was tried"
}

func ms(v int64) string {
	if v >= 10000 {
		return strconv.FormatFloat(float64(v)/1000, 'f', 1, 64) + " s"
	}
	return strconv.FormatInt(v, 10) + " ms"
}

// ExplainRejection explains a call Switchyard answered itself, from its
// error code (and class), for rows without attempts.
func ExplainRejection(code, class, caller, tier string) string {
	who := "the caller"
	if caller != "" {
		who = "caller " + caller
	}
	on := ""
	if tier != "" {
		on = " on tier " + tier
	}
	switch code {
	case "rate_limited":
		return "Rejected by Switchyard before any vendor call: " + who + " reached its rate limit (requests or tokens per minute)" + on +
			", or the instance was saturated and shed this priority class first. The caller got 429 with Retry-After; nothing was spent."
	case "quota_exceeded":
		return "Rejected by Switchyard before any vendor call: the daily token quota of " + who + on + " is used up. It resets at local midnight."
	case "budget_exceeded":
		return "Rejected by Switchyard before any vendor call: the monthly budget of " + who + " is spent. It resets at the start of next month, or raise it on the Callers page."
	case "invalid_api_key":
		return "Rejected: the request carried no API key, or one that is unknown or revoked (HTTP 401). No caller could be identified."
	case "caller_disabled":
		return "Rejected: " + who + " is disabled (HTTP 403). Enable it on the Callers page and publish."
	case "caller_not_live":
		return "Rejected: " + who + " is not in the live version. Publish the draft first."
	case "model_not_found":
		return "Rejected: the requested model is neither a tier nor a logic model this caller's route group reaches (HTTP 404). Switchyard never substitutes another model."
	case "invalid_request":
		return "Rejected: the request was malformed (HTTP 400) — invalid JSON, missing fields, a bad header or a body too large. No vendor was called."
	case "idempotency_conflict":
		return "Rejected: the Idempotency-Key was already used with a different request body (HTTP 422). Use a new key for a new request."
	case "idempotency_unavailable":
		return "Rejected: the request carried an Idempotency-Key but the idempotency store was unavailable (HTTP 503)."
	case "no_available_model":
		if class == "" {
			return "Rejected: no model was available — every candidate was skipped (see the skip reasons below), or nothing was published yet (HTTP 503)."
		}
		return "No model was available: every candidate was skipped or its keys refused (HTTP 503)."
	case "content_filtered":
		return "The vendor's content filter blocked the request (HTTP 400); it was not retried elsewhere."
	case "timeout":
		return "The request's time budget ran out (HTTP 504)."
	case "client_cancelled":
		return "The client went away before an answer was sent."
	case "body_bytes_full":
		return "Rejected: this gateway instance was already reading as many request-body bytes as its bound allows (SWITCHYARD_MAX_BODY_BYTES_IN_FLIGHT); the caller got 503 with Retry-After before its body was read."
	case "client_stalled":
		return "The client stopped reading the answer: it was not taken by the write deadline (the tier's timeout plus a second for a stream), so the connection was closed and the deployment's slot and the upstream released."
	case "model_too_long":
		return "Rejected: the request's model field was longer than 256 bytes (HTTP 400); it was neither echoed nor stored."
	case "request_timeout":
		return "Rejected: the request body did not arrive within the read timeout (HTTP 408); the connection was closed."
	case "shutting_down":
		return "This gateway instance was shutting down and cut the request when its shutdown grace ran out; the caller got an error telling it to retry."
	case "":
		return "Rejected by Switchyard; no error code was recorded."
	}
	return fmt.Sprintf("Rejected by Switchyard with error code %s.", code)
}

// attemptSkip is a run-time skip's reason; rows written before typed reasons
// carry the old text instead.
func attemptSkip(a routing.Attempt) reason.Reason {
	if a.Skip != nil {
		return *a.Skip
	}
	return reason.Reason{Code: reason.Legacy, Detail: a.Reason}
}
