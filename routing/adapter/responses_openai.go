package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/routing/config"
	"switchyard/routing/wire"
)

// The Responses API to an OpenAI-protocol upstream that serves it (a
// deployment with the responses_api capability): the caller's body passes
// with the model replaced, stream ours and store false (the gateway stores
// nothing, and OpenAI would store by default), and the answer comes back as
// the vendor sent it — its Response object, or its events, which the
// gateway renumbers (ResponsesEvents.Relay).

// nativeResponses is the caller's Responses body when the target serves it
// natively (an OpenAI deployment declaring responses_api), else nil: the
// translation in r is sent as chat completions.
func nativeResponses(r *ChatRequest, t Target) []byte {
	if r == nil || r.Native == nil || r.Native.Door != DoorResponses || !r.Native.Passes(config.ProtocolOpenAI, t.Capabilities) {
		return nil
	}
	return r.Native.Body
}

// openaiResponsesBody is the caller's body with model replaced, stream set
// and store false; every other member is copied byte for byte.
func openaiResponsesBody(body []byte, model string, stream bool) ([]byte, *Error) {
	root := gjson.Parse(wire.View(body))
	if !root.IsObject() {
		return nil, &Error{Class: ClassBadRequest, Code: "invalid_request", Message: "the responses request body is not a JSON object"}
	}
	out := make([]byte, 0, len(body)+len(model)+48)
	out = append(out, `{"model":`...)
	out = wire.AppendString(out, model)
	if stream {
		out = append(out, `,"stream":true`...)
	} else {
		out = append(out, `,"stream":false`...)
	}
	out = append(out, `,"store":false`...)
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model", "stream", "store":
			return true
		case "stream_options":
			if !stream {
				return true // only allowed on a stream
			}
		}
		out = append(out, ',')
		out = append(out, k.Raw...)
		out = append(out, ':')
		out = append(out, v.Raw...)
		return true
	})
	return append(out, '}'), nil
}

// Response statuses of the Responses API.
const (
	responseCompleted  = "completed"
	responseIncomplete = "incomplete"
	responseFailed     = "failed"
)

// Responses sends a non-streamed Responses API request. The result's Body
// is the vendor's Response object; a failed response is a classified
// *Error, an incomplete one cut by the content filter a ClassContentFilter
// *Error together with the result (for its usage).
func (OpenAI) Responses(ctx context.Context, t Target, native []byte) (*ChatResult, error) {
	body, e := openaiResponsesBody(native, t.UpstreamModel, false)
	if e != nil {
		return nil, e
	}
	resp, e := openaiDo(ctx, t, http.MethodPost, openaiURL(t.BaseURL, "/responses"), body, "application/json")
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
	res, e := responsesResult(resp.StatusCode, raw)
	if e != nil {
		return res, scrubKey(e, t.APIKey)
	}
	return res, nil
}

// responsesResult reads a Response object: its status, finish and usage.
func responsesResult(status int, raw []byte) (*ChatResult, *Error) {
	if !json.Valid(raw) {
		return nil, openaiMalformed(status, "a response that is not JSON")
	}
	v := gjson.Parse(wire.View(raw))
	if !v.IsObject() {
		return nil, openaiMalformed(status, "a response that is not a JSON object")
	}
	if v.Get("object").Str != "response" {
		if v.Get("error").IsObject() {
			return nil, classifyErrorEnvelope(status, raw)
		}
		return nil, openaiMalformed(status, "something other than a Response object")
	}
	res := &ChatResult{Body: raw, Usage: responsesUsage(v.Get("usage"))}
	switch v.Get("status").Str {
	case responseCompleted:
		res.FinishReason = "stop"
		if responsesHasCall(v) {
			res.FinishReason = "tool_calls"
		}
	case responseIncomplete:
		res.FinishReason = "length"
		if v.Get("incomplete_details.reason").Str == "content_filter" {
			res.FinishReason = "content_filter"
			return res, openaiContentFiltered(status)
		}
	case responseFailed:
		return res, responsesFailure(status, v)
	default:
		return nil, openaiMalformed(status, "a response with status "+classifyClean(v.Get("status").Str, 64))
	}
	return res, nil
}

func responsesHasCall(v gjson.Result) bool {
	has := false
	v.Get("output").ForEach(func(_, it gjson.Result) bool {
		has = it.Get("type").Str == "function_call"
		return !has
	})
	return has
}

// responsesFailure classifies a failed response by its error object.
func responsesFailure(status int, resp gjson.Result) *Error {
	errv := resp.Get("error")
	if !errv.IsObject() {
		return &Error{Class: ClassServer, Status: status, Code: "response_failed", Message: "the upstream reported the response as failed"}
	}
	return classifyErrorEnvelope(status, []byte(`{"error":`+errv.Raw+`}`))
}

// responsesUsage normalizes a Responses usage object.
func responsesUsage(v gjson.Result) Usage {
	var u Usage
	if !v.IsObject() {
		return u
	}
	var in, out bool
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "input_tokens":
			u.Prompt, in = openaiCount(f)
		case "output_tokens":
			u.Completion, out = openaiCount(f)
		case "input_tokens_details":
			if c := f.Get("cached_tokens"); c.Exists() {
				u.Cached, u.CachedKnown = openaiCount(c)
			}
		case "output_tokens_details":
			if r := f.Get("reasoning_tokens"); r.Exists() {
				u.Reasoning, u.ReasoningKnown = openaiCount(r)
			}
		}
		return true
	})
	u.Known = in && out
	return u
}

// ResponsesStream opens a streamed Responses API request. Each Chunk's Data
// is one event's JSON as the vendor sent it; Content marks the first event
// that carries something the caller can use (text, reasoning, a refusal,
// a function call); the terminal response.completed or response.incomplete
// has FinishReason set and is followed by io.EOF. An error event or
// response.failed is a classified *Error.
func (OpenAI) ResponsesStream(ctx context.Context, t Target, native []byte) (Stream, error) {
	body, e := openaiResponsesBody(native, t.UpstreamModel, true)
	if e != nil {
		return nil, e
	}
	url := openaiURL(t.BaseURL, "/responses")
	resp, cancel, e := openStream(ctx, t.APIKey, openaiErrors, func(c context.Context) (*http.Response, *Error) {
		return openaiDo(c, t, http.MethodPost, url, body, "text/event-stream")
	})
	if e != nil {
		return nil, e
	}
	return &responsesStream{ctx: ctx, cancel: cancel, body: resp.Body, sse: NewSSEReader(resp.Body), key: t.APIKey, status: resp.StatusCode}, nil
}

// responsesStream reads a native Responses event stream. Next and Usage
// belong to one goroutine; Close may be called from another, and twice.
type responsesStream struct {
	ctx    context.Context
	cancel context.CancelFunc
	body   io.ReadCloser
	sse    *SSEReader
	key    string
	status int

	usage Usage
	err   error

	ended     atomic.Bool // the terminal event was read
	closed    atomic.Bool
	closeOnce sync.Once
}

func (s *responsesStream) Usage() Usage { return s.usage }

// FlushBeforeWait: every read of the vendor's body goes through the SSE
// reader (WaitNotifier).
func (s *responsesStream) FlushBeforeWait(flush func()) bool {
	s.sse.BeforeWait(flush)
	return true
}

func (s *responsesStream) Next() (Chunk, error) {
	if s.err != nil {
		return Chunk{}, s.err
	}
	if s.ended.Load() {
		s.err = io.EOF
		return Chunk{}, io.EOF
	}
	for {
		ev, err := s.sse.Next()
		if err != nil {
			s.err = s.readErr(err)
			return Chunk{}, s.err
		}
		if len(ev.Data) == 0 || string(ev.Data) == "[DONE]" {
			continue
		}
		c, e := s.event(ev)
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

func (s *responsesStream) readErr(err error) error {
	switch {
	case s.closed.Load():
		return &Error{Class: ClassCancelled, Code: "client_cancelled", Message: "the stream was closed", Err: err}
	case errors.Is(err, io.EOF):
		return &Error{Class: ClassNetwork, Status: s.status, Code: "stream_ended_early", Message: "stream ended early: the upstream closed it before the response completed"}
	case errors.Is(err, ErrSSELineTooLong):
		return &Error{Class: ClassServer, Status: s.status, Code: "malformed_response", Message: err.Error(), Err: err}
	}
	return scrubKey(ClassifyTransport(s.ctx, err), s.key)
}

// event reads one event: an error, a terminal event (usage, finish) or a
// content event.
func (s *responsesStream) event(ev SSEEvent) (Chunk, *Error) {
	if !json.Valid(ev.Data) {
		return Chunk{}, openaiMalformed(s.status, "a stream event that is not JSON")
	}
	c := Chunk{Data: bytes.Clone(ev.Data)}
	v := gjson.Parse(wire.View(c.Data))
	if !v.IsObject() {
		return Chunk{}, openaiMalformed(s.status, "a stream event that is not a JSON object")
	}
	typ := v.Get("type").Str
	switch typ {
	case "error":
		return Chunk{}, classifyErrorEnvelope(s.status, c.Data)
	case "response.failed":
		return Chunk{}, responsesFailure(s.status, v.Get("response"))
	case "response.completed", "response.incomplete":
		resp := v.Get("response")
		s.usage = responsesUsage(resp.Get("usage"))
		s.ended.Store(true)
		c.FinishReason = "stop"
		if typ == "response.incomplete" {
			c.FinishReason = "length"
			if resp.Get("incomplete_details.reason").Str == "content_filter" {
				c.FinishReason = "content_filter"
			}
		}
		return c, nil
	}
	c.Content = responsesEventHasContent(typ, v)
	return c, nil
}

// responsesEventHasContent reports whether a native event carries something
// a caller can use; lifecycle events (created, in_progress, an empty
// message item or content part being added) do not.
func responsesEventHasContent(typ string, v gjson.Result) bool {
	switch typ {
	case "response.output_text.delta", "response.refusal.delta", "response.reasoning_text.delta",
		"response.reasoning_summary_text.delta", "response.function_call_arguments.delta",
		"response.custom_tool_call_input.delta":
		return v.Get("delta").Str != ""
	case "response.output_item.added":
		// A function call (or a built-in tool call) is content as soon as
		// it is named, as a chat tool call is.
		switch v.Get("item.type").Str {
		case "message", "reasoning":
			return false
		}
		return true
	case "response.output_item.done":
		// A tool call sent whole; a message or reasoning item's text came
		// in its deltas (or the item is empty).
		switch v.Get("item.type").Str {
		case "message", "reasoning":
			return false
		}
		return true
	case "response.output_text.done":
		return v.Get("text").Str != "" // a text sent without deltas
	}
	return false
}

// Close aborts the upstream exchange (after the terminal event it lets the
// connection go back to the pool). Safe to call twice and concurrently
// with Next.
func (s *responsesStream) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.ended.Load() {
			t := time.AfterFunc(openaiDrainTimeout, s.cancel)
			_, _ = io.CopyN(io.Discard, s.body, openaiDrainLimit)
			t.Stop()
		}
		s.cancel()
		_ = s.body.Close()
	})
	return nil
}
