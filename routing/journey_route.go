package routing

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/limit"
)

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

// route resolves the request's model and builds its plan (the journey's
// route step). It answers itself (false) for an unknown model, and for a
// plan with nothing to try — before any limit is spent. finish releases
// the plan.
func (x *exchange) route(model string, reasoning bool, needs Needs) (*Plan, bool) {
	target, err := Resolve(x.caller, model, needs.Kind, reasoning)
	if err == nil {
		if !x.inScope(target) {
			return nil, false
		}
		x.rec.ModelAlias = target.Alias
		target = x.stepDown(target, reasoning)
	}
	if err != nil {
		var nf *ModelNotFoundError
		if errors.As(err, &nf) {
			x.a.Header.Set("x-should-retry", "false")
			x.reject(http.StatusNotFound, CodeModelNotFound, adapter.ClassBadRequest, nf.Error())
			return nil, false
		}
		x.reject(http.StatusInternalServerError, CodeInternalError, "", "could not resolve the model: "+err.Error())
		return nil, false
	}
	x.rec.Needs, x.rec.Fields = needs.Record()
	p := NewPlan()
	x.plan = p
	Build(p, x.caller, target, needs, &x.j.Exec.State)
	x.tier = string(p.Tier.Name)
	x.explicit = target.Explicit != nil
	x.rec.Tier = config.TierName(x.tier)
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
