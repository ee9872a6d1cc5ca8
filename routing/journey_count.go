package routing

import (
	"context"
	"net/http"
	"strconv"

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
// limit (it uses no tokens), but the instance gate applies.
func (x *exchange) countTokens() {
	body, ok := x.readBody()
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
	if !ok || !x.admit() {
		return
	}
	call := Call{Class: x.caller.PriorityClass, Deadline: deadline, Header: x.req.Header}
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
