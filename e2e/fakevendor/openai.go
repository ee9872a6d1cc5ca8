package fakevendor

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type openaiChatRequest struct {
	Model         string          `json:"model"`
	Messages      []openaiMessage `json:"messages"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	WebSearchOptions    json.RawMessage `json:"web_search_options"`
	MaxTokens           int             `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	N                   int             `json:"n"`
	ResponseFormat      *struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

type openaiMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// intent reads the conversation (system and developer messages are
// instructions; tool messages are results) and the offered function tools.
// It also reports the prompt size and whether web search was asked for.
func (req *openaiChatRequest) intent() (in intent, promptBytes int, webSearch bool) {
	turns := make([]turn, 0, len(req.Messages))
	for _, m := range req.Messages {
		t := textOf(m.Content)
		promptBytes += len(t)
		switch m.Role {
		case "user":
			turns = append(turns, turn{text: userText(m.Content, t)})
		case "tool", "function":
			turns = append(turns, turn{results: []string{resultText(m.Content)}})
		case "assistant":
			turns = append(turns, turn{model: true})
		}
	}
	webSearch = len(req.WebSearchOptions) > 0 && string(req.WebSearchOptions) != "null"
	var tools []offered
	for _, t := range req.Tools {
		webSearch = webSearch || strings.HasPrefix(t.Type, "web_search")
		if t.Function.Name != "" {
			tools = append(tools, offered{name: t.Function.Name})
		}
	}
	return decide(turns, tools), promptBytes, webSearch
}

// textOf is the text of a message content that is either a string or an
// array of parts with "text" fields.
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	case '[':
		var parts []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(raw, &parts)
		if len(parts) == 1 {
			return parts[0].Text
		}
		var s string
		for _, p := range parts {
			s += p.Text
		}
		return s
	}
	return ""
}

type openaiUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

func (rp reply) openaiUsage() *openaiUsage {
	u := &openaiUsage{PromptTokens: rp.prompt, CompletionTokens: rp.completion()}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails.CachedTokens = rp.cached
	return u
}

var openaiFinish = [...]string{finishStop: "stop", finishLength: "length", finishTool: "tool_calls", finishFilter: "content_filter"}

type openaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type openaiCompletion struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	Choices           []openaiChoice `json:"choices"`
	Usage             *openaiUsage   `json:"usage,omitempty"`
	ServiceTier       string         `json:"service_tier"`
	SystemFingerprint string         `json:"system_fingerprint"`
}

type openaiChoice struct {
	Index   int `json:"index"`
	Message struct {
		Role    string  `json:"role"`
		Content *string `json:"content"`
		Refusal *string `json:"refusal"`
		// ReasoningContent: DeepSeek-R1 style vendors' reasoning text.
		ReasoningContent string           `json:"reasoning_content,omitempty"`
		ToolCalls        []openaiToolCall `json:"tool_calls,omitempty"`
		Annotations      []struct{}       `json:"annotations"`
	} `json:"message"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
}

func (s *Server) openaiChat(c *call) {
	var req openaiChatRequest
	perr := json.Unmarshal(c.body, &req)
	c.model = req.Model
	in, promptBytes, webSearch := req.intent()
	c.webSearch = webSearch
	if !c.begin() {
		return
	}
	switch {
	case perr != nil:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"})
		return
	case req.Model == "":
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "you must provide a model parameter"})
		return
	case len(req.Messages) == 0:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "[] is too short - 'messages'"})
		return
	}
	if e, bad := req.strictRefusal(c.fault); bad {
		c.fail(e)
		return
	}
	maxTokens := req.MaxTokens
	if req.MaxCompletionTokens != nil && *req.MaxCompletionTokens > 0 {
		maxTokens = *req.MaxCompletionTokens
	}
	rp := c.plan(req.Model, promptBytes, maxTokens, in)
	if f := req.ResponseFormat; f != nil && (f.Type == "json_object" || f.Type == "json_schema") {
		rp.structured(f.JSONSchema.Schema)
	}
	rp.n = min(max(req.N, 1), 128)
	id := "chatcmpl-" + c.requestID()
	c.w.Header().Set("X-Request-Id", "req_"+c.requestID())
	if req.Stream {
		st := &openaiStream{rp: rp, toolID: "call_" + c.requestID(), errEvent: openaiStreamErrorFor(c.fault), finishEvery: c.fault.FinishEveryChunk,
			reasoning: c.fault.ReasoningContent}
		st.usageNull = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		if st.usageNull && !c.fault.NoUsage {
			st.usage = rp.openaiUsage()
		}
		st.head = append(st.head, `data: {"id":`...)
		st.head = appendString(st.head, id)
		st.head = append(st.head, `,"object":"chat.completion.chunk","created":`...)
		st.head = strconv.AppendInt(st.head, time.Now().Unix(), 10)
		st.head = append(st.head, `,"model":`...)
		st.head = appendString(st.head, req.Model)
		st.head = append(st.head, `,"system_fingerprint":"fp_fake","choices":[`...)
		c.stream(st, rp)
		return
	}
	out := openaiCompletion{
		ID: id, Object: "chat.completion", Created: time.Now().Unix(), Model: req.Model,
		Choices: make([]openaiChoice, rp.choices()), ServiceTier: "default", SystemFingerprint: "fp_fake",
	}
	for i := range out.Choices {
		ch := &out.Choices[i]
		ch.Index = i
		ch.Message.Role = "assistant"
		ch.Message.Annotations = []struct{}{}
		ch.FinishReason = openaiFinish[rp.finish]
		switch {
		case rp.tool != "":
			tc := openaiToolCall{ID: "call_" + c.requestID(), Type: "function"}
			tc.Function.Name, tc.Function.Arguments = rp.tool, rp.toolArgs()
			ch.Message.ToolCalls = []openaiToolCall{tc}
		case rp.finish != finishFilter:
			ch.Message.Content = strp(rp.fullText())
		}
		if c.fault.ReasoningContent && rp.tool == "" && rp.finish != finishFilter {
			ch.Message.ReasoningContent = ReasoningText
		}
	}
	if !c.fault.NoUsage {
		out.Usage = rp.openaiUsage()
	}
	b, _ := json.Marshal(out)
	c.writeJSON(http.StatusOK, b)
}

// openaiStream renders chat.completion.chunk events. head is the common
// prefix of every chunk, up to and including `"choices":[`.
type openaiStream struct {
	head      []byte
	rp        reply
	toolID    string
	usageNull bool         // include_usage was asked: "usage":null on every chunk
	usage     *openaiUsage // the usage-only chunk, nil to omit it
	errEvent  []byte       // the in-stream error event
	// finishEvery puts the finish reason on every content chunk.
	finishEvery bool
	// reasoning sends ReasoningText as reasoning_content deltas first.
	reasoning bool
}

func (s *openaiStream) chunk(b []byte, choice string) []byte {
	b = append(b, s.head...)
	b = append(b, choice...)
	b = append(b, ']')
	if s.usageNull {
		b = append(b, `,"usage":null`...)
	}
	return append(b, "}\n\n"...)
}

func (s *openaiStream) preamble(b []byte) []byte {
	for i := range s.rp.choices() {
		idx := strconv.Itoa(i)
		if s.rp.tool == "" {
			b = s.chunk(b, `{"index":`+idx+`,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}`)
			if s.reasoning && s.rp.finish != finishFilter {
				// As DeepSeek streams it: reasoning deltas with a null content.
				for _, part := range strings.SplitAfter(ReasoningText, "; ") {
					b = s.chunk(b, `{"index":`+idx+`,"delta":{"content":null,"reasoning_content":`+string(appendString(nil, part))+`},"logprobs":null,"finish_reason":null}`)
				}
			}
			continue
		}
		choice := make([]byte, 0, 256)
		choice = append(choice, `{"index":`+idx+`,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":`...)
		choice = appendString(choice, s.toolID)
		choice = append(choice, `,"type":"function","function":{"name":`...)
		choice = appendString(choice, s.rp.tool)
		choice = append(choice, `,"arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}`...)
		b = s.chunk(b, string(choice))
	}
	return b
}

// finishField is a content chunk's finish_reason: null, or the answer's
// reason when the vendor repeats it on every chunk.
func (s *openaiStream) finishField() string {
	if s.finishEvery {
		return `"` + openaiFinish[s.rp.finish] + `"`
	}
	return "null"
}

func (s *openaiStream) content(b []byte, _ int, text string) []byte {
	for i := range s.rp.choices() {
		idx := strconv.Itoa(i)
		if s.rp.tool != "" {
			args := appendString(nil, s.rp.toolArgs())
			b = s.chunk(b, `{"index":`+idx+`,"delta":{"tool_calls":[{"index":0,"function":{"arguments":`+string(args)+`}}]},"logprobs":null,"finish_reason":`+s.finishField()+`}`)
			continue
		}
		b = append(b, s.head...)
		b = append(b, `{"index":`+idx+`,"delta":{"content":`...)
		b = appendString(b, text)
		b = append(b, `},"logprobs":null,"finish_reason":`+s.finishField()+`}]`...)
		if s.usageNull {
			b = append(b, `,"usage":null`...)
		}
		b = append(b, "}\n\n"...)
	}
	return b
}

func (s *openaiStream) finish(b []byte) []byte {
	for i := range s.rp.choices() {
		b = s.chunk(b, `{"index":`+strconv.Itoa(i)+`,"delta":{},"logprobs":null,"finish_reason":"`+openaiFinish[s.rp.finish]+`"}`)
	}
	if s.usage != nil {
		u, _ := json.Marshal(s.usage)
		b = append(b, s.head...)
		b = append(b, `],"usage":`...)
		b = append(b, u...)
		b = append(b, "}\n\n"...)
	}
	return append(b, "data: [DONE]\n\n"...)
}

func (s *openaiStream) errorEvent(b []byte, status int) []byte {
	if status == 0 {
		return append(b, s.errEvent...)
	}
	// Google's shape, as OpenAI-compatible endpoints in front of Gemini send
	// it: a numeric code and the google.rpc status name.
	msg := geminiMessages[status]
	if status == 499 {
		msg = "The operation was cancelled."
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	ev, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": geminiStatusName(status), "param": nil, "code": status, "status": geminiStatusName(status)}})
	b = append(b, "data: "...)
	b = append(b, ev...)
	return append(b, "\n\n"...)
}

type openaiEmbeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     int             `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
}

// embeddingInputs splits an OpenAI input (a string, an array of strings, a
// token array or an array of token arrays) into the texts to embed; token
// arrays are embedded by their JSON text.
func embeddingInputs(raw json.RawMessage) ([]string, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil || s == "" {
			return nil, false
		}
		return []string{s}, true
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
			return nil, false
		}
		if items[0][0] != '"' && items[0][0] != '[' {
			return []string{string(raw)}, true // one token array
		}
		out := make([]string, len(items))
		for i, it := range items {
			if it[0] == '[' {
				out[i] = string(it)
				continue
			}
			if json.Unmarshal(it, &out[i]) != nil || out[i] == "" {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

func (s *Server) openaiEmbeddings(c *call) {
	var req openaiEmbeddingRequest
	perr := json.Unmarshal(c.body, &req)
	c.model = req.Model
	if !c.begin() {
		return
	}
	inputs, ok := embeddingInputs(req.Input)
	switch {
	case perr != nil:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "We could not parse the JSON body of your request."})
		return
	case req.Model == "":
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "you must provide a model parameter"})
		return
	case !ok:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."})
		return
	case req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64":
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "'" + req.EncodingFormat + "' is not one of ['float', 'base64'] - 'encoding_format'"})
		return
	}
	dim := c.dimension(req.Dimensions)
	order := make([]int, len(inputs))
	for i := range order {
		order[i] = i
	}
	if c.fault.ShuffleEmbeddings {
		shuffle(order)
	}
	b64 := req.EncodingFormat == "base64"
	tokens := 0
	b := make([]byte, 0, len(inputs)*(dim*11+64)+128)
	b = append(b, `{"object":"list","data":[`...)
	vec := make([]float32, dim)
	for n, i := range order {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		fillVector(vec, inputs[i])
		if b64 {
			b = appendBase64Vector(b, vec)
		} else {
			b = appendFloatArray(b, vec)
		}
		b = append(b, '}')
		tokens += max(1, (len(inputs[i])+3)/4)
	}
	b = append(b, `],"model":`...)
	b = appendString(b, req.Model)
	if !c.fault.NoUsage {
		b = append(b, `,"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(tokens), 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, int64(tokens), 10)
		b = append(b, '}')
	}
	b = append(b, '}')
	c.w.Header().Set("X-Request-Id", "req_"+c.requestID())
	c.writeJSON(http.StatusOK, b)
}

// dimension picks the embedding size: the fault's, else the request's, else
// the server default.
func (c *call) dimension(requested int) int {
	switch {
	case c.fault.Dimension > 0:
		return c.fault.Dimension
	case requested > 0 && requested <= 1<<16:
		return requested
	default:
		return c.s.opts.Dimension
	}
}

var openaiDefaultModels = []string{"gpt-4o-mini", "gpt-4o", "text-embedding-3-small"}

func (s *Server) openaiModels(c *call) {
	if !c.begin() {
		return
	}
	models := s.opts.Models
	if len(models) == 0 {
		models = openaiDefaultModels
	}
	b := append(make([]byte, 0, 128*len(models)), `{"object":"list","data":[`...)
	for i, m := range models {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendString(b, m)
		b = append(b, `,"object":"model","created":1686935002,"owned_by":"system"}`...)
	}
	b = append(b, "]}"...)
	c.writeJSON(http.StatusOK, b)
}

// strictRefusal is the 400 a strict older OpenAI-compatible vendor answers
// a request with that uses what it does not know (Fault.RejectStreamOptions,
// RejectMaxCompletionTokens, RejectDeveloper), in OpenAI's words for it.
func (req *openaiChatRequest) strictRefusal(f Fault) (apiErr, bool) {
	switch {
	case f.RejectStreamOptions && req.StreamOptions != nil:
		return apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "Unrecognized request argument supplied: stream_options", param: "stream_options", code: "unknown_parameter"}, true
	case f.RejectMaxCompletionTokens && req.MaxCompletionTokens != nil:
		return apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "Unrecognized request argument supplied: max_completion_tokens", param: "max_completion_tokens", code: "unknown_parameter"}, true
	case f.RejectDeveloper:
		for i, m := range req.Messages {
			if m.Role == "developer" {
				return apiErr{kind: errInvalid, status: http.StatusBadRequest,
					msg:   "Invalid value: 'developer'. Supported values are: 'system', 'assistant', 'user', 'function', and 'tool'.",
					param: "messages[" + strconv.Itoa(i) + "].role", code: "invalid_value"}, true
			}
		}
	}
	return apiErr{}, false
}
