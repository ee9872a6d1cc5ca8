package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"switchyard/routing/wire"

	"github.com/tidwall/gjson"
)

// Native pass-through of the Messages front door to Anthropic-protocol
// deployments (see native.go): the caller's body goes out with only model
// (and stream) replaced, and the vendor's answer and events come back as
// they were, while usage, finish and errors are read as for a translated
// call.

// anthropicNativeBody is the caller's Messages body with model set to the
// upstream model and, when stream is not nil, stream set; every other
// member is copied byte for byte.
func anthropicNativeBody(r *ChatRequest, model string, stream *bool) ([]byte, error) {
	root := gjson.Parse(wire.View(r.Native.Body))
	if !root.IsObject() {
		return nil, vendorBadRequest("the Messages request body is not a JSON object")
	}
	out := make([]byte, 0, len(r.Native.Body)+len(model)+32)
	out = append(out, `{"model":`...)
	out = wire.AppendString(out, model)
	if stream != nil {
		if *stream {
			out = append(out, `,"stream":true`...)
		} else {
			out = append(out, `,"stream":false`...)
		}
	}
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			return true
		case "stream":
			if stream != nil {
				return true
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

// nativeChat sends the caller's Messages request as it is; the result's
// Body is Anthropic's own answer.
func (a Anthropic) nativeChat(ctx context.Context, t Target, r *ChatRequest) (*ChatResult, error) {
	no := false
	body, err := anthropicNativeBody(r, t.UpstreamModel, &no)
	if err == nil {
		body, err = vertexMessagesBody(t, body)
	}
	if err != nil {
		return nil, err
	}
	resp, err := vendorDo(ctx, t, http.MethodPost, anthropicMessagesURL(t, false, anthropicBetaQuery(r)), anthropicNativeHeaders(t), body, anthropicClassifier(t))
	if err != nil {
		return nil, err
	}
	raw, err := vendorReadBody(ctx, resp)
	if err != nil {
		return nil, err
	}
	return anthropicNativeResult(raw, resp.StatusCode, r)
}

// anthropicNativeResult reads a Messages answer that passes as it is: its
// finish and usage (estimated when the vendor reported none).
func anthropicNativeResult(raw []byte, status int, r *ChatRequest) (*ChatResult, error) {
	var ans anthropicResponse
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, &Error{Class: ClassServer, Status: status, Message: "malformed Anthropic response", Err: err}
	}
	if ans.Type == "error" && ans.Error != nil {
		return nil, anthropicStreamError(ans.Error)
	}
	res := &ChatResult{Body: raw, FinishReason: anthropicNativeFinish(ans.StopReason), Usage: ans.Usage.usage()}
	if !res.Usage.Known {
		var text strings.Builder
		for _, b := range ans.Content {
			text.WriteString(b.Text)
			text.WriteString(b.Thinking)
			text.Write(b.Input)
		}
		res.Usage = estimatedUsage(r, text.String())
	}
	return res, nil
}

// anthropicNativeFinish is the OpenAI finish reason of a stop_reason, for
// the record (a native answer keeps its own stop_reason, a refusal too).
func anthropicNativeFinish(stop string) string {
	switch stop {
	case "":
		return ""
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

// nativeStream opens the caller's Messages request as a stream; its chunks
// are Anthropic's events, one whole event each.
func (a Anthropic) nativeStream(ctx context.Context, t Target, r *ChatRequest) (Stream, error) {
	yes := true
	body, err := anthropicNativeBody(r, t.UpstreamModel, &yes)
	if err == nil {
		body, err = vertexMessagesBody(t, body)
	}
	if err != nil {
		return nil, err
	}
	h := anthropicNativeHeaders(t)
	h.Set("Accept", "text/event-stream")
	url := anthropicMessagesURL(t, true, anthropicBetaQuery(r))
	resp, cancel, e := openStream(ctx, t.APIKey, anthropicStreamErrors(t), func(c context.Context) (*http.Response, *Error) {
		return vendorSend(c, t, http.MethodPost, url, h, body)
	})
	if e != nil {
		return nil, e
	}
	return &anthropicNativeStream{ctx: ctx, cancel: cancel, body: resp.Body, sse: NewSSEReader(resp.Body), r: r}, nil
}

// anthropicNativeStream passes Anthropic's events on. Content is set on
// the first event that carries something for the caller (a text, thinking
// or tool-input delta, or a tool_use block), FinishReason on message_delta;
// an error event ends the stream with its classified *Error.
type anthropicNativeStream struct {
	ctx     context.Context
	cancel  context.CancelFunc
	body    io.ReadCloser
	sse     nativeEvents
	r       *ChatRequest
	usage   anthropicUsage
	finish  string
	stopped bool
	err     error
	text    strings.Builder // for an estimate when Anthropic reports no usage
	est     *Usage
}

func (s *anthropicNativeStream) Close() error { return closeStream(s.cancel, s.body) }

// FlushBeforeWait: an SSE body is read only through its reader; Bedrock's
// event stream does not say (WaitNotifier).
func (s *anthropicNativeStream) FlushBeforeWait(flush func()) bool {
	r, ok := s.sse.(*SSEReader)
	if ok {
		r.BeforeWait(flush)
	}
	return ok
}

func (s *anthropicNativeStream) Usage() Usage {
	u := s.usage.usage()
	if u.Known || !s.stopped {
		return u
	}
	if s.est == nil {
		est := estimatedUsage(s.r, s.text.String())
		s.est = &est
	}
	return *s.est
}

// nativeEvents is where a native Messages stream's events come from: an
// SSE body (*SSEReader), or Bedrock's event-stream chunks. An error that
// is an *Error is already classified.
type nativeEvents interface {
	Next() (SSEEvent, error)
}

var anthropicMessageStop = []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")

func (s *anthropicNativeStream) Next() (Chunk, error) {
	for {
		if s.err != nil {
			return Chunk{}, s.err
		}
		ev, err := s.sse.Next()
		if errors.Is(err, io.EOF) {
			if s.finish != "" && !s.stopped {
				// message_stop lost, but the answer was complete.
				s.stopped, s.err = true, io.EOF
				return Chunk{Data: anthropicMessageStop}, nil
			}
			if s.stopped {
				s.err = io.EOF
			} else {
				s.err = vendorStreamEnded()
			}
			continue
		}
		if err != nil {
			var ue *Error
			if !errors.As(err, &ue) {
				ue = ClassifyTransport(s.ctx, err)
			}
			s.err = ue
			continue
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		var e anthropicEvent
		if err := json.Unmarshal(data, &e); err != nil {
			s.err = &Error{Class: ClassServer, Message: "malformed Anthropic stream event", Err: err}
			continue
		}
		if e.Type == "" {
			e.Type = ev.Event
		}
		c := Chunk{}
		switch e.Type {
		case "error":
			obj := e.Error
			if obj == nil {
				obj = &anthropicErrorObject{Type: "api_error"}
			}
			s.err = anthropicStreamError(obj)
			continue
		case "message_start":
			if e.Message != nil {
				s.usage.merge(&e.Message.Usage)
			}
		case "content_block_start":
			if b := e.ContentBlock; b != nil {
				c.Content = b.Type != "text" && b.Type != "thinking" || b.Text != "" || b.Thinking != ""
			}
		case "content_block_delta":
			if d := e.Delta; d != nil {
				s.text.WriteString(d.Text)
				s.text.WriteString(d.Thinking)
				s.text.WriteString(d.PartialJSON)
				c.Content = d.Text != "" || d.Thinking != "" || d.PartialJSON != "" || (d.Type != "text_delta" && d.Type != "thinking_delta" && d.Type != "input_json_delta")
			}
		case "message_delta":
			s.usage.merge(e.Usage)
			if e.Delta != nil && e.Delta.StopReason != "" {
				s.finish = anthropicNativeFinish(e.Delta.StopReason)
				c.FinishReason = s.finish
			}
		case "message_stop":
			s.stopped = true
			s.err = io.EOF
		}
		name := e.Type
		c.Data = make([]byte, 0, len(name)+len(data)+16)
		c.Data = wire.AppendEvent(c.Data, name, data)
		return c, nil
	}
}

// TokenCounter is an adapter that asks its vendor to count a request's
// input tokens.
type TokenCounter interface {
	CountTokens(ctx context.Context, t Target, r *ChatRequest) (int64, error)
}

var _ TokenCounter = Anthropic{}

// CountTokens asks Anthropic's POST /v1/messages/count_tokens: the
// caller's count_tokens body (Native) with the upstream model.
func (Anthropic) CountTokens(ctx context.Context, t Target, r *ChatRequest) (int64, error) {
	if r.Native == nil || r.Native.Door != DoorMessages {
		return 0, vendorBadRequest("count_tokens takes a Messages request")
	}
	body, err := anthropicNativeBody(r, t.UpstreamModel, nil)
	if err != nil {
		return 0, err
	}
	resp, err := vendorDo(ctx, t, http.MethodPost, anthropicURL(t.BaseURL, "/v1/messages/count_tokens"), anthropicNativeHeaders(t), body, ClassifyAnthropic)
	if err != nil {
		return 0, err
	}
	raw, err := vendorReadBody(ctx, resp)
	if err != nil {
		return 0, err
	}
	n := gjson.GetBytes(raw, "input_tokens")
	if n.Type != gjson.Number {
		return 0, &Error{Class: ClassServer, Status: resp.StatusCode, Code: "malformed_response", Message: "the count_tokens answer has no input_tokens"}
	}
	return n.Int(), nil
}

// anthropicBetaQuery is "?beta=true" when the caller asked the Messages API
// for its beta surface so (the Anthropic SDKs' beta client, Claude Code);
// no other query parameter of the caller's reaches the vendor.
func anthropicBetaQuery(r *ChatRequest) string {
	if r.Native == nil || r.Native.Query == "" {
		return ""
	}
	if q, err := url.ParseQuery(r.Native.Query); err == nil && q.Get("beta") == "true" {
		return "?beta=true"
	}
	return ""
}

// anthropicNativeHeaders are the headers of a native Messages call: the
// caller's anthropic-version, when the provider passes it (an Anthropic
// provider does by default), else the one this build speaks. A translated
// call always sends the version its translation was written for.
func anthropicNativeHeaders(t Target) http.Header {
	h := anthropicHeaders(t)
	if v := t.Header.Get("Anthropic-Version"); v != "" && t.vertex == nil {
		h.Set("anthropic-version", v)
	}
	return h
}
