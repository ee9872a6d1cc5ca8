package components

import (
	"strconv"
	"strings"

	"switchyard/routing"
	"switchyard/routing/reason"
)

// VerdictKind is the badge kind of a route group × tier's servability:
// an unservable tier is red wherever it is shown.
func VerdictKind(v routing.Verdict) string {
	switch v {
	case routing.VerdictUnservable:
		return "bad"
	case routing.VerdictDegraded:
		return "warn"
	}
	return "ok"
}

// VerdictWord is the verdict in one word.
func VerdictWord(v routing.Verdict) string {
	switch v {
	case routing.VerdictUnservable:
		return "unservable"
	case routing.VerdictDegraded:
		return "degraded"
	}
	return "servable"
}

// VerdictWhy says in one sentence why a tier cannot serve, or what of it
// is degraded; "" for a servable tier.
func VerdictWhy(v routing.TierVerdict) string {
	if v.Verdict == routing.VerdictServable {
		return ""
	}
	if v.Empty {
		return "The tier lists no candidate: every request gets 503 no_available_model."
	}
	parts := make([]string, 0, len(v.Causes))
	for _, c := range v.Causes {
		parts = append(parts, CauseWords(c))
	}
	why := strings.Join(parts, "; ")
	switch {
	case v.Verdict == routing.VerdictUnservable:
		return "Nothing can serve — " + why + ": every request gets 503 no_available_model."
	case why == "" && v.Fallback == v.Serving:
		return "Only the fallback group serves: the tier's own chain has nothing to try."
	case v.Fallback == v.Serving:
		return "Only the fallback group serves — " + why + "."
	}
	return "Serving with " + strconv.Itoa(v.Serving) + " deployment(s) — " + why + "."
}

// CauseWords is one skip cause with how many it left out: the causes a
// tier's verdict counts have a short counted form, every other code the
// sentence SkipWords gives it (the one place a code becomes words).
func CauseWords(c routing.Cause) string {
	n := strconv.Itoa(c.Count)
	r := c.Reason
	switch r.Code {
	case reason.CandidateParked:
		return n + " candidate(s) parked (weight " + strconv.Itoa(r.Weight) + ")"
	case reason.Parked:
		return n + " deployment(s) parked (weight " + strconv.Itoa(r.Weight) + ")"
	case reason.DisabledByOperator:
		return n + " deployment(s) disabled"
	case reason.ProviderDisabled:
		return "provider " + r.Provider + " disabled (" + n + " deployment(s))"
	case reason.NoActiveKey:
		return "provider " + r.Provider + " has no active key (" + n + " deployment(s))"
	case reason.NoKeys:
		return n + " deployment(s) whose provider has no keys"
	case reason.Unhealthy:
		return n + " deployment(s) down by health score"
	case reason.BreakerOpen:
		return n + " deployment(s) with the circuit breaker open"
	case reason.KeysQuarantined:
		return n + " deployment(s) whose provider keys are all quarantined"
	case reason.KeysCooling:
		return n + " deployment(s) whose provider keys are all cooling after 429s"
	case reason.NoDeployments:
		return n + " logic model(s) without deployments"
	case reason.OverCapacity, reason.OverTokenCapacity:
		return n + " deployment(s) at capacity"
	case reason.LoadUnavailable:
		return n + " deployment(s) whose load counter did not answer"
	case reason.NoProtocol:
		return n + " deployment(s) on protocol " + r.Protocol + ", not implemented"
	case reason.ChainFull:
		return n + " beyond the chain's limit of " + strconv.Itoa(r.Max)
	}
	return n + " × " + strings.TrimPrefix(SkipWords(r), "skipped: ")
}

// UnservableCount is how many route group × tiers cannot serve.
func UnservableCount(vs []routing.TierVerdict) int {
	n := 0
	for _, v := range vs {
		if v.Verdict == routing.VerdictUnservable {
			n++
		}
	}
	return n
}

// CauseCodes are the verdict's cause codes, space-separated (for tests and
// scripts reading the page).
func CauseCodes(v routing.TierVerdict) string {
	codes := make([]string, 0, len(v.Causes))
	for _, c := range v.Causes {
		codes = append(codes, string(c.Reason.Code))
	}
	return strings.Join(codes, " ")
}
