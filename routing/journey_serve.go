package routing

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/frontdoor"
	"switchyard/routing/limit"
	"switchyard/routing/record"
)

// chat serves a chat completion, streamed or not.
func (x *exchange) chat() {
	if !x.chatAdmitted() {
		return
	}
	c := &x.admitted
	if c.req.Stream {
		x.stream(c.plan, c.call, c.req, &c.dec)
		return
	}
	x.chatOnce(c.req, c.plan, c.call, &c.dec)
}

// admittedChat is a chat request past its limits: what its vendor call
// needs, kept on the exchange so that the frames on the stack through
// that call stay small.
type admittedChat struct {
	req  *adapter.ChatRequest
	plan *Plan
	call Call
	dec  limit.Decision
}

// chatAdmitted reads, parses and routes a chat request and passes it
// through the caller's limits (x.admitted); false when the caller has
// been answered.
//
//go:noinline (its frame must not stay on the stack through the vendor call; see walk.keys)
func (x *exchange) chatAdmitted() bool {
	body, ok := x.readBody()
	if !ok {
		return false
	}
	req, err := x.door().Parse(body)
	if err != nil {
		x.invalid(err)
		return false
	}
	if hr, ok := x.door().(frontdoor.HeaderReader); ok {
		hr.ReadHeaders(req, x.req.Header, x.req.Query)
	}
	x.rec.RequestedModel, x.rec.Stream = req.Model, req.Stream
	x.prepareLadder(req, body)
	deadline, err := x.deadline()
	if err != nil {
		x.invalid(&frontdoor.RequestError{Param: "X-Request-Timeout", Message: err.Error()})
		return false
	}
	if !x.idempotent(body) {
		return false
	}
	x.deadlineAt = deadline
	x.chatEstimate = chatEstimate{bodyLen: len(body), maxTokens: req.MaxTokens}
	p, ok := x.route(req.Model, req.WantsReasoning(), Needs{Kind: config.KindChat, Thinking: req.WantsReasoning(), Vision: req.NeedsVision(), Tools: req.NeedsTools(), Chat: req, Estimate: x})
	if !ok {
		return false
	}
	dec, ok := x.gate(p.Tokens)
	if !ok {
		return false
	}
	x.traceContent(p, body)
	x.admitted = admittedChat{req: req, plan: p, dec: dec,
		call: Call{Class: x.caller.PriorityClass, Deadline: deadline, Tokens: p.Tokens, Header: x.req.Header, span: x.span()}}
	return true
}

// chatOnce serves a chat request that is not streamed.
//
//go:noinline (chat stays small for streams; see walk.keys)
func (x *exchange) chatOnce(req *adapter.ChatRequest, p *Plan, call Call, dec *limit.Decision) {
	out, fail := x.j.Exec.Chat(x.ctx, p, call, req, &x.trail)
	if fail != nil {
		x.settle(*dec, 0, 0) // a failed call returns its token reservation; it still counted as a request
		x.failed(fail)
		return
	}
	d := out.Served.Deployment
	x.recordDrops(d, req)
	native := adapter.NativeFor(d.Wire(), req, d.Capabilities)
	answer, err := x.door().Answer(nil, req, out.Result, d.Model.Code, x.rec.RequestID, native)
	if err != nil {
		// The vendor's answer could not be put in the caller's shape.
		x.rec.Status, x.rec.ErrorClass, x.rec.ErrorCode = record.StatusUpstreamError, adapter.ClassServer, string(CodeUpstreamError)
		x.account(*dec, out.Served, out.Result.Usage, call.Tokens)
		x.routeHeaders(out.Served)
		x.writeError(http.StatusBadGateway, CodeUpstreamError, "the upstream's answer could not be translated: "+err.Error()+" (request "+x.rec.RequestID+")", nil)
		return
	}
	x.rec.Status = record.StatusOK
	x.account(*dec, out.Served, out.Result.Usage, call.Tokens)
	x.routeHeaders(out.Served)
	x.writeBody(http.StatusOK, "application/json", answer)
	x.traceAnswer(answer)
	if !native {
		x.keepAnswer(out.Result.Body, d.Model.Code, answer)
	}
}

// Stream is a streamed answer: SSE events, the first content chunk first.
// Nothing is answered until a deployment produced its first content chunk;
// afterwards chunks pass through one event at a time.
type Stream struct {
	x         *exchange
	committed *Committed
	req       *adapter.ChatRequest
	door      frontdoor.Stream
	chat      frontdoor.ChatStream // the chat door's (door points at it)
	dec       limit.Decision
	estimate  int64
	first     int // index into committed.First
	firstDone bool
	sawFirst  bool
	endErr    error
	degraded  bool // a degraded answer from memory: the call stays an upstream error
	over      bool
	ended     bool
	buf       []byte
}

// stream starts a streamed chat: the answer's status and headers are final
// once a deployment committed.
func (x *exchange) stream(p *Plan, call Call, req *adapter.ChatRequest, dec *limit.Decision) {
	committed, fail := x.j.Exec.ChatStream(x.ctx, p, call, req, &x.trail)
	if fail != nil {
		x.settle(*dec, 0, 0)
		x.failed(fail)
		return
	}
	x.releasePlan()
	x.routeHeaders(committed.Served)
	h := x.a.Header
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	x.a.Status = http.StatusOK
	x.rec.HTTPStatus = http.StatusOK
	if x.idem.capture != nil {
		x.idem.capture.status, x.idem.capture.ctype, x.idem.capture.stream = http.StatusOK, "text/event-stream", true
	}
	d := committed.Served.Deployment
	x.recordDrops(d, req)
	native := adapter.NativeFor(d.Wire(), req, d.Capabilities)
	if native {
		x.ladder.collect = nil // vendor-native events are not OpenAI chunks to keep
	}
	x.a.Stream = x.newStream(committed, req, *dec, call.Tokens, d.Model.Code, native)
}

// newStream wraps a committed stream in the request's front door; model is
// the one the caller is told served.
func (x *exchange) newStream(committed *Committed, req *adapter.ChatRequest, dec limit.Decision, estimate int64, model string, native bool) *Stream {
	s := &Stream{x: x, committed: committed, req: req, dec: dec, estimate: estimate}
	if _, ok := x.door().(frontdoor.ChatDoor); ok {
		// The chat door's stream lives in the Stream: no allocation of its own.
		s.chat = frontdoor.ChatStream{Model: model, Usage: req.IncludeUsage}
		s.door = &s.chat
	} else {
		s.door = x.door().Stream(req, model, x.rec.RequestID, native)
	}
	return s
}

// emit keeps the events the door rendered into the stream's reused buffer
// (and a copy for idempotency).
func (s *Stream) emit(b []byte) []byte {
	s.buf = b
	if c := s.x.idem.capture; c != nil {
		c.buf = append(c.buf, b...)
	}
	return b
}

// Buffered reports whether the next event is at hand: a chunk read before
// the stream committed (the last of those is its first content, which
// always renders). The sender may hold its flush until the last of them,
// so that the headers and the first content leave in one write.
func (s *Stream) Buffered() bool {
	return !s.over && !s.firstDone && s.first < len(s.committed.First)
}

// FlushBeforeWait makes the stream call flush before every read that may
// wait for the vendor (nil: no longer), and reports whether it will; the
// sender may then leave its writes unflushed until then, and events the
// vendor sent together leave in one write. When it reports false the
// sender flushes after every event (Buffered tells which it may skip).
func (s *Stream) FlushBeforeWait(flush func()) bool {
	w, ok := s.committed.stream.(adapter.WaitNotifier)
	return ok && w.FlushBeforeWait(flush)
}

// Next returns the next SSE event to send, valid until the next call;
// io.EOF after the last. A clean end sends [DONE]; an upstream failure after
// the first chunk sends an error event instead, never a clean [DONE].
func (s *Stream) Next() ([]byte, error) {
	if s.over {
		return nil, io.EOF
	}
	for s.endErr == nil {
		var ch adapter.Chunk
		if !s.firstDone && s.first < len(s.committed.First) {
			ch = s.committed.First[s.first]
			s.first++
		} else {
			s.firstDone = true
			next, err := s.committed.Next()
			if err != nil {
				s.endErr = err
				break
			}
			ch = next
		}
		if ch.Content && !s.sawFirst {
			s.x.rec.TTFCMS, s.sawFirst = s.x.intp(int(s.x.j.now().Sub(s.x.start).Milliseconds())), true
		}
		if c := s.x.ladder.collect; c != nil {
			c.add(ch.Data)
		}
		if b := s.door.Chunk(s.buf[:0], ch); len(b) > 0 {
			return s.emit(b), nil
		}
	}
	s.over = true
	s.committed.Close(s.endErr)
	x := s.x
	switch {
	case errors.Is(s.endErr, io.EOF):
		if !s.degraded {
			x.rec.Status = record.StatusOK
		}
		return s.emit(s.door.End(s.buf[:0], s.committed.Usage())), nil
	case shuttingDown(x.ctx):
		// Cut at the end of the shutdown grace: the caller gets an error
		// event, never a silent EOF.
		x.interrupted()
		return s.emit(s.door.Fail(s.buf[:0], http.StatusServiceUnavailable, string(CodeShuttingDown), msgShuttingDown)), nil
	case x.ctx.Err() != nil:
		return nil, io.EOF // the client went away; end() records it
	}
	// An upstream failure after the first chunk.
	class := adapter.ClassOf(s.endErr)
	msg := toldMidStream(s.endErr, s.committed.Served.Deployment.Model.Code).Text(x.rec.RequestID)
	code := policyCode(class)
	x.rec.Status, x.rec.ErrorClass, x.rec.ErrorCode = record.StatusUpstreamError, class, string(code)
	d := s.committed.Served.Deployment
	x.trail.add(Attempt{Model: d.Model.Code, DeploymentID: d.ID,
		Deployment: d.Label(), Provider: d.Provider.Name, Key: s.committed.Served.KeyFingerprint,
		Outcome: AttemptFailed, Class: class, Reason: "after the first chunk: " + s.endErr.Error(), LatencyMS: x.j.now().Sub(x.start).Milliseconds()})
	return s.emit(s.door.Fail(s.buf[:0], class.Policy().Status, string(code), msg)), nil
}

// end closes the stream when the answer is over or could not be sent, and
// accounts what was used.
func (s *Stream) end(sendErr error) {
	if s.ended {
		return
	}
	s.ended = true
	x := s.x
	wasOver := s.over
	if !s.over {
		// The caller stopped reading (or the sender gave up) mid-stream.
		s.over = true
		if sendErr == nil {
			sendErr = errors.New("stream abandoned")
		}
		s.committed.Close(sendErr)
	}
	// A stream that ended with [DONE] and was written whole is complete,
	// even if the client hung up right after reading it (SDKs close the
	// connection at [DONE]; the context may be cancelled before end runs).
	complete := wasOver && (x.rec.Status == record.StatusOK || s.degraded) && sendErr == nil
	if Stalled(sendErr) && x.rec.Status != record.StatusInterrupted {
		// The caller stopped reading and the write deadline passed: the
		// slot and the upstream are released now, not when it leaves.
		x.rec.Status, x.rec.ErrorClass, x.rec.ErrorCode = record.StatusClientCancelled, adapter.ClassCancelled, string(CodeClientStalled)
	} else if x.rec.Status != record.StatusInterrupted && !complete && (x.ctx.Err() != nil || (sendErr != nil && x.rec.Status != record.StatusOK)) {
		// The client went away: the upstream request was cancelled with
		// the context; record what was used so far.
		x.rec.Status, x.rec.ErrorClass, x.rec.ErrorCode, x.rec.HTTPStatus = record.StatusClientCancelled, adapter.ClassCancelled, string(CodeClientCancelled), 499
	}
	x.account(s.dec, s.committed.Served, s.committed.Usage(), s.estimate)
}

// embeddings serves an embedding request. The logic model's query or
// document prefix is applied when the request says which the inputs are:
// the body field "input_type" ("query" | "document") or X-Input-Type.
func (x *exchange) embeddings() {
	body, ok := x.readBody()
	if !ok {
		return
	}
	req, err := frontdoor.ParseEmbeddingRequest(body)
	if err != nil {
		x.invalid(err)
		return
	}
	inputType := req.InputType
	if h := strings.TrimSpace(x.req.InputType); inputType == "" && h != "" {
		if h != "query" && h != "document" {
			x.invalid(&frontdoor.RequestError{Param: "X-Input-Type", Message: "X-Input-Type must be query or document"})
			return
		}
		inputType = h
	}
	x.rec.RequestedModel = req.Model
	deadline, err := x.deadline()
	if err != nil {
		x.invalid(&frontdoor.RequestError{Param: "X-Request-Timeout", Message: err.Error()})
		return
	}
	if !x.idempotent(body) {
		return
	}
	x.deadlineAt = deadline
	var estimate int64
	for _, in := range req.Inputs {
		estimate += int64(len(in)/4 + 1)
	}
	p, ok := x.route(req.Model, false, Needs{Kind: config.KindEmbedding, Estimate: EstimateFunc(func(string) int64 { return estimate })})
	if !ok {
		return
	}
	dec, ok := x.gate(estimate)
	if !ok {
		return
	}
	out, fail := x.j.Exec.Embed(x.ctx, p, Call{Class: x.caller.PriorityClass, Deadline: deadline, Tokens: estimate, Header: x.req.Header, span: x.span()},
		EmbedRequest{Inputs: req.Inputs, Dimensions: req.Dimensions, InputType: inputType}, &x.trail)
	if fail != nil {
		x.settle(dec, 0, 0)
		x.failed(fail)
		return
	}
	x.rec.Status = record.StatusOK
	u := out.Usage
	if !u.Known {
		u = adapter.Usage{} // unknown stays unknown
	}
	x.account(dec, out.Served, u, estimate)
	x.routeHeaders(out.Served)
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	data := make([]item, len(out.Vectors))
	for i, v := range out.Vectors {
		data[i] = item{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			data[i].Embedding = floatsBase64(v)
		}
	}
	resp := map[string]any{"object": "list", "data": data, "model": out.Served.Deployment.Model.Code}
	if out.Usage.Known {
		resp["usage"] = map[string]int64{"prompt_tokens": out.Usage.Prompt, "total_tokens": out.Usage.Prompt}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		x.reject(http.StatusInternalServerError, CodeInternalError, "", "could not encode the embeddings: "+err.Error())
		return
	}
	x.writeBody(http.StatusOK, "application/json", b)
}

// floatsBase64 encodes float32s little-endian, as OpenAI's base64 format does.
func floatsBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// modelObject is one entry of GET /v1/models and the answer of
// GET /v1/models/{id}, in OpenAI's shape plus the kind Switchyard knows.
type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	Kind    string `json:"switchyard_kind"` // tier | chat | embedding
}

// available lists what this caller may put in the model field: the tiers,
// then the logic models of each kind.
func (x *exchange) available() []modelObject {
	var data []modelObject
	seen := map[string]bool{}
	for _, kind := range []config.Kind{config.KindChat, config.KindEmbedding} {
		for _, id := range Available(x.caller, kind) {
			if seen[id] {
				continue
			}
			seen[id] = true
			k := string(kind)
			if config.ValidTier(id) {
				k = "tier"
			}
			if sc := x.key.Scope; (k == "tier" && !sc.AllowsTier(config.TierName(id))) || (k != "tier" && !sc.AllowsModel(id)) {
				continue // outside the key's scope
			}
			data = append(data, modelObject{ID: id, Object: "model", OwnedBy: "switchyard", Kind: k})
		}
	}
	return data
}

// models lists the tiers and logic models this caller may use. A listing is
// a data-plane request too: one call-log row, no model fields.
func (x *exchange) models() {
	x.rec.Status = record.StatusOK
	x.a.Header.Set("X-Switchyard-Config-Version", strconv.FormatInt(x.rt.Version, 10))
	b, _ := json.Marshal(map[string]any{"object": "list", "data": x.available()})
	x.writeBody(http.StatusOK, "application/json", b)
}

// model answers GET /v1/models/{id} (the SDKs' models.retrieve): the entry
// of the listing with that id, or 404 model_not_found naming the others.
func (x *exchange) model() {
	x.rec.RequestedModel = x.req.ModelID
	all := x.available()
	for _, m := range all {
		if m.ID == x.req.ModelID {
			x.rec.Status = record.StatusOK
			x.a.Header.Set("X-Switchyard-Config-Version", strconv.FormatInt(x.rt.Version, 10))
			b, _ := json.Marshal(m)
			x.writeBody(http.StatusOK, "application/json", b)
			return
		}
	}
	ids := make([]string, len(all))
	for i, m := range all {
		ids[i] = m.ID
	}
	x.a.Header.Set("x-should-retry", "false")
	x.reject(http.StatusNotFound, CodeModelNotFound, adapter.ClassBadRequest, (&ModelNotFoundError{Requested: x.req.ModelID, Available: ids}).Error())
}
