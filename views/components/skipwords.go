package components

import (
	"strconv"

	"switchyard/routing/reason"
)

// SkipWords turns a skip reason of the plan or the executor into a
// sentence an operator can act on. It is the one place a skip code becomes
// the console's words; the shorter badges fall back to it.
func SkipWords(r reason.Reason) string {
	if s, ok := skipSentence(r); ok {
		return s
	}
	return "skipped: " + r.String()
}

// skipSentence is SkipWords for the codes it knows; ok false for a code it
// has no words for (a test walks every code).
func skipSentence(r reason.Reason) (string, bool) {
	switch r.Code {
	case "":
		return "skipped (no reason recorded)", true
	case reason.Legacy:
		if r.Detail == "" {
			return "skipped (no reason recorded)", true
		}
		return "skipped: " + r.Detail, true
	case reason.Parked:
		return "skipped: parked — the deployment is kept in the configuration without traffic", true
	case reason.CandidateParked:
		return "skipped: the candidate is parked — it is kept in the tier's chain without traffic", true
	case reason.DisabledByOperator:
		return "skipped: the deployment is disabled by an operator", true
	case reason.ProviderDisabled:
		return "skipped: provider " + r.Provider + " is disabled by an operator, so none of its deployments serve", true
	case reason.NoActiveKey:
		return "skipped: provider " + r.Provider + " has no active key — add or enable a key in its pool", true
	case reason.LacksCapability:
		return "skipped: the request needs " + capabilityWords(r.Capability) + ", which this deployment does not offer (its capabilities lack " + r.Capability + ")", true
	case reason.Unhealthy:
		return "skipped: unhealthy — the health checker marked the deployment down after failed probes and calls", true
	case reason.AlreadyInChain:
		return "skipped: the same deployment is already earlier in the chain, so it is not tried twice", true
	case reason.NoDeployments:
		return "skipped: the logic model has no deployments to serve it", true
	case reason.ChainFull:
		return "skipped: the chain already holds " + strconv.Itoa(r.Max) + " entries at this level, the most one request considers; lower the number of candidates or deployments", true
	case reason.WrongKind:
		return "skipped: the candidate is " + WithArticle(r.Kind) + " model and this is " + WithArticle(r.Want) + " request (chat and embedding models never stand in for each other)", true
	case reason.BreakerOpen:
		return "skipped: its circuit breaker is open after too many server errors, timeouts or network failures; it lets a few probes through once the open period ends", true
	case reason.OverCapacity:
		return "skipped: at max concurrency of " + strconv.Itoa(r.Max) + " — every slot is busy with requests in flight (or requests of this instance are queued for it), so the next step was tried; when every step is at capacity the request waits in its class's queue", true
	case reason.OverTokenCapacity:
		return "skipped: at max in-flight tokens of " + strconv.Itoa(r.Max) + " — the request's estimated tokens do not fit beside those of the requests in flight, so the next step was tried; when every step is at capacity the request waits in its class's queue", true
	case reason.LoadUnavailable:
		return "skipped: the shared load counter could not be read (" + r.Detail + ")", true
	case reason.NoProtocol:
		return "skipped: protocol " + r.Protocol + " is not implemented in this build of Switchyard", true
	case reason.NoKeys:
		return "skipped: the provider has no usable key in its pool", true
	case reason.KeysCooling:
		return "skipped: all keys are cooling after the vendor rate-limited them; they are used again once their Retry-After passes", true
	case reason.KeysQuarantined:
		return "skipped: all keys are quarantined after the vendor refused them (auth or billing); an operator must re-enable them on the Providers page", true
	case reason.KeysTried:
		return "skipped: every key of the provider was already tried for this request", true
	case reason.RetryBudgetExhausted:
		return "not tried: the retry budget of tier " + r.Tier + " was spent — retries may be " + strconv.Itoa(r.Percent) + "% of the tier's first attempts (at least " +
			strconv.Itoa(r.PerSecond) + "/s) over " + msWords(r.WindowMS) + ", across instances — so the caller got the last failure as 503 retry_budget_exhausted", true
	case reason.UnsupportedParameter:
		return "skipped: the request sets " + r.Param + ", which the " + r.Protocol + " protocol cannot carry without changing the answer (see \"Request fields\" in the manual, /manual/fields.md)", true
	}
	return "", false
}

func capabilityWords(c string) string {
	switch c {
	case "thinking":
		return "thinking (reasoning)"
	case "vision":
		return "vision (image input)"
	case "tools":
		return "tools (function calling)"
	}
	return c
}

// msWords is a duration given in milliseconds, in ms or, from 10 s, in
// seconds.
func msWords(v int64) string {
	if v >= 10000 {
		return strconv.FormatFloat(float64(v)/1000, 'f', 1, 64) + " s"
	}
	return strconv.FormatInt(v, 10) + " ms"
}
