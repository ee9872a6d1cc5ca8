package fakevendor

// Bedrock's Anthropic-native invoke path: the body is Anthropic's Messages
// body with anthropic_version "bedrock-2023-05-31" and without model and
// stream (Bedrock refuses either); the answer is Anthropic's message, the
// stream Anthropic's events, each base64 in the bytes member of an AWS
// event-stream chunk event, message_stop carrying Bedrock's invocation
// metrics as the real service sends them.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// invokeIntent reads an invoke body; bad is Bedrock's refusal.
func invokeIntent(body []byte) (it intent, promptBytes, maxTokens int, bad string) {
	var req anthropicRequest
	var top struct {
		Version *string          `json:"anthropic_version"`
		Model   *json.RawMessage `json:"model"`
		Stream  *json.RawMessage `json:"stream"`
	}
	if json.Unmarshal(body, &req) != nil || json.Unmarshal(body, &top) != nil || len(req.Messages) == 0 {
		return it, 0, 0, "Malformed input request, please reformat your input and try again."
	}
	switch {
	case top.Version == nil:
		return it, 0, 0, "Malformed input request: #: required key [anthropic_version] not found, please reformat your input and try again."
	case *top.Version != "bedrock-2023-05-31":
		return it, 0, 0, "Invalid API version: " + *top.Version
	case top.Model != nil:
		return it, 0, 0, "Malformed input request: #: extraneous key [model] is not permitted, please reformat your input and try again."
	case top.Stream != nil:
		return it, 0, 0, "Malformed input request: #: extraneous key [stream] is not permitted, please reformat your input and try again."
	case req.MaxTokens <= 0:
		return it, 0, 0, "Malformed input request: #: required key [max_tokens] not found, please reformat your input and try again."
	}
	it, promptBytes = req.intent()
	return it, promptBytes, req.MaxTokens, ""
}

// invokeAnswer is Anthropic's message for rp.
func invokeAnswer(c *call, rp reply) []byte {
	out := anthropicMessage{Model: c.model, ID: "msg_bdrk_" + c.requestID(), Type: "message", Role: "assistant", Content: []anthropicBlock{}, StopReason: anthropicStop[rp.finish]}
	switch {
	case rp.tool != "":
		out.Content = append(out.Content, anthropicBlock{Type: "tool_use", ID: "toolu_bdrk_" + c.requestID(), Name: rp.tool, Input: json.RawMessage(rp.toolArgs())})
	case rp.finish == finishFilter:
		out.StopDetails = refusal
	default:
		out.Content = append(out.Content, anthropicBlock{Type: "text", Text: strp(rp.fullText())})
	}
	if !c.fault.NoUsage {
		out.Usage = anthropicUsageFor(rp, rp.completion())
	}
	b, _ := json.Marshal(out)
	return b
}

// invokeStream writes InvokeModelWithResponseStream's events: the
// Anthropic stream of rp, one chunk event per Anthropic event, or an
// exception event after ErrorAfterChunks content events.
func (s *Server) invokeStream(c *call, rp reply) {
	w := c.w
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-Requestid", "fake-bedrock-request")
	c.writeHeader(http.StatusOK)
	enc := eventstream.NewEncoder()
	var buf bytes.Buffer
	send := func(headers eventstream.Headers, payload []byte) bool {
		buf.Reset()
		if enc.Encode(&buf, eventstream.Message{Headers: headers, Payload: payload}) != nil {
			return false
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return true
	}
	// chunks sends each SSE event of sse as a chunk event.
	chunks := func(sse []byte) bool {
		for _, ev := range bytes.Split(bytes.TrimSpace(sse), []byte("\n\n")) {
			_, data, ok := bytes.Cut(ev, []byte("data: "))
			if !ok {
				continue
			}
			data, _, _ = bytes.Cut(data, []byte("\n"))
			if bytes.Equal(data, []byte(`{"type":"message_stop"}`)) {
				data = invocationMetrics(rp, c.fault.NoUsage)
			}
			payload, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString(data)})
			if !send(eventstream.Headers{
				{Name: ":event-type", Value: eventstream.StringValue("chunk")},
				{Name: ":content-type", Value: eventstream.StringValue("application/json")},
				{Name: ":message-type", Value: eventstream.StringValue("event")},
			}, payload) {
				return false
			}
		}
		return true
	}
	st := &anthropicStream{id: "msg_bdrk_" + c.requestID(), model: c.model, toolID: "toolu_bdrk_" + c.requestID(), rp: rp, noUsage: c.fault.NoUsage}
	if !sleep(c.r.Context(), c.fault.FirstChunkDelay) || !chunks(st.preamble(nil)) {
		return
	}
	n := max(rp.chunks, 1)
	if rp.finish == finishFilter {
		n = 0
	}
	for i := range n {
		if c.fault.ErrorAfterChunks > 0 && i == c.fault.ErrorAfterChunks {
			name := c.fault.ErrorCode
			if name == "" {
				name = "modelStreamErrorException"
			}
			msg, _ := json.Marshal(map[string]string{"message": "injected " + name + " after " + strconv.Itoa(i) + " chunks"})
			send(eventstream.Headers{
				{Name: ":exception-type", Value: eventstream.StringValue(name)},
				{Name: ":content-type", Value: eventstream.StringValue("application/json")},
				{Name: ":message-type", Value: eventstream.StringValue("exception")},
			}, msg)
			return
		}
		if i > 0 && !sleep(c.r.Context(), c.fault.InterChunkDelay) {
			return
		}
		if !chunks(st.content(nil, i, rp.text(i))) {
			return
		}
	}
	chunks(st.finish(nil))
}

// invocationMetrics is message_stop as Bedrock sends it.
func invocationMetrics(rp reply, noUsage bool) []byte {
	m := map[string]int{"invocationLatency": 12, "firstByteLatency": 5}
	if !noUsage {
		m["inputTokenCount"], m["outputTokenCount"] = rp.prompt-rp.cached, rp.completion()
		m["cacheReadInputTokenCount"], m["cacheWriteInputTokenCount"] = rp.cached, 0
	}
	b, _ := json.Marshal(map[string]any{"type": "message_stop", "amazon-bedrock-invocationMetrics": m})
	return b
}
