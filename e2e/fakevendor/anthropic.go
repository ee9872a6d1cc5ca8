package fakevendor

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

type anthropicRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream bool `json:"stream"`
	Tools  []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
	OutputConfig *struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

// anthropicServerTools are the type prefixes of the tools Anthropic runs
// itself: not offered to a scripted call.
var anthropicServerTools = []string{"web_search_", "web_fetch_", "code_execution_", "tool_search_tool_"}

// intent reads the conversation (system turns are instructions; tool_result
// blocks are results, their content a string or text blocks) and the
// offered client tools; promptBytes is the prompt's size.
func (req *anthropicRequest) intent() (in intent, promptBytes int) {
	promptBytes = len(textOf(req.System))
	turns := make([]turn, 0, len(req.Messages))
	for _, m := range req.Messages {
		t := textOf(m.Content)
		promptBytes += len(t)
		switch m.Role {
		case "user":
			turns = append(turns, anthropicUserTurn(m.Content, t))
		case "assistant":
			turns = append(turns, turn{model: true})
		}
	}
	tools, _ := req.offers()
	return decide(turns, tools), promptBytes
}

// offers is the client tools offered, and whether a web_search server tool
// is among the tools.
func (req *anthropicRequest) offers() (tools []offered, webSearch bool) {
	for _, t := range req.Tools {
		server := false
		for _, p := range anthropicServerTools {
			server = server || strings.HasPrefix(t.Type, p)
		}
		webSearch = webSearch || strings.HasPrefix(t.Type, "web_search_")
		if !server && t.Name != "" {
			tools = append(tools, offered{name: t.Name})
		}
	}
	return tools, webSearch
}

// anthropicUserTurn reads a user turn's content: a string (plain, its
// textOf) or blocks.
func anthropicUserTurn(content json.RawMessage, plain string) turn {
	if c := bytes.TrimSpace(content); len(c) == 0 || c[0] != '[' {
		return turn{text: userText(content, plain)}
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(content, &blocks)
	var t turn
	var texts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_result":
			t.results = append(t.results, resultText(b.Content))
		}
	}
	t.text = userWords(texts)
	return t
}

var anthropicStop = [...]string{finishStop: "end_turn", finishLength: "max_tokens", finishTool: "tool_use", finishFilter: "refusal"}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	OutputTokens int    `json:"output_tokens"`
	ServiceTier  string `json:"service_tier"`
}

// anthropicUsageFor is Anthropic's usage: input_tokens excludes the tokens
// read from cache.
func anthropicUsageFor(rp reply, output int) *anthropicUsage {
	return &anthropicUsage{
		InputTokens: rp.prompt - rp.cached, CacheReadInputTokens: rp.cached,
		OutputTokens: output, ServiceTier: "standard",
	}
}

type anthropicBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type anthropicMessage struct {
	Model        string           `json:"model"`
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Content      []anthropicBlock `json:"content"`
	StopReason   string           `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	StopDetails  *refusalDetails  `json:"stop_details,omitempty"`
	Usage        *anthropicUsage  `json:"usage,omitempty"`
}

type refusalDetails struct {
	Type        string `json:"type"`
	Category    string `json:"category"`
	Explanation string `json:"explanation"`
}

var refusal = &refusalDetails{Type: "refusal", Category: "cyber", Explanation: "This request was refused due to policy."}

func (s *Server) anthropicMessages(c *call) {
	var req anthropicRequest
	perr := json.Unmarshal(c.body, &req)
	if c.vertex {
		req.Model = c.model // Vertex AI names the model in the URL
	}
	c.model = req.Model
	in, promptBytes := req.intent()
	_, c.webSearch = req.offers()
	if !c.begin() {
		return
	}
	switch {
	case perr != nil:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "There was an issue with the request body: " + perr.Error()})
		return
	case req.Model == "":
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "model: Field required"})
		return
	case req.MaxTokens <= 0:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "max_tokens: Field required"})
		return
	case len(req.Messages) == 0:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "messages: at least one message is required"})
		return
	}
	rp := c.plan(req.Model, promptBytes, req.MaxTokens, in)
	if oc := req.OutputConfig; oc != nil && oc.Format != nil && oc.Format.Type == "json_schema" {
		rp.structured(oc.Format.Schema)
	}
	if tc := req.ToolChoice; tc != nil && tc.Type == "tool" {
		for _, t := range req.Tools {
			if t.Name == tc.Name {
				rp.forcedTool(t.Name, t.InputSchema)
			}
		}
	}
	id := "msg_" + c.requestID()
	c.w.Header().Set("Request-Id", "req_"+c.requestID())
	if req.Stream {
		c.stream(&anthropicStream{id: id, model: req.Model, toolID: "toolu_" + c.requestID(), rp: rp, noUsage: c.fault.NoUsage}, rp)
		return
	}
	out := anthropicMessage{Model: req.Model, ID: id, Type: "message", Role: "assistant", Content: []anthropicBlock{}, StopReason: anthropicStop[rp.finish]}
	switch {
	case rp.tool != "":
		out.Content = append(out.Content, anthropicBlock{Type: "tool_use", ID: "toolu_" + c.requestID(), Name: rp.tool, Input: json.RawMessage(rp.toolArgs())})
	case rp.finish == finishFilter:
		out.StopDetails = refusal
	default:
		out.Content = append(out.Content, anthropicBlock{Type: "text", Text: strp(rp.fullText())})
	}
	if !c.fault.NoUsage {
		out.Usage = anthropicUsageFor(rp, rp.completion())
	}
	b, _ := json.Marshal(out)
	c.writeJSON(http.StatusOK, b)
}

// anthropicStream renders Messages API stream events.
type anthropicStream struct {
	id, model, toolID string
	rp                reply
	noUsage           bool
}

func (s *anthropicStream) preamble(b []byte) []byte {
	b = append(b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":"...)
	b = appendString(b, s.model)
	b = append(b, `,"id":`...)
	b = appendString(b, s.id)
	b = append(b, `,"type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null`...)
	if !s.noUsage {
		u, _ := json.Marshal(anthropicUsageFor(s.rp, 1))
		b = append(b, `,"usage":`...)
		b = append(b, u...)
	}
	b = append(b, "}}\n\nevent: content_block_start\ndata: "...)
	if s.rp.tool != "" {
		b = append(b, `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":`...)
		b = appendString(b, s.toolID)
		b = append(b, `,"name":`...)
		b = appendString(b, s.rp.tool)
		b = append(b, `,"input":{}}}`...)
	} else {
		b = append(b, `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`...)
	}
	return append(b, "\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n"...)
}

func (s *anthropicStream) content(b []byte, _ int, text string) []byte {
	b = append(b, "event: content_block_delta\ndata: "...)
	if s.rp.tool != "" {
		b = append(b, `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`...)
		b = appendString(b, s.rp.toolArgs())
		return append(b, "}}\n\n"...)
	}
	b = append(b, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`...)
	b = appendString(b, text)
	return append(b, "}}\n\n"...)
}

func (s *anthropicStream) finish(b []byte) []byte {
	b = append(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"...)
	b = append(b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\""...)
	b = append(b, anthropicStop[s.rp.finish]...)
	b = append(b, `","stop_sequence":null`...)
	if s.rp.finish == finishFilter {
		d, _ := json.Marshal(refusal)
		b = append(b, `,"stop_details":`...)
		b = append(b, d...)
	}
	b = append(b, '}')
	if !s.noUsage {
		// Cumulative and final, as the real API sends it.
		u := anthropicUsageFor(s.rp, s.rp.completion())
		b = append(b, `,"usage":{"input_tokens":`...)
		b = strconv.AppendInt(b, int64(u.InputTokens), 10)
		b = append(b, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":`...)
		b = strconv.AppendInt(b, int64(u.CacheReadInputTokens), 10)
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, int64(u.OutputTokens), 10)
		b = append(b, '}')
	}
	b = append(b, "}\n\n"...)
	return append(b, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

func (s *anthropicStream) errorEvent(b []byte, status int) []byte {
	if status == 0 {
		return append(b, anthropicStreamError...)
	}
	typ := anthropicErrorTypes[status]
	if typ == "" {
		typ = "api_error"
	}
	ev, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": http.StatusText(status)}})
	b = append(b, "event: error\ndata: "...)
	b = append(b, ev...)
	return append(b, "\n\n"...)
}

var anthropicDefaultModels = []string{"claude-sonnet-4-5", "claude-haiku-4-5"}

func (s *Server) anthropicModels(c *call) {
	if !c.begin() {
		return
	}
	models := s.opts.Models
	if len(models) == 0 {
		models = anthropicDefaultModels
	}
	type model struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
	}
	out := struct {
		Data    []model `json:"data"`
		HasMore bool    `json:"has_more"`
		FirstID string  `json:"first_id"`
		LastID  string  `json:"last_id"`
	}{FirstID: models[0], LastID: models[len(models)-1]}
	for _, m := range models {
		out.Data = append(out.Data, model{Type: "model", ID: m, DisplayName: m, CreatedAt: "2025-09-29T00:00:00Z"})
	}
	b, _ := json.Marshal(out)
	c.writeJSON(http.StatusOK, b)
}
