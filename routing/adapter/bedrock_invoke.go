package adapter

// A Messages caller → a Claude model on Bedrock, natively, through
// Bedrock's Anthropic-native invoke path (see native.go): the caller's
// Messages body goes to POST /model/{id}/invoke (or
// invoke-with-response-stream) with anthropic_version "bedrock-2023-05-31"
// in place of model and stream, signed like Converse. The answer is
// Anthropic's own message; the stream is AWS event-stream framing whose
// chunk events carry, base64 in their bytes member, one Anthropic stream
// event each, passed on as that SSE event.

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"

	"switchyard/routing/config"
	"switchyard/routing/wire"
)

// BedrockAnthropicVersion is the anthropic_version Bedrock's invoke path
// takes in the body.
const BedrockAnthropicVersion = "bedrock-2023-05-31"

// bedrockInvokes reports whether r goes to t by the invoke path: a
// Messages caller and a Claude model.
func bedrockInvokes(t Target, r *ChatRequest) bool {
	return r.Native.Passes(config.WireOf(config.ProtocolBedrock, t.UpstreamModel), t.Capabilities)
}

// bedrockInvokeBody is the caller's Messages body with anthropic_version
// in place of model and stream (Bedrock takes neither in the body), and
// the caller's anthropic-beta header, when the provider passes it, as
// anthropic_beta unless the body names its own; every other member is
// copied byte for byte.
func bedrockInvokeBody(r *ChatRequest, beta string) ([]byte, error) {
	root := gjson.Parse(wire.View(r.Native.Body))
	if !root.IsObject() {
		return nil, vendorBadRequest("the Messages request body is not a JSON object")
	}
	out := make([]byte, 0, len(r.Native.Body)+64)
	out = append(out, `{"anthropic_version":"`+BedrockAnthropicVersion+`"`...)
	hasBeta := false
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model", "stream", "anthropic_version":
			return true
		case "anthropic_beta":
			hasBeta = true
		}
		out = append(out, ',')
		out = append(out, k.Raw...)
		out = append(out, ':')
		out = append(out, v.Raw...)
		return true
	})
	if !hasBeta && strings.TrimSpace(beta) != "" {
		out = append(out, `,"anthropic_beta":[`...)
		for i, b := range strings.Split(beta, ",") {
			if i > 0 {
				out = append(out, ',')
			}
			out = wire.AppendString(out, strings.TrimSpace(b))
		}
		out = append(out, ']')
	}
	return append(out, '}'), nil
}

// invokeChat sends the caller's Messages request to InvokeModel; the
// result's Body is Anthropic's answer as Bedrock returned it.
func (b Bedrock) invokeChat(ctx context.Context, t Target, r *ChatRequest) (*ChatResult, error) {
	body, err := bedrockInvokeBody(r, t.Header.Get("Anthropic-Beta"))
	if err != nil {
		return nil, err
	}
	raw, status, err := b.bedrockPost(ctx, t, "invoke", body)
	if err != nil {
		return nil, err
	}
	return anthropicNativeResult(raw, status, r)
}

// invokeStream opens InvokeModelWithResponseStream; its chunks are
// Anthropic's events, one whole SSE event each.
func (b Bedrock) invokeStream(ctx context.Context, t Target, r *ChatRequest) (Stream, error) {
	body, err := bedrockInvokeBody(r, t.Header.Get("Anthropic-Beta"))
	if err != nil {
		return nil, err
	}
	u := bedrockURL(t, "invoke-with-response-stream")
	resp, cancel, e := openStream(ctx, t.APIKey, bedrockErrors, func(c context.Context) (*http.Response, *Error) {
		return b.bedrockSend(c, t, http.MethodPost, u, body, "application/vnd.amazon.eventstream")
	})
	if e != nil {
		return nil, e
	}
	src := &bedrockChunks{ctx: ctx, body: resp.Body, dec: eventstream.NewDecoder()}
	return &anthropicNativeStream{ctx: ctx, cancel: cancel, body: resp.Body, sse: src, r: r}, nil
}

// bedrockChunks reads InvokeModelWithResponseStream's event stream: each
// chunk event's bytes member is one Anthropic stream event's JSON; an
// exception message ends the stream with its classified *Error.
type bedrockChunks struct {
	ctx  context.Context
	body io.Reader
	dec  *eventstream.Decoder
	buf  []byte
}

func (c *bedrockChunks) Next() (SSEEvent, error) {
	for {
		msg, err := c.dec.Decode(c.body, c.buf)
		switch {
		case errors.Is(err, io.EOF):
			return SSEEvent{}, io.EOF
		case err != nil && (c.ctx.Err() != nil || errors.Is(err, io.ErrUnexpectedEOF)):
			return SSEEvent{}, err
		case err != nil:
			return SSEEvent{}, &Error{Class: ClassServer, Code: "malformed_event_stream", Message: "malformed Bedrock event stream", Err: err}
		}
		c.buf = msg.Payload[:0]
		if kind := eventHeader(msg, ":message-type"); kind == "exception" || kind == "error" {
			name := eventHeader(msg, ":exception-type")
			if name == "" {
				name = eventHeader(msg, ":error-code")
			}
			return SSEEvent{}, ClassifyBedrock(0, http.Header{"X-Amzn-Errortype": {name}}, msg.Payload)
		}
		if eventHeader(msg, ":event-type") != "chunk" {
			continue
		}
		data, err := base64.StdEncoding.DecodeString(gjson.GetBytes(msg.Payload, "bytes").String())
		if err != nil || !gjson.ValidBytes(data) {
			return SSEEvent{}, &Error{Class: ClassServer, Code: "malformed_event_stream", Message: "a Bedrock chunk that is not a base64 JSON event", Err: err}
		}
		return SSEEvent{Event: gjson.GetBytes(data, "type").String(), Data: data}, nil
	}
}
