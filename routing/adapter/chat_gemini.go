package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"switchyard/routing/config"
	"time"
)

// Chat sends one generateContent call.
func (Gemini) Chat(ctx context.Context, t Target, r *ChatRequest) (*ChatResult, error) {
	body, err := geminiBuild(r, t.Capabilities)
	if err != nil {
		return nil, err
	}
	u := geminiModelURL(t, "generateContent")
	resp, err := vendorDo(ctx, t, http.MethodPost, u, geminiHeaders(t), body, ClassifyGemini)
	if err != nil {
		return nil, err
	}
	raw, err := vendorReadBody(ctx, resp)
	if err != nil {
		return nil, err
	}
	res, err := geminiChatResult(raw, t.UpstreamModel, vendorCompletionID(), time.Now())
	if err != nil {
		return nil, err
	}
	return estimateResult(res, r), nil
}

// ChatStream opens a streamGenerateContent call in SSE mode.
func (Gemini) ChatStream(ctx context.Context, t Target, r *ChatRequest) (Stream, error) {
	body, err := geminiBuild(r, t.Capabilities)
	if err != nil {
		return nil, err
	}
	u := geminiModelURL(t, "streamGenerateContent?alt=sse")
	h := geminiHeaders(t)
	h.Set("Accept", "text/event-stream")
	resp, cancel, e := openStream(ctx, t.APIKey, geminiErrors, func(c context.Context) (*http.Response, *Error) {
		return vendorSend(c, t, http.MethodPost, u, h, body)
	})
	if e != nil {
		return nil, e
	}
	s := newGeminiStream(ctx, resp.Body, t.UpstreamModel, vendorCompletionID(), time.Now())
	s.cancel = cancel
	return finishing(s, r), nil
}

// Embed sends one batchEmbedContents call, which the official SDK uses even
// for a single input.

// --- request translation ---

type geminiRequest struct {
	Contents          []geminiContent   `json:"contents"`
	SystemInstruction *geminiContent    `json:"systemInstruction,omitempty"`
	Tools             []geminiTool      `json:"tools,omitempty"`
	ToolConfig        *geminiToolConfig `json:"toolConfig,omitempty"`
	GenerationConfig  *geminiGenConfig  `json:"generationConfig,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text             string                  `json:"text,omitempty"`
	Thought          bool                    `json:"thought,omitempty"`
	InlineData       *geminiInlineData       `json:"inlineData,omitempty"`
	FileData         *geminiFileData         `json:"fileData,omitempty"`
	FunctionCall     *geminiFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *geminiFunctionResponse `json:"functionResponse,omitempty"`
}

type geminiInlineData struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type geminiFileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type geminiFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type geminiFunctionResponse struct {
	Name     string `json:"name"`
	Response struct {
		Content any `json:"content"`
	} `json:"response"`
}

type geminiTool struct {
	FunctionDeclarations []geminiFunctionDecl `json:"functionDeclarations,omitempty"`
	GoogleSearch         *struct{}            `json:"googleSearch,omitempty"`
}

// geminiInstructions marks a system message folded into a user turn.
const geminiInstructions = "[Instructions from the system]\n"

// geminiEffortBudget is the thinking budget of an effort hint.
func geminiEffortBudget(effort string) int {
	switch effort {
	case "low", "minimal":
		return 2048
	case "medium":
		return 8192
	}
	return 16384
}

type geminiFunctionDecl struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type geminiToolConfig struct {
	FunctionCallingConfig geminiFunctionCallingConfig `json:"functionCallingConfig"`
}

type geminiFunctionCallingConfig struct {
	Mode                 string   `json:"mode"` // AUTO | ANY | NONE
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type geminiGenConfig struct {
	Temperature        *float64              `json:"temperature,omitempty"`
	TopP               *float64              `json:"topP,omitempty"`
	TopK               *int                  `json:"topK,omitempty"`
	MaxOutputTokens    *int                  `json:"maxOutputTokens,omitempty"`
	StopSequences      []string              `json:"stopSequences,omitempty"`
	CandidateCount     int                   `json:"candidateCount,omitempty"`
	Seed               *int64                `json:"seed,omitempty"`
	FrequencyPenalty   *float64              `json:"frequencyPenalty,omitempty"`
	PresencePenalty    *float64              `json:"presencePenalty,omitempty"`
	ResponseMimeType   string                `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage       `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *geminiThinkingConfig `json:"thinkingConfig,omitempty"`
}

type geminiThinkingConfig struct {
	ThinkingBudget  int  `json:"thinkingBudget"`
	IncludeThoughts bool `json:"includeThoughts"`
}

// geminiRequestBody renders r for a deployment without declared capabilities.
func geminiRequestBody(r *ChatRequest) ([]byte, error) {
	return geminiBuild(r, config.Capabilities{})
}

// geminiBuild renders r as a generateContent request, refusing the fields
// the table refuses.
func geminiBuild(r *ChatRequest, caps config.Capabilities) ([]byte, error) {
	if f := Judge(config.ProtocolGemini, r, caps, false).Refused; f != "" {
		return nil, unsupportedField(f)
	}
	req, err := geminiTranslate(r, caps)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, vendorBadRequest("cannot encode the Gemini request: %v", err)
	}
	return b, nil
}

// geminiTranslate writes a chat request as a generateContent request: the
// conversation, the tools and the generation settings.
func geminiTranslate(r *ChatRequest, caps config.Capabilities) (*geminiRequest, error) {
	req := &geminiRequest{Contents: []geminiContent{}}
	if err := geminiConversation(req, r); err != nil {
		return nil, err
	}
	if err := geminiTools(req, r); err != nil {
		return nil, err
	}
	if r.Set.Has("web_search_options") {
		req.Tools = append(req.Tools, geminiTool{GoogleSearch: &struct{}{}}) // the policy refuses it without the capability
	}
	req.GenerationConfig = geminiGeneration(r, caps)
	return req, nil
}

// geminiConversation writes the messages as contents (one turn per role
// run) and the leading system messages as the system instruction.
func geminiConversation(req *geminiRequest, r *ChatRequest) error {
	var system, pending []geminiPart // pending: later instructions, for the next user turn
	names := map[string]string{}     // tool call id → function name, for tool results
	for i, m := range r.Conversation() {
		var role string
		var parts []geminiPart
		var err error
		switch m.Role {
		case "system", "developer":
			s := m.Text()
			switch {
			case s == "":
			case len(req.Contents) == 0:
				system = append(system, geminiPart{Text: s}) // leading: the system instruction
			default:
				// Mid-conversation instructions keep their place: folded into
				// the next user turn, marked as instructions.
				pending = append(pending, geminiPart{Text: geminiInstructions + s})
			}
			continue
		case "user":
			role = "user"
			parts, err = geminiParts(m.Content)
		case "assistant":
			role = "model"
			parts, err = geminiAssistant(m, names)
		case "tool":
			role = "user"
			parts, err = geminiToolResult(m, names)
		default:
			return vendorBadRequest("messages[%d]: role %q is not supported", i, m.Role)
		}
		if err != nil {
			return err
		}
		if role == "user" && len(pending) > 0 {
			parts, pending = append(pending, parts...), nil
		}
		if len(parts) == 0 {
			continue
		}
		// One turn per role run: parallel tool results belong together.
		if n := len(req.Contents); n > 0 && req.Contents[n-1].Role == role {
			req.Contents[n-1].Parts = append(req.Contents[n-1].Parts, parts...)
			continue
		}
		req.Contents = append(req.Contents, geminiContent{Role: role, Parts: parts})
	}
	if len(pending) > 0 { // instructions after the last user turn: a user turn of their own
		req.Contents = append(req.Contents, geminiContent{Role: "user", Parts: pending})
	}
	if len(system) > 0 {
		req.SystemInstruction = &geminiContent{Parts: system}
	}

	return nil
}

// geminiTools declares the caller's functions and its tool choice.
func geminiTools(req *geminiRequest, r *ChatRequest) error {
	if len(r.Tools) == 0 {
		return nil
	}
	decls := make([]geminiFunctionDecl, 0, len(r.Tools))
	for _, tl := range r.Tools {
		params, err := geminiSchema(tl.Parameters)
		if err != nil {
			return err
		}
		decls = append(decls, geminiFunctionDecl{Name: tl.Name, Description: tl.Description, Parameters: params})
	}
	req.Tools = []geminiTool{{FunctionDeclarations: decls}}
	tc, err := parseVendorToolChoice(r.ToolChoice)
	if err != nil {
		return err
	}
	switch tc.Mode {
	case "auto":
		req.ToolConfig = &geminiToolConfig{geminiFunctionCallingConfig{Mode: "AUTO"}}
	case "required":
		req.ToolConfig = &geminiToolConfig{geminiFunctionCallingConfig{Mode: "ANY"}}
	case "none":
		req.ToolConfig = &geminiToolConfig{geminiFunctionCallingConfig{Mode: "NONE"}}
	case "function":
		req.ToolConfig = &geminiToolConfig{geminiFunctionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{tc.Name}}}
	}
	return nil
}

// geminiGeneration is the generation config, nil when the caller set
// nothing it carries.
func geminiGeneration(r *ChatRequest, caps config.Capabilities) *geminiGenConfig {
	gc := &geminiGenConfig{Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, StopSequences: r.Stop}
	if r.MaxTokens != nil && *r.MaxTokens > 0 {
		gc.MaxOutputTokens = r.MaxTokens
	}
	switch r.Format.Type {
	case FormatJSONObject:
		gc.ResponseMimeType = "application/json"
	case FormatJSONSchema:
		gc.ResponseMimeType = "application/json"
		gc.ResponseJSONSchema = r.Format.Schema
	}
	if r.N > 1 {
		gc.CandidateCount = r.N
	}
	gc.Seed = r.Seed
	if r.FrequencyPenalty != nil && *r.FrequencyPenalty != 0 {
		gc.FrequencyPenalty = r.FrequencyPenalty
	}
	if r.PresencePenalty != nil && *r.PresencePenalty != 0 {
		gc.PresencePenalty = r.PresencePenalty
	}
	switch {
	case !r.WantsReasoning() && r.Effort != "" && caps.Thinking:
		gc.ThinkingConfig = &geminiThinkingConfig{ThinkingBudget: geminiEffortBudget(r.Effort), IncludeThoughts: true}
	case !r.WantsReasoning() && r.Adaptive() && caps.Thinking:
		gc.ThinkingConfig = &geminiThinkingConfig{ThinkingBudget: -1, IncludeThoughts: true} // dynamic: the model decides
	}
	if r.WantsReasoning() {
		budget := r.ThinkingBudget()
		gc.ThinkingConfig = &geminiThinkingConfig{ThinkingBudget: budget, IncludeThoughts: true}
		// maxOutputTokens counts the thoughts too: keep the caller's limit
		// for the answer on top of the thinking budget.
		if gc.MaxOutputTokens != nil {
			gc.MaxOutputTokens = vendorIntPtr(*gc.MaxOutputTokens + budget)
		}
	}
	if gc.Temperature != nil || gc.TopP != nil || gc.TopK != nil || gc.MaxOutputTokens != nil || len(gc.StopSequences) > 0 ||
		gc.ResponseMimeType != "" || gc.ThinkingConfig != nil || gc.CandidateCount > 0 || gc.Seed != nil ||
		gc.FrequencyPenalty != nil || gc.PresencePenalty != nil {
		return gc
	}
	return nil
}

func geminiParts(parts []ContentPart) ([]geminiPart, error) {
	var out []geminiPart
	for _, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				out = append(out, geminiPart{Text: p.Text})
			}
		case "image_url":
			gp, err := geminiImage(p.ImageURL)
			if err != nil {
				return nil, err
			}
			out = append(out, gp)
		default:
			return nil, vendorBadRequest("content part type %q is not supported by Gemini", p.Type)
		}
	}
	return out, nil
}

func geminiImage(u string) (geminiPart, error) {
	switch {
	case strings.HasPrefix(u, "data:"):
		mediaType, data, err := vendorDataURL(u)
		if err != nil {
			return geminiPart{}, err
		}
		return geminiPart{InlineData: &geminiInlineData{MimeType: mediaType, Data: data}}, nil
	case vendorIsHTTPURL(u):
		return geminiPart{FileData: &geminiFileData{MimeType: geminiGuessMime(u), FileURI: u}}, nil
	}
	return geminiPart{}, vendorBadRequest("image URL must be an http(s) or a base64 data URL")
}

// geminiGuessMime guesses an image URL's media type from its extension;
// fileData needs one and an OpenAI image_url carries none.
func geminiGuessMime(u string) string {
	p := u
	if pu, err := url.Parse(u); err == nil {
		p = pu.Path
	}
	if t := mime.TypeByExtension(strings.ToLower(path.Ext(p))); strings.HasPrefix(t, "image/") {
		t, _, _ = strings.Cut(t, ";")
		return t
	}
	return "image/jpeg"
}

func geminiAssistant(m Message, names map[string]string) ([]geminiPart, error) {
	var out []geminiPart
	if s := m.Text(); s != "" {
		out = append(out, geminiPart{Text: s})
	}
	for _, tc := range m.ToolCalls {
		args, err := vendorToolArguments(tc)
		if err != nil {
			return nil, err
		}
		if tc.ID != "" {
			names[tc.ID] = tc.Name
		}
		out = append(out, geminiPart{FunctionCall: &geminiFunctionCall{Name: tc.Name, Args: args}})
	}
	return out, nil
}

func geminiToolResult(m Message, names map[string]string) ([]geminiPart, error) {
	name := names[m.ToolCallID]
	if name == "" {
		name = m.Name
	}
	if name == "" {
		return nil, vendorBadRequest("tool message %q answers no earlier tool call", m.ToolCallID)
	}
	fr := &geminiFunctionResponse{Name: name}
	text := m.Text()
	// A JSON object or array result is passed as structured data.
	if t := bytes.TrimSpace([]byte(text)); len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
		fr.Response.Content = json.RawMessage(t)
	} else {
		fr.Response.Content = text
	}
	return []geminiPart{{FunctionResponse: fr}}, nil
}

// --- response translation ---

type geminiResponse struct {
	Candidates     []geminiCandidate     `json:"candidates"`
	PromptFeedback *geminiPromptFeedback `json:"promptFeedback"`
	UsageMetadata  *geminiUsage          `json:"usageMetadata"`
	ModelVersion   string                `json:"modelVersion"`
	ResponseID     string                `json:"responseId"`
	Error          *geminiErrorObject    `json:"error"`
}

type geminiCandidate struct {
	Content      *geminiContent `json:"content"`
	FinishReason string         `json:"finishReason"`
	Index        int            `json:"index"`
}

type geminiPromptFeedback struct {
	BlockReason        string `json:"blockReason"`
	BlockReasonMessage string `json:"blockReasonMessage"`
}

type geminiUsage struct {
	PromptTokenCount        *int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64  `json:"candidatesTokenCount"`
	CachedContentTokenCount int64  `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int64  `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64  `json:"toolUsePromptTokenCount"`
}

// usage normalizes usageMetadata. Gemini omits zero counts, so a present
// usageMetadata with a prompt count makes every figure known. OpenAI's
// completion_tokens include reasoning; Gemini counts thoughts apart.
func (g *geminiUsage) usage() Usage {
	if g == nil || g.PromptTokenCount == nil {
		return Usage{}
	}
	return Usage{
		Prompt:         *g.PromptTokenCount + g.ToolUsePromptTokenCount,
		Completion:     g.CandidatesTokenCount + g.ThoughtsTokenCount,
		Cached:         g.CachedContentTokenCount,
		Reasoning:      g.ThoughtsTokenCount,
		Known:          true,
		CachedKnown:    true,
		ReasoningKnown: true,
	}
}

// geminiFiltered are the finish reasons that mean a safety or policy filter
// stopped the answer.
var geminiFiltered = map[string]bool{
	"SAFETY": true, "RECITATION": true, "BLOCKLIST": true, "PROHIBITED_CONTENT": true, "SPII": true,
	"IMAGE_SAFETY": true, "IMAGE_PROHIBITED_CONTENT": true, "IMAGE_RECITATION": true,
}

func geminiFilterError(reason, message string) *Error {
	if message == "" {
		message = "Gemini blocked the content: " + reason
	}
	return &Error{Class: ClassContentFilter, Code: reason, Message: message}
}

// geminiPromptBlocked reports a prompt the vendor refused to answer.
func geminiPromptBlocked(pf *geminiPromptFeedback) *Error {
	if pf == nil || (pf.BlockReason == "" && pf.BlockReasonMessage == "") {
		return nil
	}
	reason := pf.BlockReason
	if reason == "" {
		reason = "BLOCKED"
	}
	msg := pf.BlockReasonMessage
	if msg == "" {
		msg = "Gemini blocked the prompt: " + reason
	}
	return &Error{Class: ClassContentFilter, Code: reason, Message: msg}
}

// geminiFinish maps a finishReason; hadCalls reports function calls in the answer.
func geminiFinish(reason string, hadCalls bool) string {
	switch {
	case hadCalls:
		return "tool_calls"
	case reason == "MAX_TOKENS":
		return "length"
	}
	return "stop"
}

func geminiToolCallID(fc *geminiFunctionCall, index int) string {
	if fc.ID != "" {
		return fc.ID
	}
	return fmt.Sprintf("call_%d", index)
}

func geminiArgs(fc *geminiFunctionCall) string {
	a := strings.TrimSpace(string(fc.Args))
	if a == "" || a == "null" {
		return "{}"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, []byte(a)) == nil {
		return buf.String()
	}
	return a
}

func geminiChatResult(raw []byte, model, id string, now time.Time) (*ChatResult, error) {
	var resp geminiResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, &Error{Class: ClassServer, Status: http.StatusOK, Message: "malformed Gemini response", Err: err}
	}
	if resp.Error != nil {
		return nil, geminiErrorFrom(resp.Error.Code, nil, resp.Error)
	}
	if e := geminiPromptBlocked(resp.PromptFeedback); e != nil {
		return nil, e
	}
	if len(resp.Candidates) == 0 {
		return nil, &Error{Class: ClassServer, Status: http.StatusOK, Message: "Gemini returned no candidates"}
	}
	if resp.ModelVersion != "" {
		model = resp.ModelVersion
	}
	if resp.ResponseID != "" {
		id = resp.ResponseID
	}
	// Candidate i (by its index; candidateCount asked for n) is choice i.
	choices := make([]translatedChoice, 0, len(resp.Candidates))
	for i, cand := range resp.Candidates {
		if geminiFiltered[cand.FinishReason] {
			return nil, geminiFilterError(cand.FinishReason, "")
		}
		var text, reasoning strings.Builder
		var calls []translatedToolCall
		if cand.Content != nil {
			for _, p := range cand.Content.Parts {
				switch {
				case p.FunctionCall != nil:
					calls = append(calls, translatedToolCall{
						ID: geminiToolCallID(p.FunctionCall, len(calls)), Type: "function",
						Function: translatedFunction{Name: p.FunctionCall.Name, Arguments: geminiArgs(p.FunctionCall)},
					})
				case p.Thought:
					reasoning.WriteString(p.Text)
				default:
					text.WriteString(p.Text)
				}
			}
		}
		msg := translatedMessage{Role: "assistant", ReasoningContent: reasoning.String(), ToolCalls: calls}
		if s := text.String(); s != "" || len(calls) == 0 {
			msg.Content = &s
		}
		index := cand.Index
		if len(resp.Candidates) > 1 && index == 0 {
			index = i // Gemini omits a zero index
		}
		choices = append(choices, translatedChoice{Index: index, Message: msg, FinishReason: geminiFinish(cand.FinishReason, len(calls) > 0)})
	}
	u := resp.UsageMetadata.usage()
	return &ChatResult{
		Body:         translatedCompletionChoices(id, model, now, choices, u),
		FinishReason: choices[0].FinishReason,
		Usage:        u,
	}, nil
}

// --- streaming ---

type geminiStream struct {
	ctx      context.Context
	cancel   context.CancelFunc
	body     io.ReadCloser
	sse      *SSEReader
	chunks   translatedChunker
	pending  []Chunk
	err      error // sticky: io.EOF or a classified *Error
	started  bool
	calls    map[int]int // function calls so far, by candidate
	finished bool        // a finishReason arrived
	usage    Usage
}

func newGeminiStream(ctx context.Context, body io.ReadCloser, model, id string, now time.Time) *geminiStream {
	return &geminiStream{
		ctx: ctx, body: body, sse: NewSSEReader(newGeminiFramer(body)),
		chunks: newTranslatedChunker(id, model, now), calls: map[int]int{},
	}
}

func (s *geminiStream) Usage() Usage { return s.usage }

func (s *geminiStream) Close() error { return closeStream(s.cancel, s.body) }

// FlushBeforeWait: every read of the vendor's body goes through the SSE
// reader (WaitNotifier).
func (s *geminiStream) FlushBeforeWait(flush func()) bool {
	s.sse.BeforeWait(flush)
	return true
}

func (s *geminiStream) Next() (Chunk, error) {
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
		switch {
		case errors.Is(err, io.EOF):
			// Gemini sends no [DONE]: the body ending after a finishReason
			// is the clean end.
			if !s.finished {
				s.err = vendorStreamEnded()
				continue
			}
			if s.usage.Known {
				s.emit(s.chunks.usage(s.usage))
			}
			s.err = io.EOF
		case err != nil:
			s.err = ClassifyTransport(s.ctx, err)
		default:
			s.handleData(ev.Data)
		}
	}
}

func (s *geminiStream) emit(c Chunk) {
	if !s.started {
		s.started = true
		s.pending = append(s.pending, s.chunks.role())
	}
	s.pending = append(s.pending, c)
}

func (s *geminiStream) handleData(data []byte) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return
	}
	var events []geminiResponse
	var err error
	if data[0] == '[' {
		err = json.Unmarshal(data, &events)
	} else {
		events = make([]geminiResponse, 1)
		err = json.Unmarshal(data, &events[0])
	}
	if err != nil {
		s.err = &Error{Class: ClassServer, Message: "malformed Gemini stream event", Err: err}
		return
	}
	for i := range events {
		if s.handle(&events[i]); s.err != nil {
			return
		}
	}
}

func (s *geminiStream) handle(resp *geminiResponse) {
	if resp.Error != nil {
		s.err = geminiErrorFrom(resp.Error.Code, nil, resp.Error)
		return
	}
	if resp.UsageMetadata != nil {
		if u := resp.UsageMetadata.usage(); u.Known {
			s.usage = u // cumulative: the last snapshot wins
		}
	}
	if e := geminiPromptBlocked(resp.PromptFeedback); e != nil {
		s.err = e
		return
	}
	if !s.started {
		if resp.ModelVersion != "" {
			s.chunks.model = resp.ModelVersion
		}
		if resp.ResponseID != "" {
			s.chunks.id = resp.ResponseID
		}
		s.started = true
		s.pending = append(s.pending, s.chunks.role())
	}
	// Every candidate (candidateCount asked for n) is the choice of its
	// index. Gemini may repeat finishReason on every event; each is passed
	// on and the stream's wrapper keeps the last one, at the end.
	for i := range resp.Candidates {
		cand := &resp.Candidates[i]
		if geminiFiltered[cand.FinishReason] {
			// The flagged event's own text is not passed on.
			s.err = geminiFilterError(cand.FinishReason, "")
			return
		}
		index := cand.Index
		if len(resp.Candidates) > 1 && index == 0 {
			index = i // Gemini omits a zero index
		}
		ch := s.chunks.at(index)
		if cand.Content != nil {
			for _, p := range cand.Content.Parts {
				switch {
				case p.FunctionCall != nil:
					n := s.calls[index]
					s.emit(ch.toolStart(n, geminiToolCallID(p.FunctionCall, n), p.FunctionCall.Name, geminiArgs(p.FunctionCall)))
					s.calls[index] = n + 1
				case p.Text == "":
				case p.Thought:
					s.emit(ch.reasoning(p.Text))
				default:
					s.emit(ch.text(p.Text))
				}
			}
		}
		if cand.FinishReason != "" {
			s.finished = true
			s.emit(ch.finish(geminiFinish(cand.FinishReason, s.calls[index] > 0)))
		}
	}
}

// --- errors ---
