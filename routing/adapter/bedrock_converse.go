package adapter

// A chat request → Bedrock's Converse API, and its answers back in OpenAI
// chat shapes. System and developer messages become system blocks; user
// text and images become text and image blocks; assistant tool calls
// toolUse blocks; tool messages toolResult blocks in a user turn (adjacent
// turns of one role merged, as Converse requires alternation). Usage and
// cache tokens come from the answer's usage or the stream's metadata event.

import (
	"context"

	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"switchyard/routing/config"
)

type converseRequest struct {
	Messages        []converseMessage  `json:"messages"`
	System          []converseBlock    `json:"system,omitempty"`
	InferenceConfig *converseInference `json:"inferenceConfig,omitempty"`
	ToolConfig      *converseTools     `json:"toolConfig,omitempty"`
}

type converseMessage struct {
	Role    string          `json:"role"`
	Content []converseBlock `json:"content"`
}

type converseBlock struct {
	Text       string              `json:"text,omitempty"`
	Image      *converseImage      `json:"image,omitempty"`
	ToolUse    *converseToolUse    `json:"toolUse,omitempty"`
	ToolResult *converseToolResult `json:"toolResult,omitempty"`
}

type converseImage struct {
	Format string `json:"format"`
	Source struct {
		Bytes string `json:"bytes"`
	} `json:"source"`
}

type converseToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type converseToolResult struct {
	ToolUseID string          `json:"toolUseId"`
	Content   []converseBlock `json:"content"`
}

type converseInference struct {
	MaxTokens     *int     `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

type converseTools struct {
	Tools      []converseTool  `json:"tools"`
	ToolChoice json.RawMessage `json:"toolChoice,omitempty"`
}

type converseTool struct {
	ToolSpec struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		InputSchema struct {
			JSON json.RawMessage `json:"json"`
		} `json:"inputSchema"`
	} `json:"toolSpec"`
}

// converseBody builds the Converse request for r.
func converseBody(r *ChatRequest, caps config.Capabilities) ([]byte, *Error) {
	if f := Judge(config.ProtocolBedrock, r, caps, false).Refused; f != "" {
		return nil, unsupportedField(f)
	}
	var req converseRequest
	for _, m := range r.Conversation() {
		if m.Role == "system" || m.Role == "developer" {
			req.System = append(req.System, converseBlock{Text: m.Text()})
			continue
		}
		role, blocks, e := converseTurn(m)
		if e != nil {
			return nil, e
		}
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == role {
			req.Messages[n-1].Content = append(req.Messages[n-1].Content, blocks...)
			continue
		}
		req.Messages = append(req.Messages, converseMessage{Role: role, Content: blocks})
	}
	if r.MaxTokens != nil || r.Temperature != nil || r.TopP != nil || len(r.Stop) > 0 {
		req.InferenceConfig = &converseInference{MaxTokens: r.MaxTokens, Temperature: r.Temperature, TopP: r.TopP, StopSequences: r.Stop}
	}
	tools, e := converseToolConfig(r)
	if e != nil {
		return nil, e
	}
	req.ToolConfig = tools
	b, err := json.Marshal(req)
	if err != nil {
		return nil, &Error{Class: ClassBadRequest, Message: "cannot encode the Converse request", Err: err}
	}
	return b, nil
}

// converseTurn is one non-system message as a Converse role and blocks.
func converseTurn(m Message) (string, []converseBlock, *Error) {
	if m.Role == "tool" {
		return "user", []converseBlock{{ToolResult: &converseToolResult{ToolUseID: m.ToolCallID, Content: []converseBlock{{Text: m.Text()}}}}}, nil
	}
	role := "user"
	if m.Role == "assistant" {
		role = "assistant"
	}
	var blocks []converseBlock
	for _, p := range m.Content {
		switch {
		case p.Type == "text" && p.Text != "":
			blocks = append(blocks, converseBlock{Text: p.Text})
		case p.Type == "image_url":
			img, e := converseImageOf(p.ImageURL)
			if e != nil {
				return "", nil, e
			}
			blocks = append(blocks, converseBlock{Image: img})
		}
	}
	for _, c := range m.ToolCalls {
		args := json.RawMessage(c.Arguments)
		if !json.Valid(args) {
			args = json.RawMessage(`{}`)
		}
		blocks = append(blocks, converseBlock{ToolUse: &converseToolUse{ToolUseID: c.ID, Name: c.Name, Input: args}})
	}
	if len(blocks) == 0 {
		blocks = []converseBlock{{Text: " "}} // Converse refuses an empty turn
	}
	return role, blocks, nil
}

// converseImageOf reads a data: URL; Converse takes no image URLs.
func converseImageOf(u string) (*converseImage, *Error) {
	rest, ok := strings.CutPrefix(u, "data:image/")
	format, data, ok2 := strings.Cut(rest, ";base64,")
	if !ok || !ok2 {
		return nil, &Error{Class: ClassBadRequest, Code: CodeUnsupportedParameter, Param: "messages",
			Message: "Bedrock takes images as data: URLs only (image/png, jpeg, gif or webp)"}
	}
	img := &converseImage{Format: format}
	img.Source.Bytes = data
	return img, nil
}

// converseToolConfig is the tools and tool choice; "none" sends no tools.
func converseToolConfig(r *ChatRequest) (*converseTools, *Error) {
	if len(r.Tools) == 0 {
		return nil, nil
	}
	tc, err := parseVendorToolChoice(r.ToolChoice)
	if err != nil {
		return nil, &Error{Class: ClassBadRequest, Code: CodeUnsupportedParameter, Param: "tool_choice", Message: err.Error()}
	}
	out := &converseTools{}
	switch tc.Mode {
	case "none":
		return nil, nil
	case "required":
		out.ToolChoice = json.RawMessage(`{"any":{}}`)
	case "function":
		name, _ := json.Marshal(tc.Name)
		out.ToolChoice = json.RawMessage(`{"tool":{"name":` + string(name) + `}}`)
	}
	for _, t := range r.Tools {
		var ct converseTool
		ct.ToolSpec.Name, ct.ToolSpec.Description = t.Name, t.Description
		ct.ToolSpec.InputSchema.JSON = t.Parameters
		if len(t.Parameters) == 0 {
			ct.ToolSpec.InputSchema.JSON = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, ct)
	}
	return out, nil
}

// converseUsage is Converse's usage object.
type converseUsage struct {
	InputTokens           *int64 `json:"inputTokens"`
	OutputTokens          *int64 `json:"outputTokens"`
	CacheReadInputTokens  *int64 `json:"cacheReadInputTokens"`
	CacheWriteInputTokens *int64 `json:"cacheWriteInputTokens"`
}

// usage normalizes it: prompt tokens include the cache's reads and writes.
func (u *converseUsage) usage() Usage {
	if u == nil || u.InputTokens == nil || u.OutputTokens == nil {
		return Usage{}
	}
	out := Usage{Prompt: *u.InputTokens, Completion: *u.OutputTokens, Known: true, CachedKnown: true}
	if u.CacheReadInputTokens != nil {
		out.Cached = *u.CacheReadInputTokens
		out.Prompt += out.Cached
	}
	if u.CacheWriteInputTokens != nil {
		out.CacheCreation = *u.CacheWriteInputTokens
		out.Prompt += out.CacheCreation
	}
	return out
}

// converseFinish maps a stopReason; the filter outcomes are errors.
func converseFinish(reason string) (string, *Error) {
	switch reason {
	case "tool_use":
		return "tool_calls", nil
	case "max_tokens", "model_context_window_exceeded":
		return "length", nil
	case "guardrail_intervened", "content_filtered":
		return "", &Error{Class: ClassContentFilter, Code: reason, Message: "Bedrock's content filter stopped the completion (" + reason + ")"}
	}
	return "stop", nil
}

// Chat sends a Converse request, or a Messages caller's request to a
// Claude model by the invoke path (bedrock_invoke.go).
func (b Bedrock) Chat(ctx context.Context, t Target, r *ChatRequest) (*ChatResult, error) {
	if bedrockInvokes(t, r) {
		return b.invokeChat(ctx, t, r)
	}
	body, e := converseBody(r, t.Capabilities)
	if e != nil {
		return nil, e
	}
	raw, status, err := b.bedrockPost(ctx, t, "converse", body)
	if err != nil {
		return nil, err
	}
	var out struct {
		Output struct {
			Message converseMessage `json:"message"`
		} `json:"output"`
		StopReason string         `json:"stopReason"`
		Usage      *converseUsage `json:"usage"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, openaiMalformed(status, "a Converse answer that is not JSON")
	}
	finish, fe := converseFinish(out.StopReason)
	msg := translatedMessage{Role: "assistant"}
	var text strings.Builder
	for _, blk := range out.Output.Message.Content {
		switch {
		case blk.ToolUse != nil:
			msg.ToolCalls = append(msg.ToolCalls, translatedToolCall{ID: blk.ToolUse.ToolUseID, Type: "function",
				Function: translatedFunction{Name: blk.ToolUse.Name, Arguments: string(blk.ToolUse.Input)}})
		default:
			text.WriteString(blk.Text)
		}
	}
	if text.Len() > 0 || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	u := out.Usage.usage()
	res := &ChatResult{Body: translatedCompletionBody(vendorCompletionID(), t.UpstreamModel, time.Now(), msg, finish, u), FinishReason: finish, Usage: u}
	if fe != nil {
		fe.Status = status
		return estimateResult(res, r), fe
	}
	return estimateResult(res, r), nil
}

// ChatStream opens a ConverseStream, read through the AWS event-stream
// framing with the SDK's decoder.
func (b Bedrock) ChatStream(ctx context.Context, t Target, r *ChatRequest) (Stream, error) {
	if bedrockInvokes(t, r) {
		return b.invokeStream(ctx, t, r)
	}
	body, e := converseBody(r, t.Capabilities)
	if e != nil {
		return nil, e
	}
	u := bedrockURL(t, "converse-stream")
	resp, cancel, e := openStream(ctx, t.APIKey, bedrockErrors, func(c context.Context) (*http.Response, *Error) {
		return b.bedrockSend(c, t, http.MethodPost, u, body, "application/vnd.amazon.eventstream")
	})
	if e != nil {
		return nil, e
	}
	return finishing(&converseStream{ctx: ctx, cancel: cancel, body: resp.Body, dec: eventstream.NewDecoder(),
		chunks: newTranslatedChunker(vendorCompletionID(), t.UpstreamModel, time.Now()), tools: map[int]int{}}, r), nil
}

var bedrockErrors = vendorErrors{classify: ClassifyBedrock, envelope: func(status int, body []byte) *Error {
	return ClassifyBedrock(status, nil, body)
}}

type converseStream struct {
	ctx     context.Context
	cancel  context.CancelFunc
	body    io.ReadCloser
	dec     *eventstream.Decoder
	buf     []byte
	chunks  translatedChunker
	pending []Chunk
	err     error
	started bool
	stopped bool        // messageStop arrived
	tools   map[int]int // content block index → tool call index
	usage   Usage
}

func (s *converseStream) Usage() Usage { return s.usage }

func (s *converseStream) Close() error { return closeStream(s.cancel, s.body) }

func (s *converseStream) Next() (Chunk, error) {
	for {
		if len(s.pending) > 0 {
			c := s.pending[0]
			s.pending = s.pending[1:]
			return c, nil
		}
		if s.err != nil {
			return Chunk{}, s.err
		}
		msg, err := s.dec.Decode(s.body, s.buf)
		switch {
		case errors.Is(err, io.EOF):
			if !s.stopped {
				s.err = vendorStreamEnded()
				continue
			}
			if s.usage.Known {
				s.emit(s.chunks.usage(s.usage))
			}
			s.err = io.EOF
		case err != nil:
			if s.ctx.Err() != nil || errors.Is(err, io.ErrUnexpectedEOF) {
				s.err = ClassifyTransport(s.ctx, err)
			} else {
				s.err = &Error{Class: ClassServer, Code: "malformed_event_stream", Message: "malformed Bedrock event stream", Err: err}
			}
		default:
			s.buf = msg.Payload[:0]
			s.handle(msg)
		}
	}
}

func (s *converseStream) emit(c Chunk) {
	if !s.started {
		s.started = true
		s.pending = append(s.pending, s.chunks.role())
	}
	s.pending = append(s.pending, c)
}

func eventHeader(m eventstream.Message, name string) string {
	if v := m.Headers.Get(name); v != nil {
		return v.String()
	}
	return ""
}

// converseEvent is the union of ConverseStream's event payloads.
type converseEvent struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Start             *struct {
		ToolUse *converseToolUse `json:"toolUse"`
	} `json:"start"`
	Delta *struct {
		Text             *string                 `json:"text"`
		ToolUse          *struct{ Input string } `json:"toolUse"`
		ReasoningContent *struct{ Text string }  `json:"reasoningContent"`
	} `json:"delta"`
	StopReason string         `json:"stopReason"`
	Usage      *converseUsage `json:"usage"`
}

func (s *converseStream) handle(m eventstream.Message) {
	if kind := eventHeader(m, ":message-type"); kind == "exception" || kind == "error" {
		name := eventHeader(m, ":exception-type")
		if name == "" {
			name = eventHeader(m, ":error-code")
		}
		s.err = ClassifyBedrock(0, http.Header{"X-Amzn-Errortype": {name}}, m.Payload)
		return
	}
	var ev converseEvent
	if err := json.Unmarshal(m.Payload, &ev); err != nil {
		s.err = &Error{Class: ClassServer, Code: "malformed_event_stream", Message: "malformed Bedrock stream event", Err: err}
		return
	}
	switch eventHeader(m, ":event-type") {
	case "contentBlockStart":
		if ev.Start != nil && ev.Start.ToolUse != nil {
			n := len(s.tools)
			s.tools[ev.ContentBlockIndex] = n
			s.emit(s.chunks.toolStart(n, ev.Start.ToolUse.ToolUseID, ev.Start.ToolUse.Name, ""))
		}
	case "contentBlockDelta":
		s.delta(ev)
	case "messageStop":
		finish, fe := converseFinish(ev.StopReason)
		if fe != nil {
			s.err = fe
			return
		}
		s.stopped = true
		s.emit(s.chunks.finish(finish))
	case "metadata":
		if u := ev.Usage.usage(); u.Known {
			s.usage = u
		}
	}
}

func (s *converseStream) delta(ev converseEvent) {
	d := ev.Delta
	switch {
	case d == nil:
	case d.Text != nil && *d.Text != "":
		s.emit(s.chunks.text(*d.Text))
	case d.ToolUse != nil:
		s.emit(s.chunks.toolArgs(s.tools[ev.ContentBlockIndex], d.ToolUse.Input))
	case d.ReasoningContent != nil && d.ReasoningContent.Text != "":
		s.emit(s.chunks.reasoning(d.ReasoningContent.Text))
	}
}
