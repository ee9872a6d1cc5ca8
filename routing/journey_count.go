package routing

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/frontdoor"
	"switchyard/routing/limit"
	"switchyard/routing/record"
)

// countTokens answers POST /v1/messages/count_tokens: the input tokens of
// a Messages request as the deployment that would serve it counts them —
// Anthropic's own count (its count_tokens endpoint, failing over among the
// plan's Anthropic deployments) when the first deployment of the plan is
// Anthropic's, else the gateway's tokenizer (o200k_base, marked estimated).
// It is a data-plane request with its own call-log row; it spends no
// token limit (it uses no tokens), but it has a rate and a body bound of
// its own (CountTokensLimits), and the instance gate applies.
func (x *exchange) countTokens() {
	body, ok := x.readBodyUpTo(x.j.CountTokens.maxBody(x.j.MaxBody), "count_tokens ")
	if !ok {
		return
	}
	req, err := frontdoor.ParseCountTokensRequest(body)
	if err != nil {
		x.invalid(err)
		return
	}
	x.rec.RequestedModel = req.Model
	deadline, err := x.deadline()
	if err != nil {
		x.invalid(&frontdoor.RequestError{Param: "X-Request-Timeout", Message: err.Error()})
		return
	}
	x.deadlineAt = deadline
	p, ok := x.route(req.Model, req.WantsReasoning(), Needs{Kind: config.KindChat, Thinking: req.WantsReasoning(), Vision: req.NeedsVision(), Tools: req.NeedsTools(), Chat: req})
	if !ok || !x.countLimit() || !x.admit() {
		return
	}
	call := Call{Class: x.caller.PriorityClass, Deadline: deadline, Header: x.req.Header, span: x.span()}
	n, served, vendor, fail := x.j.Exec.CountTokens(x.ctx, p, call, req, &x.trail)
	if fail != nil {
		x.failed(fail)
		return
	}
	x.rec.Status = record.StatusOK
	x.account(limit.Decision{}, served, adapter.Usage{}, 0)
	x.routeHeaders(served)
	how := "vendor"
	if !vendor {
		how = "estimate"
	}
	x.a.Header.Set("X-Switchyard-Token-Count", how)
	x.writeBody(http.StatusOK, "application/json", []byte(`{"input_tokens":`+strconv.FormatInt(n, 10)+`}`))
}

// CountTokensLimits bound count_tokens. Counting costs the gateway CPU (its
// tokenizer) or the vendor a call, and spends no tokens, so the caller's
// token limits never stop it: it has a requests-per-minute limit of its own,
// PerRPM times the caller's RPM on the tier (no RPM: none), kept apart from
// the caller's chat requests, and a body bound of its own.
type CountTokensLimits struct {
	// PerRPM is the multiple of the caller's tier RPM that count_tokens
	// may use per minute (0: DefaultCountTokensPerRPM).
	PerRPM int64
	// MaxBody bounds a count_tokens body (0: DefaultCountTokensMaxBody;
	// never more than the data plane's MaxBody).
	MaxBody int64
}

// Defaults of CountTokensLimits.
const (
	DefaultCountTokensPerRPM  = 10
	DefaultCountTokensMaxBody = 2 << 20
)

// countTokensTier prefixes the tier of count_tokens' own limit keys.
const countTokensTier = "count_tokens:"

func (c CountTokensLimits) perRPM() int64 {
	if c.PerRPM <= 0 {
		return DefaultCountTokensPerRPM
	}
	return c.PerRPM
}

func (c CountTokensLimits) maxBody(dataPlane int64) int64 {
	n := c.MaxBody
	if n <= 0 {
		n = DefaultCountTokensMaxBody
	}
	if dataPlane > 0 {
		n = min(n, dataPlane)
	}
	return n
}

// countLimit checks count_tokens' own rate for the caller on the request's
// tier; false when it refused (answer set: 429 with Retry-After).
func (x *exchange) countLimit() bool {
	rpm := x.caller.Limit(config.TierName(x.tier)).RPM * x.j.CountTokens.perRPM()
	if x.j.Limits == nil || rpm <= 0 {
		return true
	}
	dec, err := x.j.Limits.Check(x.ctx, limit.Request{CallerID: x.caller.ID, Tier: countTokensTier + x.tier, Limits: limit.Limits{RPM: rpm}})
	if err != nil {
		x.j.Log.Error("count_tokens limit check failed; counting without it", "err", err, "request_id", x.rec.RequestID)
		return true
	}
	dec.SetHeaders(x.a.Header)
	if dec.Allowed {
		return true
	}
	if x.j.Watch != nil {
		x.j.Watch.Refused(string(limit.KindCountTokens))
	}
	x.a.Refusal = &Refusal{Limit: limit.KindCountTokens, Value: rpm, RetryAfter: dec.RetryAfter}
	x.reject(http.StatusTooManyRequests, codeOf(limit.ReasonRateLimited), limitClass(limit.ReasonRateLimited),
		"count_tokens rate limit of "+strconv.FormatInt(rpm, 10)+" requests per minute reached for caller "+x.caller.Name+" on tier "+x.tier+
			" (retry after "+dec.RetryAfter.Round(time.Millisecond).String()+")")
	return false
}

// CountTokens counts the input tokens of req for the plan: the vendor's
// count when the first step's adapter counts (adapter.TokenCounter) and
// takes the request natively, trying the plan's steps of that kind in
// order; otherwise the gateway's tokenizer for the first step, without a
// vendor call. vendor reports which it was.
func (e *Executor) CountTokens(ctx context.Context, p *Plan, call Call, req *adapter.ChatRequest, tr *Trail) (n int64, served Served, vendor bool, fail *Failure) {
	first := p.Steps[0].Deployment
	counts := func(d *config.RDeployment) (adapter.TokenCounter, bool) {
		tc, ok := e.Adapters[d.Provider.Protocol].(adapter.TokenCounter)
		return tc, ok && adapter.NativeFor(d.Wire(), req, d.Capabilities)
	}
	if _, ok := counts(first); !ok {
		tr.Skips = append(tr.Skips, p.Skips...)
		return adapter.EstimatePromptTokens(req), Served{Deployment: first}, false, nil
	}
	sub := &Plan{Target: p.Target, Group: p.Group, Tier: p.Tier, Fallback: p.Fallback, Skips: p.Skips}
	for _, s := range p.Steps {
		if _, ok := counts(s.Deployment); ok {
			sub.Steps = append(sub.Steps, s)
		}
	}
	served, finish, fail := e.run(ctx, sub, call, tr, func(actx context.Context, _ context.CancelFunc, d *config.RDeployment, t adapter.Target) error {
		tc, _ := counts(d)
		var err error
		n, err = tc.CountTokens(actx, t, req)
		return err
	})
	if fail != nil {
		return 0, Served{}, false, fail
	}
	finish.call(nil)
	return n, served, true, nil
}
