package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/tidwall/gjson"

	"switchyard/handlers/httpx"
	"switchyard/routing"
	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/frontdoor"
	"switchyard/routing/reason"
	"switchyard/store/redis/keypool"
	"switchyard/store/redis/limits"
	"switchyard/views/components"
	"switchyard/views/pages/calllogs"
	"switchyard/views/pages/testroute"
)

// TestRoutePage shows the Test route form; with a caller chosen it also
// explains the route (steps 3–4 of the request journey, no vendor call).
// An htmx request gets only the explanation.
func (h *Handler) TestRoutePage(c echo.Context) error {
	p, rt := h.testRouteBase(c)
	if p.Problem == "" && c.QueryParam("caller") != "" {
		p.Explain = h.explainRoute(c, rt, p.Form)
	}
	if httpx.IsPartial(c) {
		if p.Problem != "" {
			return httpx.Render(c, http.StatusOK, testroute.ExplainView(&testroute.Explain{Problem: p.Problem}), nil)
		}
		return httpx.Render(c, http.StatusOK, testroute.ExplainView(p.Explain), nil)
	}
	return httpx.Render(c, http.StatusOK, testroute.View(p), nil)
}

// TestRouteSend sends a real, minimal request through the data plane as
// the chosen caller and shows the answer and its attempt trail (admin only:
// the console refuses viewers' POSTs).
func (h *Handler) TestRouteSend(c echo.Context) error {
	p, rt := h.testRouteBase(c)
	res := &testroute.SendResult{}
	switch {
	case p.Problem != "":
		res.Problem = p.Problem
	case p.Form.Draft:
		res.Problem = "A test request goes to the live version only: publish the draft first."
	case rt.Callers[p.Form.CallerID] == nil:
		res.Problem = "Caller is not in the live version: publish first, or pick another caller."
	default:
		path, body := testRequestBody(p.Form)
		out := h.Ops.TestRequest(c.Request().Context(), p.Form.CallerID, path, body)
		*res = sendResult(out, p.Form.Embedding)
		h.Log.Info("console test request", "by", httpx.CurrentPrincipal(c).Name, "caller_id", p.Form.CallerID,
			"model", p.Form.Model, "request_id", out.RequestID, "status", out.Status)
	}
	if httpx.IsPartial(c) {
		return httpx.Render(c, http.StatusOK, testroute.SendView(res), nil)
	}
	if p.Problem == "" {
		p.Explain = h.explainRoute(c, rt, p.Form)
	}
	p.Send = res
	return httpx.Render(c, http.StatusOK, testroute.View(p), nil)
}

// testRouteBase builds the page frame and the form, and says when this
// instance cannot explain anything.
func (h *Handler) testRouteBase(c echo.Context) (testroute.Page, *config.Runtime) {
	p := testroute.Page{Page: h.page(c, "Test route", "testroute"), Tiers: []string{"fast", "standard", "deep"}}
	p.Form = testroute.Form{
		Model:     strings.TrimSpace(c.FormValue("model")),
		Stream:    formBool(c, "stream"),
		Thinking:  formBool(c, "thinking"),
		Vision:    formBool(c, "vision"),
		Tools:     formBool(c, "tools"),
		Embedding: formBool(c, "embedding"),
		Message:   strings.TrimSpace(c.FormValue("message")),
		Door:      c.FormValue("door"),
		Body:      strings.TrimSpace(c.FormValue("body")),
		Draft:     c.FormValue("version") == testroute.VersionDraft,
	}
	if _, ok := testDoors[p.Form.Door]; !ok {
		p.Form.Door = testroute.DoorChat
	}
	p.Form.CallerID, _ = strconv.ParseInt(c.FormValue("caller"), 10, 64)
	if p.Form.Model == "" {
		p.Form.Model = string(config.TierStandard)
	}
	if h.Ops == nil {
		p.Problem = "The data plane is not running on this instance, so routes cannot be resolved here. Open Test route on an instance started with APP_ROLE=api or all."
		return p, nil
	}
	rt := h.Ops.Runtime()
	if p.Form.Draft {
		var err error
		if rt, err = h.draftRuntime(c.Request().Context()); err != nil {
			p.Problem = "The draft cannot be explained: " + err.Error() + ". Run the dry-run on the Versions page to see what to fix."
			return p, nil
		}
	}
	if rt == nil {
		p.Problem = "Nothing is published yet: the data plane serves no traffic and there is no route to explain. Dry-run and publish the draft first."
		return p, nil
	}
	for _, cl := range sortedCallers(rt) {
		label := cl.Name + " → " + cl.Group.Name
		if !cl.Enabled {
			label += " (disabled)"
		}
		p.Callers = append(p.Callers, testroute.Option{Value: strconv.FormatInt(cl.ID, 10), Label: label})
	}
	if p.Form.CallerID == 0 && len(p.Callers) > 0 {
		p.Form.CallerID, _ = strconv.ParseInt(p.Callers[0].Value, 10, 64)
	}
	p.Models = modelChoices(rt)
	if len(p.Callers) == 0 {
		p.Problem = "The live version (" + strconv.FormatInt(rt.Version, 10) + ") has no callers. Add a caller and publish."
	}
	return p, rt
}

// draftRuntime compiles the draft for routing only: key secrets are
// placeholders, since an explanation calls no vendor.
func (h *Handler) draftRuntime(ctx context.Context) (*config.Runtime, error) {
	snap, _, err := h.Drafts.Draft(ctx)
	if err != nil {
		return nil, err
	}
	return routing.CompileForReplay(snap)
}

// modelChoices suggests model names: the logic models, then the exact
// aliases of every group (a pattern's names are the operator's to type).
func modelChoices(rt *config.Runtime) []testroute.Option {
	codes := make([]string, 0, len(rt.Models))
	for code := range rt.Models {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	var out []testroute.Option
	for _, code := range codes {
		out = append(out, testroute.Option{Value: code, Label: "logic model (" + string(rt.Models[code].Kind) + ")"})
	}
	var aliases []testroute.Option
	for _, g := range rt.Groups {
		for _, a := range g.Aliases {
			if a.Exact && !slices.ContainsFunc(aliases, func(o testroute.Option) bool { return o.Value == a.Pattern }) {
				aliases = append(aliases, testroute.Option{Value: a.Pattern, Label: "model alias"})
			}
		}
	}
	slices.SortFunc(aliases, func(a, b testroute.Option) int { return strings.Compare(a.Value, b.Value) })
	return append(out, aliases...)
}

func sortedCallers(rt *config.Runtime) []*config.RCaller {
	out := make([]*config.RCaller, 0, len(rt.Callers))
	for _, c := range rt.Callers {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *config.RCaller) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// explainRoute resolves and plans exactly like the data plane (Resolve,
// then Build with the live state), reads the live state of every step and
// peeks at the caller's limits. Nothing is spent and no vendor is called.
func (h *Handler) explainRoute(c echo.Context, rt *config.Runtime, f testroute.Form) *testroute.Explain {
	ctx := c.Request().Context()
	x := &testroute.Explain{Form: f, Version: rt.Version, CSRF: httpx.CSRFToken(c), CanSend: httpx.CurrentPrincipal(c).Can().SendTest}
	caller := rt.Callers[f.CallerID]
	if caller == nil {
		x.Problem = fmt.Sprintf("Caller #%d is not in the live version %d: publish the draft to make it live, or pick another caller.", f.CallerID, rt.Version)
		return x
	}
	x.Caller, x.CallerEnabled, x.PriorityClass = caller.Name, caller.Enabled, string(caller.PriorityClass)
	x.Group, x.Tenant = caller.Group.Name, caller.Group.Tenant
	kind := config.KindChat
	if f.Embedding {
		kind = config.KindEmbedding
	}
	reasoning := f.Thinking && kind == config.KindChat
	// The request as the front door parses it: the body given, or one made
	// from the flags; its fields decide which deployments could carry it.
	var chat *adapter.ChatRequest
	if kind == config.KindChat {
		body := []byte(f.Body)
		if f.Body == "" {
			_, body = testRequestBody(f)
		}
		var perr error
		if chat, perr = testDoors[f.Door].parse(body); perr != nil {
			x.Problem = "A real request would be rejected with 400 before routing: " + perr.Error()
			return x
		}
		if f.Body != "" {
			f.Model, reasoning = chat.Model, chat.WantsReasoning()
			x.Form.Model = f.Model
		}
	}
	target, err := routing.Resolve(caller, f.Model, kind, reasoning)
	if err != nil {
		var nf *routing.ModelNotFoundError
		if errors.As(err, &nf) {
			x.Problem = "A real request would be rejected with 404 model_not_found: " + nf.Error() + "."
		} else {
			x.Problem = "The route could not be resolved: " + err.Error()
		}
		return x
	}
	x.Target, x.Explicit, x.Forced = target.Name(), target.Explicit != nil, target.Forced
	explainAlias(x, caller, target, f.Model)
	target, stepped := routing.StepDown(caller, target, reasoning, h.Ops.SLA())

	needs := routing.Needs{Kind: kind}
	if kind == config.KindChat {
		needs.Thinking, needs.Vision, needs.Tools, needs.Chat = reasoning, f.Vision || chat.NeedsVision(), f.Tools || chat.NeedsTools(), chat
	}
	p := routing.NewPlan()
	defer p.Release()
	routing.Build(p, caller, target, needs, h.Ops.State())
	if p.Tier != nil {
		x.Tier, x.Timeout, x.FirstChunk = string(p.Tier.Name), p.Tier.Timeout, p.Tier.FirstChunk
	}
	x.Pool = poolWords(caller.Group, p.Fallback, x.Tier)

	explainPlan(x, h.liveState(ctx), p, chat)
	x.Limits = h.peekLimits(ctx, caller, x.Tier)
	x.Resilience = h.explainResilience(ctx, caller.Group, x.Tier, stepped)
	return x
}

// explainAlias names, when the target came through a model alias, what the
// alias points at: a model, or else a tier.
func explainAlias(x *testroute.Explain, caller *config.RCaller, target routing.Target, model string) {
	if x.Alias = target.Alias; x.Alias != "" {
		if a := caller.Group.Alias(model); a != nil && a.Model != nil {
			x.AliasModel = a.Model.Code
		} else if a != nil {
			x.AliasTier = string(a.Tier)
		}
	}
}

// explainPlan lists the plan's steps with their live state and, for a chat
// request, how each deployment's wire would carry it; then the skipped
// candidates with the reason each was left out.
func explainPlan(x *testroute.Explain, live liveView, p *routing.Plan, chat *adapter.ChatRequest) {
	x.StateNote = strings.Join(live.notes, "; ")
	for i, s := range p.Steps {
		ps := live.step(i+1, s)
		if chat != nil {
			d := s.Deployment
			v := adapter.Judge(d.Wire(), chat, d.Capabilities, d.StrictFields)
			ps.Wire, ps.Dropped = "translated", v.Dropped
			if v.Native {
				ps.Wire = "native"
				if chat.Native == nil {
					ps.Wire = "" // chat completions to an OpenAI vendor: nothing to say
				}
			}
		}
		x.Steps = append(x.Steps, ps)
	}
	for _, s := range p.Skips {
		x.Skips = append(x.Skips, testroute.SkipView{Model: s.Model, Deployment: s.Deployment, Reason: string(s.Reason.Code),
			Words: calllogs.ExplainSkip(s.Reason), Fallback: s.Fallback})
	}
}

func poolWords(g, fallback *config.RGroup, tier string) string {
	switch {
	case g.Tenant == "":
		return "Route group " + g.Name + " is shared (no tenant)."
	case fallback != nil:
		return "Route group " + g.Name + " is the dedicated pool of tenant " + g.Tenant + ". Fallback policy: shared group " + fallback.Name +
			" — when nothing in " + g.Name + " can serve, the chain continues with " + fallback.Name + "'s " + tier + " tier (steps marked \"fallback group\")."
	}
	return "Route group " + g.Name + " is the dedicated pool of tenant " + g.Tenant + " with fallback policy none: it never falls back to the shared pool."
}

// liveView is the runtime state read once per explanation.
type liveView struct {
	breakers map[string]map[int64]breakerStatus
	loads    map[int64]int64
	keys     map[int64]keypool.KeyState
	notes    []string
	now      time.Time
}

type breakerStatus struct {
	State       string
	FailureRate float64
	Calls       int
}

func (h *Handler) liveState(ctx context.Context) liveView {
	v := liveView{now: time.Now(), breakers: map[string]map[int64]breakerStatus{}}
	if all, err := h.Ops.Breakers(ctx); err != nil {
		v.notes = append(v.notes, "breaker states of other instances unavailable: "+err.Error())
		h.Log.Warn("breaker states unavailable", "err", err)
	} else {
		for inst, m := range all {
			v.breakers[inst] = map[int64]breakerStatus{}
			for id, st := range m {
				v.breakers[inst][id] = breakerStatus{State: st.State.String(), FailureRate: st.FailureRate, Calls: st.Calls}
			}
		}
	}
	var err error
	if v.loads, err = h.Ops.Loads(ctx); err != nil {
		v.notes = append(v.notes, "shared load counters unavailable: "+err.Error())
		h.Log.Warn("load counters unavailable", "err", err)
	}
	if v.keys, err = h.Ops.KeyStates(ctx); err != nil {
		v.notes = append(v.notes, "shared key states unavailable: "+err.Error())
		h.Log.Warn("key states unavailable", "err", err)
	}
	return v
}

// instances lists the instances in a stable order.
func (v liveView) instances() []string {
	out := make([]string, 0, len(v.breakers))
	for inst := range v.breakers {
		out = append(out, inst)
	}
	slices.Sort(out)
	return out
}

// keyState classifies a key: active, cooling (until a future time) or
// quarantined.
func (v liveView) keyState(id int64) (keypool.KeyState, keypool.Status) {
	ks, ok := v.keys[id]
	if !ok {
		return ks, keypool.StatusActive
	}
	if ks.Status == keypool.StatusCooling && !ks.Until.IsZero() && !ks.Until.After(v.now) {
		return ks, keypool.StatusActive
	}
	if ks.Status == "" {
		return ks, keypool.StatusActive
	}
	return ks, ks.Status
}

func (v liveView) step(n int, s routing.Step) testroute.PlanStep {
	d := s.Deployment
	ps := testroute.PlanStep{N: n, Model: d.Model.Code, DeploymentID: d.ID, Deployment: d.Label(), Provider: d.Provider.Name,
		UpstreamModel: d.UpstreamModel, Weight: d.Weight, Fallback: s.Fallback, Load: v.loads[d.ID], MaxConc: d.MaxConcurrency}
	open := 0
	for _, inst := range v.instances() {
		st, ok := v.breakers[inst][d.ID]
		if !ok {
			continue
		}
		note := ""
		if st.Calls > 0 {
			note = fmt.Sprintf("%.0f%% failures over %d calls", st.FailureRate, st.Calls)
		}
		ps.Breakers = append(ps.Breakers, testroute.BreakerView{Instance: inst, State: st.State, Note: note})
		if st.State == "open" {
			open++
		}
	}
	for _, kid := range d.Provider.ActiveKey {
		ks, status := v.keyState(kid)
		fp := "key " + strconv.FormatInt(kid, 10)
		if k := d.Provider.Key(kid); k != nil {
			fp = k.Fingerprint
		}
		switch status {
		case keypool.StatusQuarantined:
			ps.KeysQuar++
			ps.KeyNotes = append(ps.KeyNotes, fp+" quarantined: "+components.KeyStateWords(string(ks.Status), ks.Fault, ks.Reason))
		case keypool.StatusCooling:
			ps.KeysCooling++
			ps.KeyNotes = append(ps.KeyNotes, fp+" cooling until "+ks.Until.UTC().Format("15:04:05")+" UTC")
		default:
			ps.KeysUsable++
		}
	}
	var warn []string
	if open > 0 {
		warn = append(warn, fmt.Sprintf("breaker open on %d of %d instance(s): %s", open, len(ps.Breakers), calllogs.ExplainSkip(reason.Of(reason.BreakerOpen))))
	}
	if ps.KeysUsable == 0 {
		switch {
		case ps.KeysQuar > 0 && ps.KeysCooling == 0:
			warn = append(warn, calllogs.ExplainSkip(keypool.SkipAllQuarantined))
		case ps.KeysCooling > 0 && ps.KeysQuar == 0:
			warn = append(warn, calllogs.ExplainSkip(keypool.SkipAllCooling))
		default:
			warn = append(warn, "skipped: no usable key — every key is cooling or quarantined")
		}
	}
	if d.MaxConcurrency > 0 && ps.Load >= int64(d.MaxConcurrency) {
		warn = append(warn, calllogs.ExplainSkip(reason.Reason{Code: reason.OverCapacity, Max: d.MaxConcurrency}))
	}
	ps.Warning = strings.Join(warn, "; ")
	return ps
}

// peekLimits evaluates the caller's limits for the tier as the data plane
// would, spending nothing.
func (h *Handler) peekLimits(ctx context.Context, caller *config.RCaller, tier string) testroute.Limits {
	var l testroute.Limits
	if tier == "" {
		l.Unavailable = "No tier was resolved, so no limit applies."
		return l
	}
	tl := caller.Limit(config.TierName(tier))
	req := limits.Request{CallerID: caller.ID, Tier: tier,
		Limits: limits.Limits{RPM: tl.RPM, TPM: tl.TPM, DailyTokens: tl.DailyTokens, MonthlyBudgetMicros: caller.BudgetMicros}}
	dec, err := h.Ops.PeekLimits(ctx, req)
	if err != nil {
		l.Unavailable = "The limit check could not run: " + err.Error()
		return l
	}
	l.Allowed, l.Local = dec.Allowed, dec.Local
	l.RPM, l.RPMRemaining, l.RPMReset = tl.RPM, dec.Requests.Remaining, dec.Requests.Reset
	l.TPM, l.TPMRemaining = tl.TPM, dec.Tokens.Remaining
	l.DailyQuota = tl.DailyTokens
	if caller.BudgetMicros > 0 {
		l.Budget = components.Money(caller.BudgetMicros, caller.BudgetCurrency)
	}
	if u, err := h.Ops.LimitUsage(ctx, caller.ID, tier); err == nil {
		l.DailyUsed = u.DailyTokens
		if l.Budget != "" {
			l.BudgetSpent = components.Money(u.MonthSpentMicros, caller.BudgetCurrency)
		}
	} else {
		h.Log.Warn("limit usage unavailable", "err", err)
	}
	switch {
	case dec.Allowed:
		l.Verdict = "would be admitted on tier " + tier + "."
	case dec.Reason == limits.ReasonQuotaExceeded:
		l.Verdict = "would be rejected: quota exceeded — the daily token quota of " + caller.Name + " on tier " + tier + " is used up (429 quota_exceeded)."
	case dec.Reason == limits.ReasonBudgetExceeded:
		l.Verdict = "would be rejected: budget exceeded — the monthly budget of " + caller.Name + " is spent (429 budget_exceeded)."
	default:
		l.Verdict = "would be rejected: rate limited — " + caller.Name + " reached its per-minute limit on tier " + tier
		if dec.RetryAfter > 0 {
			l.Verdict += " (retry after " + dec.RetryAfter.Round(time.Millisecond).String() + ")"
		}
		l.Verdict += " (429 rate_limited)."
	}
	return l
}

// testPNG is a 1×1 image for a vision test request.
const testPNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

// testRequestBody builds the minimal OpenAI body of a test request (never
// streamed: the console shows the whole answer).
func testRequestBody(f testroute.Form) (path string, body []byte) {
	msg := f.Message
	if msg == "" {
		msg = testroute.DefaultMessage
	}
	if f.Embedding {
		body, _ = json.Marshal(map[string]any{"model": f.Model, "input": msg})
		return "/v1/embeddings", body
	}
	if d := testDoors[f.Door]; d.body != nil {
		if f.Body != "" {
			return d.path, []byte(f.Body)
		}
		return d.path, d.body(f, msg)
	}
	if f.Body != "" {
		return "/v1/chat/completions", []byte(f.Body)
	}
	var content any = msg
	if f.Vision {
		content = []map[string]any{
			{"type": "text", "text": msg},
			{"type": "image_url", "image_url": map[string]string{"url": testPNG}},
		}
	}
	req := map[string]any{
		"model":    f.Model,
		"messages": []map[string]any{{"role": "user", "content": content}},
		"stream":   false,
	}
	if f.Thinking {
		req["reasoning_effort"] = "low"
	}
	if f.Tools {
		req["tools"] = []map[string]any{{"type": "function", "function": map[string]any{
			"name": "current_time", "description": "Returns the current time.",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{}},
		}}}
	}
	body, _ = json.Marshal(req)
	return "/v1/chat/completions", body
}

// testDoor is how Test route speaks one front door: its parser (the data
// plane's), its path, and the minimal test body made from the flags (nil:
// the chat-completions body below).
type testDoor struct {
	parse func([]byte) (*adapter.ChatRequest, error)
	path  string
	body  func(f testroute.Form, msg string) []byte
}

// testDoors are the front doors Test route explains (testroute.Doors).
var testDoors = map[string]testDoor{
	testroute.DoorChat:     {parse: frontdoor.ParseChatRequest, path: "/v1/chat/completions"},
	testroute.DoorMessages: {parse: frontdoor.ParseMessagesRequest, path: "/v1/messages", body: messagesTestBody},
	testroute.DoorResponses: {parse: func(b []byte) (*adapter.ChatRequest, error) {
		r, err := frontdoor.ParseResponsesRequest(b)
		if err != nil {
			return nil, err
		}
		return r.Chat, nil
	}, path: "/v1/responses", body: responsesTestBody},
}

// messagesTestBody is the minimal Messages body of a test request.
func messagesTestBody(f testroute.Form, msg string) []byte {
	content := []map[string]any{{"type": "text", "text": msg}}
	if f.Vision {
		data := strings.TrimPrefix(testPNG, "data:image/png;base64,")
		content = append(content, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": data}})
	}
	req := map[string]any{"model": f.Model, "max_tokens": 1024, "messages": []map[string]any{{"role": "user", "content": content}}}
	if f.Thinking {
		req["max_tokens"] = 4096
		req["thinking"] = map[string]any{"type": "enabled", "budget_tokens": 2048}
	}
	if f.Tools {
		req["tools"] = []map[string]any{{"name": "current_time", "description": "Returns the current time.",
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{}}}}
	}
	body, _ := json.Marshal(req)
	return body
}

// responsesTestBody is the minimal Responses body of a test request.
func responsesTestBody(f testroute.Form, msg string) []byte {
	content := []map[string]any{{"type": "input_text", "text": msg}}
	if f.Vision {
		content = append(content, map[string]any{"type": "input_image", "image_url": testPNG})
	}
	req := map[string]any{"model": f.Model, "input": []map[string]any{{"role": "user", "content": content}}}
	if f.Thinking {
		req["reasoning"] = map[string]any{"effort": "low"}
	}
	if f.Tools {
		req["tools"] = []map[string]any{{"type": "function", "name": "current_time", "description": "Returns the current time.",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{}}}}
	}
	body, _ := json.Marshal(req)
	return body
}

// sendResult reads a test request's answer for the page.
func sendResult(out TestResult, embedding bool) testroute.SendResult {
	r := testroute.SendResult{Status: out.Status, RequestID: out.RequestID, Steps: calllogs.Steps(out.Trail)}
	if out.Header != nil {
		r.Tier, r.Model, r.Provider = out.Header.Get("X-Switchyard-Tier"), out.Header.Get("X-Switchyard-Model"), out.Header.Get("X-Switchyard-Provider")
		r.Degraded = out.Header.Get(routing.HeaderDegraded)
	}
	r.DegradedWords = calllogs.DegradedWords(out.Trail)
	if out.Status >= 200 && out.Status < 300 {
		if r.Answer = answerText(out.Body, embedding); r.Answer == "" {
			r.Answer = truncateBytes(out.Body, 4000)
		}
		return r
	}
	r.Error = errorText(out)
	return r
}

// answerText is what a successful answer says, read by its shape (an
// embedding list, a Responses or Messages answer, else chat completions);
// "" when the body is none of them or says nothing.
func answerText(body []byte, embedding bool) string {
	switch {
	case embedding:
		return embeddingAnswer(body)
	case gjson.GetBytes(body, "object").Str == "response":
		return responsesAnswer(body)
	case gjson.GetBytes(body, "type").Str == "message":
		return messagesAnswer(body)
	default:
		return chatAnswer(body)
	}
}

// embeddingAnswer counts the embeddings and their dimensions.
func embeddingAnswer(body []byte) string {
	var e struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Data) > 0 {
		return fmt.Sprintf("%d embedding(s) of %d dimensions", len(e.Data), len(e.Data[0].Embedding))
	}
	return ""
}

// responsesAnswer is a Responses answer's output text, else its first
// function call.
func responsesAnswer(body []byte) string {
	var text strings.Builder
	for _, it := range gjson.GetBytes(body, "output").Array() {
		for _, part := range it.Get("content").Array() {
			if part.Get("type").Str == "output_text" {
				text.WriteString(part.Get("text").Str)
			}
		}
	}
	if text.Len() > 0 {
		return text.String()
	}
	if fc := gjson.GetBytes(body, `output.#(type=="function_call")`); fc.Exists() {
		return "(the model called a tool: " + fc.Raw + ")"
	}
	return ""
}

// messagesAnswer is a Messages answer's text, else its first tool call.
func messagesAnswer(body []byte) string {
	var text strings.Builder
	for _, b := range gjson.GetBytes(body, "content").Array() {
		if b.Get("type").Str == "text" {
			text.WriteString(b.Get("text").Str)
		}
	}
	if text.Len() > 0 {
		return text.String()
	}
	if tu := gjson.GetBytes(body, `content.#(type=="tool_use")`); tu.Exists() {
		return "(the model called a tool: " + tu.Raw + ")"
	}
	return ""
}

// chatAnswer is a chat completion's first message, else its first tool call.
func chatAnswer(body []byte) string {
	var cc struct {
		Choices []struct {
			Message struct {
				Content   string            `json:"content"`
				ToolCalls []json.RawMessage `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(body, &cc) != nil || len(cc.Choices) == 0 {
		return ""
	}
	m := cc.Choices[0].Message
	if m.Content == "" && len(m.ToolCalls) > 0 {
		return "(the model called a tool: " + string(m.ToolCalls[0]) + ")"
	}
	return m.Content
}

// errorText is a failed answer's error object, indented, else its body cut
// short, else the status's words.
func errorText(out TestResult) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(out.Body, &e) == nil && len(e.Error) > 0 {
		if pretty, err := json.MarshalIndent(json.RawMessage(e.Error), "", "  "); err == nil {
			return string(pretty)
		}
	}
	if t := truncateBytes(out.Body, 4000); t != "" {
		return t
	}
	return http.StatusText(out.Status)
}

func truncateBytes(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
