package routing

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/limit"
)

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
	if x.j.Watch != nil {
		x.j.Watch.Refused(string(dec.Reason))
	}
	x.a.Refusal = &Refusal{Limit: dec.Limit, Value: dec.Value, RetryAfter: dec.RetryAfter}
	x.reject(http.StatusTooManyRequests, codeOf(dec.Reason), limitClass(dec.Reason), refusalMessage(dec, x.caller.Name, x.tier))
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
