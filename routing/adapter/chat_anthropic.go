package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"switchyard/routing/config"
	"time"
)

// Chat sends one non-streamed Messages call, or n concurrent ones when the
// caller asked for n choices (Anthropic answers one per call).
func (a Anthropic) Chat(ctx context.Context, t Target, r *ChatRequest) (*ChatResult, error) {
	if r.Native.Passes(config.ProtocolAnthropic, t.Capabilities) {
		return a.nativeChat(ctx, t, r)
	}
	body, respTool, err := a.build(t.UpstreamModel, r, false, t.Capabilities)
	if err != nil {
		return nil, err
	}
	n := max(r.N, 1)
	answers := make([]*anthropicAnswer, n)
	errs := make([]error, n)
	fanOut(ctx, n, func(ctx context.Context, i int) error {
		answers[i], errs[i] = a.call(ctx, t, body, respTool)
		return errs[i]
	})
	if err := firstError(errs); err != nil {
		return nil, err
	}
	return estimateResult(anthropicAssemble(answers, t.UpstreamModel, time.Now()), r), nil
}

// call makes one Messages call and translates its answer.
func (a Anthropic) call(ctx context.Context, t Target, body []byte, respTool string) (*anthropicAnswer, error) {
	body, err := vertexMessagesBody(t, body)
	if err != nil {
		return nil, err
	}
	resp, err := vendorDo(ctx, t, http.MethodPost, anthropicMessagesURL(t, false, ""), anthropicHeaders(t), body, anthropicClassifier(t))
	if err != nil {
		return nil, err
	}
	raw, err := vendorReadBody(ctx, resp)
	if err != nil {
		return nil, err
	}
	return anthropicParseAnswer(raw, respTool)
}

// ChatStream opens a streamed Messages call, or n of them merged into one
// stream of n choices.
func (a Anthropic) ChatStream(ctx context.Context, t Target, r *ChatRequest) (Stream, error) {
	if r.Native.Passes(config.ProtocolAnthropic, t.Capabilities) {
		return a.nativeStream(ctx, t, r)
	}
	body, respTool, err := a.build(t.UpstreamModel, r, true, t.Capabilities)
	if err == nil {
		body, err = vertexMessagesBody(t, body)
	}
	if err != nil {
		return nil, err
	}
	n := max(r.N, 1)
	id, now := vendorCompletionID(), time.Now()
	streams := make([]Stream, n)
	errs := make([]error, n)
	openAll(n, func(i int) {
		h := anthropicHeaders(t)
		h.Set("Accept", "text/event-stream")
		url := anthropicMessagesURL(t, true, "")
		resp, cancel, e := openStream(ctx, t.APIKey, anthropicStreamErrors(t), func(c context.Context) (*http.Response, *Error) {
			return vendorSend(c, t, http.MethodPost, url, h, body)
		})
		if e != nil {
			errs[i] = e
			return
		}
		s := newAnthropicStream(ctx, resp.Body, t.UpstreamModel, now)
		s.cancel = cancel
		s.respTool, s.chunks.index = respTool, i
		if n > 1 {
			s.chunks.id, s.fixedID = id, true
		}
		streams[i] = s
	})
	if err := firstError(errs); err != nil {
		for _, s := range streams {
			if s != nil {
				_ = s.Close()
			}
		}
		return nil, err
	}
	if n == 1 {
		return finishing(streams[0], r), nil
	}
	return finishing(newMergedStream(ctx, streams), r), nil
}

// --- request translation ---

type anthropicRequest struct {
	Model         string                  `json:"model"`
	MaxTokens     int                     `json:"max_tokens"`
	System        string                  `json:"system,omitempty"`
	Messages      []anthropicMessageParam `json:"messages"`
	StopSequences []string                `json:"stop_sequences,omitempty"`
	Temperature   *float64                `json:"temperature,omitempty"`
	TopP          *float64                `json:"top_p,omitempty"`
	TopK          *int                    `json:"top_k,omitempty"`
	Tools         []anthropicTool         `json:"tools,omitempty"`
	ToolChoice    *anthropicToolChoice    `json:"tool_choice,omitempty"`
	Thinking      *anthropicThinking      `json:"thinking,omitempty"`
	Metadata      *anthropicMetadata      `json:"metadata,omitempty"`
	OutputConfig  *anthropicOutputConfig  `json:"output_config,omitempty"`
	Stream        bool                    `json:"stream,omitempty"`
}

// anthropicOutputConfig carries native structured output:
// {"format":{"type":"json_schema","schema":{...}}}.
type anthropicOutputConfig struct {
	Format *anthropicOutputFormat `json:"format,omitempty"`
	Effort string                 `json:"effort,omitempty"`
}

type anthropicOutputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

type anthropicMessageParam struct {
	Role    string                  `json:"role"`
	Content []anthropicContentBlock `json:"content"`
}

type anthropicContentBlock struct {
	Type      string                `json:"type"`
	Text      string                `json:"text,omitempty"`
	Source    *anthropicImageSource `json:"source,omitempty"`
	ID        string                `json:"id,omitempty"`
	Name      string                `json:"name,omitempty"`
	Input     json.RawMessage       `json:"input,omitempty"`
	ToolUseID string                `json:"tool_use_id,omitempty"`
	Content   any                   `json:"content,omitempty"` // tool_result: string or blocks
}

type anthropicImageSource struct {
	Type      string `json:"type"` // base64 | url
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type anthropicTool struct {
	Type        string          `json:"type,omitempty"` // a server tool's type; empty for a custom tool
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// anthropicWebSearch is Anthropic's hosted web search server tool.
var anthropicWebSearch = anthropicTool{Type: "web_search_20250305", Name: "web_search"}

type anthropicToolChoice struct {
	Type                   string `json:"type"` // auto | any | none | tool
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type anthropicThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

type anthropicMetadata struct {
	UserID string `json:"user_id"`
}

// requestBody renders r as a Messages request for model on a deployment
// without declared capabilities.
func (a Anthropic) requestBody(model string, r *ChatRequest, stream bool) ([]byte, error) {
	b, _, err := a.build(model, r, stream, config.Capabilities{})
	return b, err
}

// build renders r as a Messages request for model on a deployment with caps.
// respTool names the tool that carries response_format when it is served
// through a forced tool call ("" otherwise).
func (a Anthropic) build(model string, r *ChatRequest, stream bool, caps config.Capabilities) (body []byte, respTool string, err error) {
	if f := Judge(config.ProtocolAnthropic, r, caps, false).Refused; f != "" {
		return nil, "", unsupportedField(f)
	}
	req, err := a.translate(model, r, stream)
	if err != nil {
		return nil, "", err
	}
	respTool = anthropicFormat(req, r, caps)
	b, err := json.Marshal(req)
	if err != nil {
		return nil, "", vendorBadRequest("cannot encode the Anthropic request: %v", err)
	}
	return b, respTool, nil
}

// anthropicNativeFormat reports whether response_format goes out as
// Anthropic's native structured output: a json_schema with a schema, on a
// deployment that declares the structured_output capability.
func anthropicNativeFormat(r *ChatRequest, caps config.Capabilities) bool {
	return caps.StructuredOutput && r.Format.Type == FormatJSONSchema && r.Format.Schema != nil
}

// anthropicFormat adds response_format to req: natively, or as a tool the
// model is forced to call, whose name it returns.
func anthropicFormat(req *anthropicRequest, r *ChatRequest, caps config.Capabilities) string {
	switch {
	case r.Format.Type != FormatJSONObject && r.Format.Type != FormatJSONSchema:
		return ""
	case anthropicNativeFormat(r, caps):
		if req.OutputConfig == nil {
			req.OutputConfig = &anthropicOutputConfig{}
		}
		req.OutputConfig.Format = &anthropicOutputFormat{Type: "json_schema", Schema: r.Format.Schema}
		return ""
	}
	name := anthropicToolName(r.Format.Name)
	schema := r.Format.Schema
	if schema == nil {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	req.Tools = append(req.Tools, anthropicTool{Name: name, Description: "Give your answer as this tool's input, a JSON value matching its schema.", InputSchema: schema})
	req.ToolChoice = &anthropicToolChoice{Type: "tool", Name: name}
	return name
}

// anthropicToolName is a valid tool name (^[a-zA-Z0-9_-]{1,64}$) for the
// response format's tool.
func anthropicToolName(s string) string {
	b := make([]byte, 0, min(len(s), 64))
	for i := 0; i < len(s) && len(b) < 64; i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b = append(b, c)
		}
	}
	if len(b) == 0 {
		return "json_response"
	}
	return string(b)
}

// translate writes a chat request as a Messages request: the
// conversation, the sampling settings, the tools, thinking and metadata.
func (a Anthropic) translate(model string, r *ChatRequest, stream bool) (*anthropicRequest, error) {
	req := &anthropicRequest{Model: model, Stream: stream, StopSequences: r.Stop}
	var err error
	if req.Messages, req.System, err = anthropicConversation(r); err != nil {
		return nil, err
	}

	req.MaxTokens = a.defaultMaxTokens()
	if r.MaxTokens != nil && *r.MaxTokens > 0 {
		req.MaxTokens = *r.MaxTokens
	}
	// The field table refuses what Anthropic would not honour (temperature
	// above 1, sampling changes and forced tools under thinking), so what
	// is set here goes out as asked.
	req.Temperature = r.Temperature
	req.TopP = r.TopP
	if r.TopP != nil && *r.TopP == 1 && r.Temperature != nil {
		// top_p 1 is OpenAI's default and asks for nothing; newer Claude
		// models refuse temperature and top_p together.
		req.TopP = nil
	}

	if err := anthropicTools(req, r); err != nil {
		return nil, err
	}

	req.TopK = r.TopK
	if r.Set.Has("web_search_options") {
		req.Tools = append(req.Tools, anthropicWebSearch) // the policy refuses it without the capability
	}
	if r.Effort != "" {
		req.OutputConfig = &anthropicOutputConfig{Effort: r.Effort}
	}
	if r.Adaptive() {
		req.Thinking = &anthropicThinking{Type: ThinkingAdaptive}
		req.Temperature = nil
	}
	if r.WantsReasoning() {
		budget := max(r.ThinkingBudget(), anthropicMinThinking)
		req.Thinking = &anthropicThinking{Type: "enabled", BudgetTokens: budget}
		if req.MaxTokens <= budget {
			req.MaxTokens = budget + a.defaultMaxTokens()
		}
		// Only temperature 1, Anthropic's default, gets here with thinking.
		req.Temperature = nil
	}
	switch {
	case r.SafetyIdentifier != "":
		req.Metadata = &anthropicMetadata{UserID: r.SafetyIdentifier}
	case r.User != "":
		req.Metadata = &anthropicMetadata{UserID: r.User}
	}
	return req, nil
}

// anthropicConversation writes the messages as alternating Messages
// turns, tool results first in a user turn and an assistant prefill
// trimmed; the system messages are joined into the system prompt.
func anthropicConversation(r *ChatRequest) ([]anthropicMessageParam, string, error) {
	var system []string
	var msgs []anthropicMessageParam
	for i, m := range r.Conversation() {
		var role string
		var blocks []anthropicContentBlock
		var err error
		switch m.Role {
		case "system", "developer":
			if s := m.Text(); s != "" {
				system = append(system, s)
			}
			continue
		case "user":
			role = "user"
			blocks, err = anthropicParts(m.Content)
		case "assistant":
			role = "assistant"
			blocks, err = anthropicAssistant(m)
		case "tool":
			role = "user"
			blocks, err = anthropicToolResult(m)
		default:
			return nil, "", vendorBadRequest("messages[%d]: role %q is not supported", i, m.Role)
		}
		if err != nil {
			return nil, "", err
		}
		if len(blocks) == 0 {
			continue // Anthropic rejects empty content
		}
		// Anthropic requires alternating roles: merge a run of one role.
		if n := len(msgs); n > 0 && msgs[n-1].Role == role {
			msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
			continue
		}
		msgs = append(msgs, anthropicMessageParam{Role: role, Content: blocks})
	}
	for i := range msgs {
		if msgs[i].Role == "user" {
			anthropicToolResultsFirst(msgs[i].Content)
		}
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
		anthropicTrimPrefill(&msgs[n-1])
		if len(msgs[n-1].Content) == 0 {
			msgs = msgs[:n-1]
		}
	}
	if msgs == nil {
		msgs = []anthropicMessageParam{}
	}
	return msgs, strings.Join(system, "\n\n"), nil
}

// anthropicTools declares the caller's functions, its tool choice and
// whether tools may run in parallel.
func anthropicTools(req *anthropicRequest, r *ChatRequest) error {
	if len(r.Tools) == 0 {
		return nil
	}
	for _, tl := range r.Tools {
		req.Tools = append(req.Tools, anthropicTool{
			Name: tl.Name, Description: tl.Description, InputSchema: vendorToolSchema(tl.Parameters),
		})
	}
	tc, err := parseVendorToolChoice(r.ToolChoice)
	if err != nil {
		return err
	}
	switch tc.Mode {
	case "auto":
		req.ToolChoice = &anthropicToolChoice{Type: "auto"}
	case "required":
		req.ToolChoice = &anthropicToolChoice{Type: "any"}
	case "none":
		req.ToolChoice = &anthropicToolChoice{Type: "none"}
	case "function":
		req.ToolChoice = &anthropicToolChoice{Type: "tool", Name: tc.Name}
	}
	if r.ParallelToolCalls != nil && !*r.ParallelToolCalls {
		if req.ToolChoice == nil {
			req.ToolChoice = &anthropicToolChoice{Type: "auto"}
		}
		if req.ToolChoice.Type != "none" {
			req.ToolChoice.DisableParallelToolUse = true
		}
	}
	return nil
}

// anthropicParts translates user content: text and image parts.
func anthropicParts(parts []ContentPart) ([]anthropicContentBlock, error) {
	var out []anthropicContentBlock
	for _, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != "" { // Anthropic rejects empty text blocks
				out = append(out, anthropicContentBlock{Type: "text", Text: p.Text})
			}
		case "image_url":
			b, err := anthropicImage(p.ImageURL)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		default:
			return nil, vendorBadRequest("content part type %q is not supported by Anthropic", p.Type)
		}
	}
	return out, nil
}

func anthropicImage(u string) (anthropicContentBlock, error) {
	switch {
	case strings.HasPrefix(u, "data:"):
		mediaType, data, err := vendorDataURL(u)
		if err != nil {
			return anthropicContentBlock{}, err
		}
		return anthropicContentBlock{Type: "image", Source: &anthropicImageSource{Type: "base64", MediaType: mediaType, Data: data}}, nil
	case vendorIsHTTPURL(u):
		return anthropicContentBlock{Type: "image", Source: &anthropicImageSource{Type: "url", URL: u}}, nil
	}
	return anthropicContentBlock{}, vendorBadRequest("image URL must be an http(s) or a base64 data URL")
}

// anthropicAssistant translates an assistant turn: its text, then its tool
// calls as tool_use blocks.
func anthropicAssistant(m Message) ([]anthropicContentBlock, error) {
	var out []anthropicContentBlock
	if s := m.Text(); s != "" {
		out = append(out, anthropicContentBlock{Type: "text", Text: s})
	}
	for _, tc := range m.ToolCalls {
		args, err := vendorToolArguments(tc)
		if err != nil {
			return nil, err
		}
		out = append(out, anthropicContentBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: args})
	}
	return out, nil
}

// anthropicToolResult translates a tool message into a user tool_result block.
func anthropicToolResult(m Message) ([]anthropicContentBlock, error) {
	if m.ToolCallID == "" {
		return nil, vendorBadRequest("tool message without tool_call_id")
	}
	b := anthropicContentBlock{Type: "tool_result", ToolUseID: m.ToolCallID}
	hasImage := false
	for _, p := range m.Content {
		if p.Type == "image_url" {
			hasImage = true
		}
	}
	if hasImage {
		parts, err := anthropicParts(m.Content)
		if err != nil {
			return nil, err
		}
		b.Content = parts
	} else if s := m.Text(); s != "" {
		b.Content = s
	}
	return []anthropicContentBlock{b}, nil
}

// anthropicToolResultsFirst moves a user turn's tool_result blocks ahead of its other
// blocks, as Anthropic requires, keeping each group's order.
func anthropicToolResultsFirst(blocks []anthropicContentBlock) {
	var results, rest []anthropicContentBlock
	for _, b := range blocks {
		if b.Type == "tool_result" {
			results = append(results, b)
		} else {
			rest = append(rest, b)
		}
	}
	if len(results) == 0 || len(rest) == 0 {
		return
	}
	copy(blocks, results)
	copy(blocks[len(results):], rest)
}

// anthropicTrimPrefill trims a final assistant turn (a prefill), which Anthropic
// rejects when it ends in whitespace.
func anthropicTrimPrefill(m *anthropicMessageParam) {
	n := len(m.Content)
	if n == 0 || m.Content[n-1].Type != "text" {
		return
	}
	m.Content[n-1].Text = strings.TrimRight(m.Content[n-1].Text, " \t\r\n")
	if m.Content[n-1].Text == "" {
		m.Content = m.Content[:n-1]
	}
}

// --- response translation ---

// anthropicFinish maps a stop_reason to OpenAI's finish_reason; a refusal is
// a content-filter failure.
func anthropicFinish(stop string, details *anthropicStopDetails) (string, *Error) {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length", nil
	case "tool_use":
		return "tool_calls", nil
	case "refusal":
		msg := "Anthropic refused the request"
		if details != nil && details.Explanation != "" {
			msg = details.Explanation
		}
		return "", &Error{Class: ClassContentFilter, Code: "refusal", Message: msg}
	}
	return "stop", nil // end_turn, stop_sequence, pause_turn
}

// anthropicAnswer is one Messages response as one OpenAI choice.
type anthropicAnswer struct {
	id, model string
	msg       translatedMessage
	finish    string
	usage     Usage
}

// anthropicChatResult translates a Messages response into a chat.completion.
func anthropicChatResult(raw []byte, model string, now time.Time) (*ChatResult, error) {
	ans, err := anthropicParseAnswer(raw, "")
	if err != nil {
		return nil, err
	}
	return anthropicAssemble([]*anthropicAnswer{ans}, model, now), nil
}

// anthropicParseAnswer translates one Messages response. A tool_use block of
// respTool (the forced tool that carries response_format) becomes the
// message content and the answer's finish is "stop".
func anthropicParseAnswer(raw []byte, respTool string) (*anthropicAnswer, error) {
	var resp anthropicResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, &Error{Class: ClassServer, Status: http.StatusOK, Message: "malformed Anthropic response", Err: err}
	}
	if resp.Type == "error" && resp.Error != nil {
		return nil, anthropicStreamError(resp.Error)
	}
	finish, ferr := anthropicFinish(resp.StopReason, resp.StopDetails)
	if ferr != nil {
		return nil, ferr
	}
	var text, reasoning strings.Builder
	var calls []translatedToolCall
	for _, b := range resp.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			reasoning.WriteString(b.Thinking)
		case "tool_use":
			args := string(b.Input)
			if args == "" || args == "null" {
				args = "{}"
			}
			if respTool != "" && b.Name == respTool {
				text.WriteString(args)
				continue
			}
			calls = append(calls, translatedToolCall{ID: b.ID, Type: "function", Function: translatedFunction{Name: b.Name, Arguments: args}})
		}
	}
	if respTool != "" && len(calls) == 0 && finish == "tool_calls" {
		finish = "stop"
	}
	msg := translatedMessage{Role: "assistant", ReasoningContent: reasoning.String(), ToolCalls: calls}
	if s := text.String(); s != "" || len(calls) == 0 {
		msg.Content = &s
	}
	return &anthropicAnswer{id: resp.ID, model: resp.Model, msg: msg, finish: finish, usage: resp.Usage.usage()}, nil
}

// anthropicAssemble renders the answers as one chat.completion, answer i
// as choice i, usage summed.
func anthropicAssemble(answers []*anthropicAnswer, model string, now time.Time) *ChatResult {
	id := answers[0].id
	if id == "" {
		id = vendorCompletionID()
	}
	if answers[0].model != "" {
		model = answers[0].model
	}
	choices := make([]translatedChoice, len(answers))
	usages := make([]Usage, len(answers))
	for i, a := range answers {
		choices[i] = translatedChoice{Index: i, Message: a.msg, FinishReason: a.finish}
		usages[i] = a.usage
	}
	u := sumUsage(usages)
	return &ChatResult{
		Body:         translatedCompletionChoices(id, model, now, choices, u),
		FinishReason: answers[0].finish,
		Usage:        u,
	}
}

// --- streaming ---

type anthropicStream struct {
	ctx     context.Context
	cancel  context.CancelFunc
	body    io.ReadCloser
	sse     *SSEReader
	chunks  translatedChunker
	pending []Chunk
	err     error // sticky: io.EOF or a classified *Error
	started bool  // the role chunk was queued
	usage   anthropicUsage
	tools   map[int]int // content block index → tool call index
	finish  string      // finish_reason once message_delta said it
	// respTool is the forced tool that carries response_format: its input
	// streams as content. format is its content block index (-1: none yet).
	respTool string
	format   int
	fixedID  bool // keep the chunker's id (a fan-out shares one id)
}

func newAnthropicStream(ctx context.Context, body io.ReadCloser, model string, now time.Time) *anthropicStream {
	return &anthropicStream{
		ctx: ctx, body: body, sse: NewSSEReader(body),
		chunks: newTranslatedChunker(vendorCompletionID(), model, now),
		tools:  map[int]int{}, format: -1,
	}
}

func (s *anthropicStream) Usage() Usage { return s.usage.usage() }

func (s *anthropicStream) Close() error { return closeStream(s.cancel, s.body) }

// FlushBeforeWait: every read of the vendor's body goes through the SSE
// reader (WaitNotifier).
func (s *anthropicStream) FlushBeforeWait(flush func()) bool {
	s.sse.BeforeWait(flush)
	return true
}

func (s *anthropicStream) Next() (Chunk, error) {
	for {
		if len(s.pending) > 0 {
			c := s.pending[0]
			s.pending = s.pending[1:]
			return c, nil
		}
		if s.err != nil {
			return Chunk{}, s.err
		}
		ev, err := s.sse.Next()
		if errors.Is(err, io.EOF) {
			if s.finish != "" {
				// message_stop lost, but the answer was complete.
				s.end()
			} else {
				s.err = vendorStreamEnded()
			}
			continue
		}
		if err != nil {
			s.err = ClassifyTransport(s.ctx, err)
			continue
		}
		s.handle(ev)
	}
}

func (s *anthropicStream) emit(c Chunk) {
	if !s.started {
		s.started = true
		s.pending = append(s.pending, s.chunks.role())
	}
	s.pending = append(s.pending, c)
}

// end queues the usage-only chunk (when usage is known) and ends the stream.
func (s *anthropicStream) end() {
	if u := s.Usage(); u.Known {
		s.emit(s.chunks.usage(u))
	}
	s.err = io.EOF
}

func (s *anthropicStream) handle(ev SSEEvent) {
	var e anthropicEvent
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		if ev.Event == "ping" {
			return
		}
		s.err = &Error{Class: ClassServer, Message: "malformed Anthropic stream event", Err: err}
		return
	}
	if e.Type == "" {
		e.Type = ev.Event
	}
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			if e.Message.ID != "" && !s.fixedID {
				s.chunks.id = e.Message.ID
			}
			if e.Message.Model != "" {
				s.chunks.model = e.Message.Model
			}
			s.usage.merge(&e.Message.Usage)
		}
		if !s.started {
			s.started = true
			s.pending = append(s.pending, s.chunks.role())
		}
	case "content_block_start":
		b := e.ContentBlock
		if b == nil {
			return
		}
		switch b.Type {
		case "text":
			if b.Text != "" {
				s.emit(s.chunks.text(b.Text))
			}
		case "thinking":
			if b.Thinking != "" {
				s.emit(s.chunks.reasoning(b.Thinking))
			}
		case "tool_use":
			if s.respTool != "" && b.Name == s.respTool {
				s.format = e.Index
				if in := strings.TrimSpace(string(b.Input)); in != "" && in != "{}" && in != "null" {
					s.emit(s.chunks.text(in))
				}
				return
			}
			n := len(s.tools)
			s.tools[e.Index] = n
			args := ""
			if in := strings.TrimSpace(string(b.Input)); in != "" && in != "{}" && in != "null" {
				args = in
			}
			s.emit(s.chunks.toolStart(n, b.ID, b.Name, args))
		}
	case "content_block_delta":
		d := e.Delta
		if d == nil {
			return
		}
		switch d.Type {
		case "text_delta":
			if d.Text != "" {
				s.emit(s.chunks.text(d.Text))
			}
		case "thinking_delta":
			if d.Thinking != "" {
				s.emit(s.chunks.reasoning(d.Thinking))
			}
		case "input_json_delta":
			if e.Index == s.format && d.PartialJSON != "" {
				s.emit(s.chunks.text(d.PartialJSON))
			} else if n, ok := s.tools[e.Index]; ok && d.PartialJSON != "" {
				s.emit(s.chunks.toolArgs(n, d.PartialJSON))
			}
		}
	case "message_delta":
		s.usage.merge(e.Usage)
		if e.Delta != nil && e.Delta.StopReason != "" {
			finish, ferr := anthropicFinish(e.Delta.StopReason, e.Delta.StopDetails)
			if ferr != nil {
				s.err = ferr
				return
			}
			if finish == "tool_calls" && s.format >= 0 && len(s.tools) == 0 {
				finish = "stop" // the forced format tool is the answer
			}
			s.finish = finish
			s.emit(s.chunks.finish(finish))
		}
	case "message_stop":
		s.end()
	case "error":
		obj := e.Error
		if obj == nil {
			obj = &anthropicErrorObject{Type: "api_error"}
		}
		s.err = anthropicStreamError(obj)
	}
	// ping, content_block_stop and unknown events carry nothing to translate.
}
