package routing

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/frontdoor"
	"switchyard/routing/limit"
	"switchyard/routing/record"
)

// The journey's hooks for the degradation ladder (see degraded.go): the
// step-down in route, the cached and static answers in failed, and what
// finish records (the SLA window, the answer kept for the cache).

// ladderState is the exchange's part of the ladder.
type ladderState struct {
	chat      *adapter.ChatRequest
	answerKey *[32]byte
	answer    []byte        // a served answer to keep in the cache
	collect   *streamAnswer // a streamed answer being collected for the cache
}

// stepDown applies StepDown to the request and reports it.
func (x *exchange) stepDown(t Target, reasoning bool) Target {
	t, steps := StepDown(x.caller, t, reasoning, x.j.SLA)
	if len(steps) > 0 {
		x.trail.Degraded = append(x.trail.Degraded, steps...)
		x.rec.Degraded = DegradedStepDown
		x.a.Header.Set(HeaderDegraded, DegradedStepDown)
	}
	return t
}

// StepDown moves a tier request whose tier's SLA is violated to the lighter
// tier its rule names (at most twice: deep → standard → fast), and says
// each step. Explicit logic-model requests and reasoning requests
// (hard-wired to deep) are never substituted. Test route calls it too.
func StepDown(caller *config.RCaller, t Target, reasoning bool, sla SLAWatch) (Target, []Degraded) {
	l := caller.Group.Ladder
	if l == nil || sla == nil || t.Explicit != nil || reasoning {
		return t, nil
	}
	var steps []Degraded
	for range 2 {
		r := l.StepDownFor(t.Tier)
		if r == nil || caller.Group.Tier(r.To) == nil {
			break
		}
		why, down := sla.SteppedDown(TierKey{Group: caller.Group.ID, Tier: t.Tier})
		if !down {
			break
		}
		steps = append(steps, Degraded{Level: DegradedStepDown, From: string(t.Tier), To: string(r.To),
			Calls: why.Calls, P95MS: why.P95.Milliseconds(), ErrorPercent: why.ErrorPercent, OverP95MS: why.OverP95.Milliseconds(), OverErrors: why.OverErrors})
		t.Tier = r.To
	}
	return t, steps
}

// prepareLadder notes a chat request for the ladder's answers: the
// request, and its answer-cache key when the group keeps answers and the
// request is cacheable.
func (x *exchange) prepareLadder(req *adapter.ChatRequest, body []byte) {
	l := x.caller.Group.Ladder
	if l == nil {
		return
	}
	x.ladder.chat = req
	if l.Cache == nil || x.j.Answers == nil || !Cacheable(req, x.req.Header) {
		return
	}
	scope := "c" + strconv.FormatInt(x.caller.ID, 10)
	if l.Cache.GroupScope {
		scope = "g" + strconv.FormatInt(x.caller.Group.ID, 10)
	}
	if k, ok := AnswerKey(scope, body); ok {
		x.ladder.answerKey = &k
		if req.Stream {
			x.ladder.collect = &streamAnswer{}
		}
	}
}

// keepAnswer marks a translated (OpenAI-shaped) answer for the cache:
// body is the adapter's chat.completion, answer what the caller got.
// Answers are kept as chat.completions whatever the front door, so any
// door can serve them later.
func (x *exchange) keepAnswer(body []byte, model string, answer []byte) {
	if x.ladder.answerKey == nil {
		return
	}
	if _, ok := x.door().(frontdoor.ChatDoor); !ok {
		answer = frontdoor.AppendAnswerModel(nil, body, model)
	}
	x.keep(answer)
}

// keep marks a served answer for the cache (not one that was itself
// degraded).
func (x *exchange) keep(body []byte) {
	if x.ladder.answerKey != nil && x.rec.Degraded == "" && len(body) <= MaxCachedAnswer {
		x.ladder.answer = body
	}
}

// ladderAnswers reports whether the ladder may answer for f: an upstream
// failure, an overloaded or unavailable chain — never the caller's own
// fault (invalid, filtered) or a caller that left.
func ladderAnswers(f *Failure) bool {
	if f.Class == adapter.ClassCancelled {
		return false
	}
	return f.Status >= 500 || f.Status == http.StatusTooManyRequests
}

// degrade answers a chat request nothing served from the ladder's last
// rungs: a cached answer, else the static answer. It reports whether it
// answered; the call stays an upstream error in the call log.
func (x *exchange) degrade(f *Failure) bool {
	l := x.caller.Group.Ladder
	if l == nil || x.ladder.chat == nil || !ladderAnswers(f) {
		return false
	}
	if k := x.ladder.answerKey; k != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(x.ctx), 100*time.Millisecond)
		body, age, ok, err := x.j.Answers.Get(ctx, x.caller.Group.ID, *k, l.Cache.TTL)
		cancel()
		if err != nil {
			x.j.Log.Warn("answer cache unavailable", "err", err, "request_id", x.rec.RequestID)
		}
		if ok {
			scope := config.CacheScopeCaller
			if l.Cache.GroupScope {
				scope = config.CacheScopeGroup
			}
			x.a.Header.Set("Age", strconv.FormatInt(int64(age/time.Second), 10))
			x.answerDegraded(DegradedCached, body, Degraded{Failure: f.Code, AgeMS: age.Milliseconds(), Scope: scope})
			return true
		}
	}
	if l.Static == "" {
		return false
	}
	x.answerDegraded(DegradedStatic, StaticAnswer(l.Static, x.rec.RequestID, x.j.now()).Body, Degraded{Failure: f.Code})
	return true
}

// answerDegraded sends body (a chat.completion) as the answer, streamed
// when the request asked for a stream.
func (x *exchange) answerDegraded(level string, body []byte, d Degraded) {
	d.Level = level
	x.trail.Degraded = append(x.trail.Degraded, d)
	x.rec.Degraded = level
	x.rec.Status = record.StatusUpstreamError // no model answered now
	x.ladder.collect = nil
	h := x.a.Header
	h.Set(HeaderDegraded, level)
	model := gjson.GetBytes(body, "model").String() // the static model, or the logic model that served it then
	if !x.ladder.chat.Stream {
		answer, err := x.door().Answer(nil, x.ladder.chat, &adapter.ChatResult{Body: body}, model, x.rec.RequestID, false)
		if err != nil {
			x.writeError(http.StatusBadGateway, CodeUpstreamError, "the degraded answer could not be put in this endpoint's shape: "+err.Error()+" (request "+x.rec.RequestID+")", nil)
			return
		}
		x.writeBody(http.StatusOK, "application/json", answer)
		return
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	x.a.Status, x.rec.HTTPStatus = http.StatusOK, http.StatusOK
	if x.idem.capture != nil {
		x.idem.capture.status, x.idem.capture.ctype, x.idem.capture.stream = http.StatusOK, "text/event-stream", true
	}
	var dec limit.Decision
	if x.gateDec.Allowed {
		dec = x.gateDec
	}
	committed := &Committed{First: AnswerChunks(body), stream: answerStream{}, ended: true}
	x.a.Stream = x.newStream(committed, x.ladder.chat, dec, 0, model, false)
	x.a.Stream.degraded = true
}

// finishLadder runs once the answer is on the wire: it keeps a served
// answer in the cache and feeds the tier's SLA window.
func (x *exchange) finishLadder() {
	if x.caller == nil {
		return
	}
	l := x.caller.Group.Ladder
	if l == nil {
		return
	}
	if x.ladder.collect != nil && x.rec.Status == record.StatusOK && x.rec.LogicModel != "" {
		x.keep(x.ladder.collect.body(x.rec.LogicModel))
	}
	if x.ladder.answer != nil && x.rec.Status == record.StatusOK {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(x.ctx), 100*time.Millisecond)
		if err := x.j.Answers.Put(ctx, x.caller.Group.ID, *x.ladder.answerKey, x.ladder.answer, l.Cache.TTL, l.Cache.MaxEntries); err != nil {
			x.j.Log.Warn("answer cache write failed", "err", err, "request_id", x.rec.RequestID)
		}
		cancel()
	}
	if x.j.SLA == nil || x.explicit || x.tier == "" {
		return
	}
	r := l.StepDownFor(config.TierName(x.tier))
	if r == nil {
		return
	}
	var failed bool
	switch x.rec.Status {
	case record.StatusOK:
	case record.StatusUpstreamError:
		failed = true
	default:
		return // refused, cancelled or cut: says nothing about the tier
	}
	latency := time.Duration(x.rec.LatencyMS) * time.Millisecond
	if x.rec.TTFCMS != nil {
		latency = time.Duration(*x.rec.TTFCMS) * time.Millisecond
	}
	x.j.SLA.Observe(TierKey{Group: x.caller.Group.ID, Tier: config.TierName(x.tier)}, r, latency, failed)
}
