package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"switchyard/routing/config"
	"switchyard/routing/wire"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
)

// Chat sends a non-streamed completion. When the first choice finished with
// content_filter it returns the result (for its usage) together with a
// ClassContentFilter *Error.
func (o OpenAI) Chat(ctx context.Context, t Target, r *ChatRequest) (*ChatResult, error) {
	if rr := nativeResponses(r, t); rr != nil {
		return o.Responses(ctx, t, rr) // the Responses door, spoken natively
	}
	body, e := openaiChatBody(r, t.UpstreamModel, false, t.Capabilities, t.Quirks)
	if e != nil {
		return nil, e
	}
	resp, e := openaiDo(ctx, t, http.MethodPost, openaiURL(t.BaseURL, "/chat/completions"), body, "application/json")
	if e != nil {
		return nil, e
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, openaiFail(resp, t.APIKey)
	}
	raw, e := openaiRead(ctx, resp, openaiMaxChatBody)
	if e != nil {
		return nil, scrubKey(e, t.APIKey)
	}
	res, e := openaiChatResult(resp.StatusCode, raw)
	if e != nil {
		return estimateResult(res, r), scrubKey(e, t.APIKey)
	}
	return estimateResult(res, r), nil
}

func openaiChatResult(status int, raw []byte) (*ChatResult, *Error) {
	if !wire.ValidJSON(raw) {
		return nil, openaiMalformed(status, "a response that is not JSON")
	}
	v := gjson.Parse(wire.View(raw))
	if !v.IsObject() {
		return nil, openaiMalformed(status, "a response that is not a JSON object")
	}
	var choices, usage, errv, model gjson.Result
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "choices":
			choices = f
		case "usage":
			usage = f
		case "error":
			errv = f
		case "model":
			model = f
		}
		return true
	})
	if errv.Exists() && errv.Type != gjson.Null && !choices.Exists() {
		return nil, classifyErrorEnvelope(status, raw)
	}
	res := &ChatResult{Body: raw, Usage: openaiUsage(usage)}
	if model.Index > 0 && model.Index+len(model.Raw) <= len(raw) {
		res.ModelAt, res.ModelLen = model.Index, len(model.Raw)
	}
	n := 0
	if choices.IsArray() {
		choices.ForEach(func(_, c gjson.Result) bool {
			n++
			c.ForEach(func(k, f gjson.Result) bool {
				if k.Str == "finish_reason" && f.Type == gjson.String {
					res.FinishReason = openaiFinish(f.Str)
				}
				return true
			})
			return false // the first choice decides
		})
	}
	if n == 0 {
		return nil, openaiMalformed(status, "a completion without choices")
	}
	if res.FinishReason == "content_filter" {
		return res, openaiContentFiltered(status)
	}
	return res, nil
}

func openaiContentFiltered(status int) *Error {
	return &Error{Class: ClassContentFilter, Status: status, Code: "content_filter",
		Message: "the upstream's content filter stopped the completion"}
}

// openaiFinish interns the usual finish reasons.
func openaiFinish(s string) string {
	switch s {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "content_filter":
		return "content_filter"
	case "function_call":
		return "function_call"
	}
	return strings.Clone(s)
}

func openaiCount(v gjson.Result) (int64, bool) {
	if v.Type != gjson.Number || math.IsNaN(v.Num) {
		return 0, false
	}
	if v.Num < 0 {
		return 0, true
	}
	if v.Num > math.MaxInt64/2 {
		return math.MaxInt64 / 2, true
	}
	return int64(v.Num), true
}

// openaiUsage normalizes an OpenAI usage object. Cached prompt tokens come
// from prompt_tokens_details.cached_tokens, else DeepSeek's
// prompt_cache_hit_tokens or Moonshot's top-level cached_tokens.
func openaiUsage(v gjson.Result) Usage {
	var u Usage
	if !v.IsObject() {
		return u
	}
	var (
		hasPrompt, hasCompletion bool
		altCached                int64
		altCachedKnown           bool
	)
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "prompt_tokens":
			u.Prompt, hasPrompt = openaiCount(f)
		case "completion_tokens":
			u.Completion, hasCompletion = openaiCount(f)
		case "prompt_tokens_details":
			f.ForEach(func(k, f gjson.Result) bool {
				if k.Str == "cached_tokens" {
					u.Cached, u.CachedKnown = openaiCount(f)
				}
				return true
			})
		case "completion_tokens_details":
			f.ForEach(func(k, f gjson.Result) bool {
				if k.Str == "reasoning_tokens" {
					u.Reasoning, u.ReasoningKnown = openaiCount(f)
				}
				return true
			})
		case "prompt_cache_hit_tokens", "cached_tokens":
			altCached, altCachedKnown = openaiCount(f)
		}
		return true
	})
	if !u.CachedKnown && altCachedKnown {
		u.Cached, u.CachedKnown = altCached, true
	}
	u.Known = hasPrompt && hasCompletion
	return u
}

// openaiChatBody is the caller's body with model replaced and the stream
// settings ours: stream false, or stream true with
// stream_options.include_usage true (the caller's other stream_options kept).
// Every other member is copied byte for byte, except what the vendor's
// quirks rewrite: no stream_options at all (no_stream_options),
// max_completion_tokens sent as max_tokens (max_tokens), developer
// messages sent as system messages (no_developer_role).
func openaiChatBody(r *ChatRequest, model string, stream bool, caps config.Capabilities, quirks config.Quirks) ([]byte, *Error) {
	if r == nil {
		return nil, &Error{Class: ClassBadRequest, Code: "invalid_request", Message: "no chat request"}
	}
	if r.Native != nil { // a door's translation: refuse what the router should have skipped
		if f := Judge(config.ProtocolOpenAI, r, caps, false).Refused; f != "" {
			return nil, unsupportedField(f)
		}
	}
	// A door's deferred translation is written straight into out: the
	// translation is never held whole beside its copy.
	body, appendMessages, size := r.chatBodyParts()
	root := gjson.Parse(wire.View(body))
	if !root.IsObject() {
		return nil, &Error{Class: ClassBadRequest, Code: "invalid_request", Message: "the chat request body is not a JSON object"}
	}
	out := make([]byte, 0, len(body)+size+len(model)+64)
	out = append(out, `{"model":`...)
	out = wire.AppendString(out, model)
	if stream {
		out = append(out, `,"stream":true`...)
	} else {
		out = append(out, `,"stream":false`...)
	}
	var opts gjson.Result
	legacyMax := quirks.Has(config.QuirkMaxTokens) && root.Get("max_completion_tokens").Exists()
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model", "stream":
			return true
		case "stream_options":
			opts = v
			return true
		}
		if r.Native != nil && openaiDrops(k.Str, r, caps) {
			return true // a door's translation: the field policy leaves it out
		}
		key, val := k.Raw, v.Raw
		switch {
		case !legacyMax || k.Str != "max_completion_tokens" && k.Str != "max_tokens":
		case k.Str == "max_tokens":
			return true // max_completion_tokens, the newer name, says it
		default:
			key = `"max_tokens"`
		}
		out = append(out, ',')
		out = append(out, key...)
		out = append(out, ':')
		if k.Str == "messages" {
			out = openaiMessages(out, v, appendMessages, quirks)
			return true
		}
		out = append(out, val...)
		return true
	})
	if stream && !quirks.Has(config.QuirkNoStreamOptions) {
		out = append(out, `,"stream_options":{"include_usage":true`...)
		if opts.IsObject() {
			opts.ForEach(func(k, v gjson.Result) bool {
				if k.Str != "include_usage" {
					out = append(out, ',')
					out = append(out, k.Raw...)
					out = append(out, ':')
					out = append(out, v.Raw...)
				}
				return true
			})
		}
		out = append(out, '}')
	}
	if e := openaiEffort(r, caps); e != "" && !root.Get("reasoning_effort").Exists() {
		out = append(out, `,"reasoning_effort":`...)
		out = wire.AppendString(out, e)
	}
	return append(out, '}'), nil
}

// openaiMessages appends the messages array: the body's (v), or, for a
// door's deferred translation, the one appendMessages writes in its place;
// developer roles turned into system for vendors that know none.
func openaiMessages(out []byte, v gjson.Result, appendMessages func([]byte) []byte, quirks config.Quirks) []byte {
	noDeveloper := quirks.Has(config.QuirkNoDeveloperRole)
	if appendMessages == nil {
		if noDeveloper {
			return append(out, openaiNoDeveloper(v)...)
		}
		return append(out, v.Raw...)
	}
	at := len(out)
	out = appendMessages(out)
	if noDeveloper {
		written := wire.View(out[at:])
		if fixed, ok := openaiNoDeveloperInPlace(out[at:]); ok {
			out = out[:at+len(fixed)]
		} else if fixed := openaiNoDeveloper(gjson.Parse(written)); fixed != written {
			out = append(out[:at], fixed...) // fixed is a new string: out's bytes are free to overwrite
		}
	}
	return out
}

const developerRole, systemRole = `"developer"`, `"system"`

// openaiNoDeveloperInPlace turns every developer role of the messages
// array msgs into system in msgs' own bytes (the array shrinks), and
// reports false, msgs untouched, when a role is written otherwise than
// "developer" (escaped): openaiNoDeveloper then copies it.
func openaiNoDeveloperInPlace(msgs []byte) ([]byte, bool) {
	if !bytes.Contains(msgs, []byte("developer")) {
		return msgs, true
	}
	var at []int // where each developer role's value starts
	ok := true
	gjson.Parse(wire.View(msgs)).ForEach(func(_, m gjson.Result) bool {
		if role := m.Get("role"); m.IsObject() && role.Type == gjson.String && role.Str == "developer" {
			i := role.Index
			ok = i > 0 && i+len(developerRole) <= len(msgs) && string(msgs[i:i+len(developerRole)]) == developerRole
			at = append(at, i)
		}
		return ok
	})
	if !ok || len(at) == 0 {
		return msgs, ok
	}
	w := at[0]
	for k, i := range at {
		end := len(msgs)
		if k+1 < len(at) {
			end = at[k+1]
		}
		w += copy(msgs[w:], systemRole)
		w += copy(msgs[w:], msgs[i+len(developerRole):end])
	}
	return msgs[:w], true
}

// openaiNoDeveloper is a messages array with every developer message's
// role turned into system, for vendors that know no developer role.
func openaiNoDeveloper(msgs gjson.Result) string {
	if !msgs.IsArray() || !strings.Contains(msgs.Raw, "developer") {
		return msgs.Raw
	}
	out := make([]byte, 0, len(msgs.Raw))
	out = append(out, '[')
	n := 0
	msgs.ForEach(func(_, m gjson.Result) bool {
		if n > 0 {
			out = append(out, ',')
		}
		n++
		if role := m.Get("role"); m.IsObject() && role.Type == gjson.String && role.Str == "developer" {
			// role.Index counts from the start of the whole body, as m.Index does.
			if at := role.Index - m.Index; at > 0 && at+len(role.Raw) <= len(m.Raw) && m.Raw[at:at+len(role.Raw)] == role.Raw {
				out = append(out, m.Raw[:at]...)
				out = append(out, `"system"`...)
				out = append(out, m.Raw[at+len(role.Raw):]...)
				return true
			}
			var fields map[string]json.RawMessage // the member order is lost, the meaning kept
			if json.Unmarshal([]byte(m.Raw), &fields) == nil {
				fields["role"] = json.RawMessage(`"system"`)
				if b, err := json.Marshal(fields); err == nil {
					out = append(out, b...)
					return true
				}
			}
		}
		out = append(out, m.Raw...)
		return true
	})
	return string(append(out, ']'))
}

// openaiDrops reports whether the OpenAI table drops the chat field name of
// a translated request.
func openaiDrops(name string, r *ChatRequest, caps config.Capabilities) bool {
	rule, ok := fieldTables()[config.ProtocolOpenAI][name]
	return ok && rule.decide(r, caps) == Drop
}

// openaiEffort is the reasoning_effort a translated effort hint becomes on a
// deployment that reasons ("" when it gets none: the policy drops it).
func openaiEffort(r *ChatRequest, caps config.Capabilities) string {
	if r.Effort == "" || !caps.Thinking {
		return ""
	}
	switch r.Effort {
	case "low", "medium", "high", "minimal":
		return r.Effort
	}
	return "high" // max, xhigh and whatever comes next: the most OpenAI offers
}

// ChatStream opens a streamed completion. A non-2xx answer is classified
// before any chunk; after that the Stream reports problems from Next.
func (o OpenAI) ChatStream(ctx context.Context, t Target, r *ChatRequest) (Stream, error) {
	if rr := nativeResponses(r, t); rr != nil {
		return o.ResponsesStream(ctx, t, rr)
	}
	body, e := openaiChatBody(r, t.UpstreamModel, true, t.Capabilities, t.Quirks)
	if e != nil {
		return nil, e
	}
	url := openaiURL(t.BaseURL, "/chat/completions")
	resp, cancel, e := openStream(ctx, t.APIKey, openaiErrors, func(c context.Context) (*http.Response, *Error) {
		return openaiDo(c, t, http.MethodPost, url, body, "text/event-stream")
	})
	if e != nil {
		return nil, e
	}
	return finishing(&openaiStream{
		ctx:    ctx,
		cancel: cancel,
		body:   resp.Body,
		sse:    NewSSEReader(resp.Body),
		key:    t.APIKey,
		status: resp.StatusCode,
	}, r), nil
}

// openaiStream reads OpenAI chat.completion.chunk events. Next and Usage
// belong to one goroutine; Close may be called from another, and twice.
type openaiStream struct {
	ctx    context.Context
	cancel context.CancelFunc
	body   io.ReadCloser
	sse    *SSEReader
	key    string
	status int

	usage  Usage
	finish string // the last finish_reason seen
	err    error  // sticky: io.EOF or the *Error that ended the stream

	sawDone   atomic.Bool
	closed    atomic.Bool
	closeOnce sync.Once
}

func (s *openaiStream) Usage() Usage { return s.usage }

// Next returns the next chunk. A chunk whose finish_reason is content_filter
// comes with a ClassContentFilter *Error; the stream can still be read after
// it (the usage chunk follows), every other error ends it.
func (s *openaiStream) Next() (Chunk, error) {
	if s.err != nil {
		return Chunk{}, s.err
	}
	for {
		ev, err := s.sse.Next()
		if err != nil {
			s.err = s.readErr(err)
			return Chunk{}, s.err
		}
		if len(ev.Data) == 0 {
			continue
		}
		if string(ev.Data) == "[DONE]" {
			s.sawDone.Store(true)
			s.err = io.EOF
			return Chunk{}, io.EOF
		}
		c, e := s.chunk(ev)
		if e != nil {
			s.err = scrubKey(e, s.key)
			return Chunk{}, s.err
		}
		if c.FinishReason == "content_filter" {
			return c, openaiContentFiltered(s.status)
		}
		return c, nil
	}
}

// FlushBeforeWait: every read of the vendor's body goes through the SSE
// reader (WaitNotifier).
func (s *openaiStream) FlushBeforeWait(flush func()) bool {
	s.sse.BeforeWait(flush)
	return true
}

func (s *openaiStream) readErr(err error) error {
	switch {
	case s.closed.Load():
		return &Error{Class: ClassCancelled, Code: "client_cancelled", Message: "the stream was closed", Err: err}
	case errors.Is(err, io.EOF):
		if s.finish != "" {
			return io.EOF // no [DONE], but the completion had finished
		}
		return &Error{Class: ClassNetwork, Status: s.status, Code: "stream_ended_early", Message: "stream ended early: the upstream closed it before the completion finished"}
	case errors.Is(err, ErrSSELineTooLong):
		return &Error{Class: ClassServer, Status: s.status, Code: "malformed_response", Message: err.Error(), Err: err}
	}
	return scrubKey(ClassifyTransport(s.ctx, err), s.key)
}

// chunk turns one event into a Chunk, or into the *Error the upstream
// reported in it.
func (s *openaiStream) chunk(ev SSEEvent) (Chunk, *Error) {
	if !wire.ValidJSON(ev.Data) {
		return Chunk{}, openaiMalformed(s.status, "a stream event that is not JSON")
	}
	// SSEReader reuses its buffer; FinishReason may point into this copy.
	c := Chunk{Data: bytes.Clone(ev.Data)}
	v := gjson.Parse(wire.View(c.Data))
	if !v.IsObject() {
		return Chunk{}, openaiMalformed(s.status, "a stream event that is not a JSON object")
	}
	var choices, usage, errv gjson.Result
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "choices":
			choices = f
		case "usage":
			usage = f
		case "error":
			errv = f
		}
		return true
	})
	if ev.Event == "error" || errv.Exists() && errv.Type != gjson.Null {
		return Chunk{}, classifyErrorEnvelope(s.status, c.Data)
	}
	if usage.IsObject() {
		s.usage = openaiUsage(usage)
	}
	n := 0
	choices.ForEach(func(_, ch gjson.Result) bool {
		n++
		ch.ForEach(func(k, f gjson.Result) bool {
			switch k.Str {
			case "delta":
				if !c.Content && openaiDeltaHasContent(f) {
					c.Content = true
				}
			case "finish_reason":
				if f.Type == gjson.String && f.Str != "" && c.FinishReason == "" {
					c.FinishReason = openaiFinish(f.Str)
				}
			}
			return true
		})
		return true
	})
	if c.FinishReason != "" {
		s.finish = c.FinishReason
	}
	c.UsageOnly = n == 0 && usage.IsObject()
	return c, nil
}

// openaiDeltaHasContent reports whether a delta carries something a caller
// can use: text, reasoning text, a refusal or a tool call. A role-only delta
// (content "" or null) does not.
func openaiDeltaHasContent(d gjson.Result) bool {
	has := false
	d.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "content", "reasoning_content", "reasoning", "refusal":
			has = f.Type == gjson.String && f.Str != ""
		case "tool_calls":
			has = f.IsArray() && len(f.Raw) > 2 && strings.TrimSpace(f.Raw[1:len(f.Raw)-1]) != ""
		case "function_call":
			has = f.IsObject()
		}
		return !has
	})
	return has
}

// Close aborts the upstream exchange (or, after [DONE], lets its connection
// return to the pool). It is safe to call twice and concurrently with Next.
func (s *openaiStream) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.sawDone.Load() {
			t := time.AfterFunc(openaiDrainTimeout, s.cancel)
			_, _ = io.CopyN(io.Discard, s.body, openaiDrainLimit)
			t.Stop()
		}
		s.cancel()
		_ = s.body.Close()
	})
	return nil
}
