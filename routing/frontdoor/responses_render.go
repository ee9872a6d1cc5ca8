package frontdoor

import (
	"encoding/json"
	"strings"
	"switchyard/routing/adapter"

	"github.com/tidwall/gjson"
)

// Rendering Responses API objects from a chat completion: the answer of a
// translated upstream, turned into the Response object the Responses API
// returns (output items and usage). The stream's events (responses_events.go)
// build the same object.

// ResponseIDs names a response and its output items. Base is unique per
// request (the gateway's request id): the response is resp_<Base>, its
// message msg_<Base>, its reasoning rs_<Base>, its function calls
// fc_<Base>_<n>.
type ResponseIDs struct{ Base string }

func (ids ResponseIDs) response() string  { return "resp_" + ids.Base }
func (ids ResponseIDs) message() string   { return "msg_" + ids.Base }
func (ids ResponseIDs) reasoning() string { return "rs_" + ids.Base }
func (ids ResponseIDs) call(n int) string { return "fc_" + ids.Base + "_" + itoa(n) }

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// ResponseIDBase makes an id base from a request id: its letters and
// digits (a UUID without its dashes).
func ResponseIDBase(requestID string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return -1
	}, requestID)
}

// Response statuses and the reasons an answer is incomplete.
const (
	responseCompleted  = "completed"
	responseIncomplete = "incomplete"
	responseInProgress = "in_progress"
	responseFailed     = "failed"
)

// responseObject is the Responses API's Response, members in the API's
// order. Raw members are the request's settings echoed (null when unset,
// unless a default is filled in by newResponseObject).
type responseObject struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	CompletedAt        *int64             `json:"completed_at"`
	Error              *responseError     `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Instructions       json.RawMessage    `json:"instructions"`
	MaxOutputTokens    json.RawMessage    `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []any              `json:"output"`
	ParallelToolCalls  json.RawMessage    `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          responseReasoning  `json:"reasoning"`
	ServiceTier        json.RawMessage    `json:"service_tier"`
	Store              bool               `json:"store"`
	Temperature        json.RawMessage    `json:"temperature"`
	Text               responseText       `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              json.RawMessage    `json:"tools"`
	TopLogprobs        json.RawMessage    `json:"top_logprobs"`
	TopP               json.RawMessage    `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *responseUsage     `json:"usage"`
	User               json.RawMessage    `json:"user"`
	Metadata           json.RawMessage    `json:"metadata"`
	SafetyIdentifier   json.RawMessage    `json:"safety_identifier,omitempty"`
	PromptCacheKey     json.RawMessage    `json:"prompt_cache_key,omitempty"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type responseReasoning struct {
	Effort  *string         `json:"effort"`
	Summary json.RawMessage `json:"summary"`
}

type responseText struct {
	Format    json.RawMessage `json:"format"`
	Verbosity string          `json:"verbosity,omitempty"`
}

type responseUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// Output items and their content parts.
type messageItem struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Status  string `json:"status"`
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type outputTextPart struct {
	Type        string `json:"type"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
	Text        string `json:"text"`
}

type refusalPart struct {
	Type    string `json:"type"`
	Refusal string `json:"refusal"`
}

type functionCallItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// customToolCallItem is a custom tool's call: its input as one string.
type customToolCallItem struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status"`
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	Input  string `json:"input"`
}

// callItem is the output item of a translated tool call: a function call
// (named back into its namespace), or a custom tool's call whose input is
// the function's one string argument.
func callItem(r *ResponsesRequest, id, status, callID, name, args string) any {
	tn, ok := r.Tools[name]
	if ok && tn.Custom {
		return customToolCallItem{ID: id, Type: "custom_tool_call", Status: status, CallID: callID, Name: tn.Name, Input: customInputOf(args)}
	}
	it := functionCallItem{ID: id, Type: "function_call", Status: status, Arguments: args, CallID: callID, Name: name}
	if ok {
		it.Name, it.Namespace = tn.Name, tn.Namespace
	}
	return it
}

// customInputOf is a custom tool's input from its function's arguments
// ({"input": "…"}); arguments of another shape are passed whole.
func customInputOf(args string) string {
	if v := gjson.Get(args, "input"); v.Type == gjson.String {
		return v.Str
	}
	return args
}

type reasoningItem struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Summary []any           `json:"summary"`
	Content []reasoningPart `json:"content,omitempty"`
}

type reasoningPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func newTextPart(text string) outputTextPart {
	return outputTextPart{Type: "output_text", Annotations: []any{}, Logprobs: []any{}, Text: text}
}

var (
	rawNull  = json.RawMessage("null")
	rawTrue  = json.RawMessage("true")
	rawOne   = json.RawMessage("1.0")
	rawZero  = json.RawMessage("0")
	rawAuto  = json.RawMessage(`"auto"`)
	rawEmpty = json.RawMessage("[]")
	rawObj   = json.RawMessage("{}")
	rawText  = json.RawMessage(`{"type":"text"}`)
	rawDeflt = json.RawMessage(`"default"`)
)

func orRaw(v, def json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return def
	}
	return v
}

// newResponseObject is the response for r with its settings echoed and no
// output yet.
func newResponseObject(r *ResponsesRequest, ids ResponseIDs, model string, created int64, status string) *responseObject {
	e := r.Echo
	o := &responseObject{
		ID: ids.response(), Object: "response", CreatedAt: created, Status: status,
		Instructions: orRaw(e.Instructions, rawNull), MaxOutputTokens: orRaw(e.MaxOutputTokens, rawNull),
		Model: model, Output: []any{}, ParallelToolCalls: orRaw(e.ParallelToolCalls, rawTrue),
		Reasoning:   responseReasoning{Summary: orRaw(e.ReasoningSummary, rawNull)},
		ServiceTier: orRaw(e.ServiceTier, rawDeflt), Temperature: orRaw(e.Temperature, rawOne),
		Text:       responseText{Format: orRaw(e.TextFormat, rawText), Verbosity: e.Verbosity},
		ToolChoice: orRaw(e.ToolChoice, rawAuto), Tools: orRaw(e.Tools, rawEmpty),
		TopLogprobs: orRaw(e.TopLogprobs, rawZero), TopP: orRaw(e.TopP, rawOne), Truncation: "disabled",
		User: orRaw(e.User, rawNull), Metadata: orRaw(e.Metadata, rawObj),
		SafetyIdentifier: e.SafetyIdentifier, PromptCacheKey: e.PromptCacheKey,
	}
	if e.ReasoningEffort != "" {
		eff := e.ReasoningEffort
		o.Reasoning.Effort = &eff
	}
	return o
}

// finish sets the terminal status from a chat finish reason and the usage.
func (o *responseObject) finish(finishReason string, u adapter.Usage, at int64) {
	o.Status = responseCompleted
	switch finishReason {
	case "length":
		o.Status, o.IncompleteDetails = responseIncomplete, &incompleteDetails{Reason: "max_output_tokens"}
	case "content_filter":
		o.Status, o.IncompleteDetails = responseIncomplete, &incompleteDetails{Reason: "content_filter"}
	}
	if o.Status == responseCompleted {
		o.CompletedAt = &at
	}
	o.Usage = newResponseUsage(u)
}

func newResponseUsage(u adapter.Usage) *responseUsage {
	if !u.Known {
		return nil
	}
	ru := &responseUsage{InputTokens: u.Prompt, OutputTokens: u.Completion, TotalTokens: u.Prompt + u.Completion}
	ru.InputTokensDetails.CachedTokens = u.Cached
	ru.OutputTokensDetails.ReasoningTokens = u.Reasoning
	return ru
}

// ResponsesFromChat renders a chat completion (OpenAI chat.completion JSON,
// as every adapter returns it) as the Response object of r: a reasoning
// item when the upstream gave reasoning text, a message item with the text
// or refusal, a function_call item per tool call, and the usage. model is
// the logic model that served; created the response's Unix time.
func ResponsesFromChat(r *ResponsesRequest, chat []byte, ids ResponseIDs, model string, created int64, u adapter.Usage) ([]byte, error) {
	o := newResponseObject(r, ids, model, created, responseCompleted)
	var finish string
	var choice gjson.Result
	gjson.GetBytes(chat, "choices").ForEach(func(_, c gjson.Result) bool {
		choice = c
		return false // the first choice answers; Responses has no n
	})
	if !choice.Exists() {
		return nil, &adapter.Error{Class: adapter.ClassServer, Code: "malformed_response", Message: "the upstream sent a completion without choices"}
	}
	finish = choice.Get("finish_reason").Str
	msg := choice.Get("message")
	if rt := reasoningText(msg); rt != "" {
		o.Output = append(o.Output, reasoningItem{ID: ids.reasoning(), Type: "reasoning", Summary: []any{},
			Content: []reasoningPart{{Type: "reasoning_text", Text: rt}}})
	}
	var parts []any
	if c := msg.Get("content"); c.Type == gjson.String && c.Str != "" {
		parts = append(parts, newTextPart(c.Str))
	}
	if rf := msg.Get("refusal"); rf.Type == gjson.String && rf.Str != "" {
		parts = append(parts, refusalPart{Type: "refusal", Refusal: rf.Str})
	}
	if parts != nil {
		o.Output = append(o.Output, messageItem{ID: ids.message(), Type: "message", Status: responseCompleted, Role: "assistant", Content: parts})
	}
	n := 0
	msg.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		o.Output = append(o.Output, callItem(r, ids.call(n), responseCompleted, tc.Get("id").Str, tc.Get("function.name").Str, tc.Get("function.arguments").Str))
		n++
		return true
	})
	if parts == nil && n == 0 && finish != "length" {
		// An empty answer is still a message, as OpenAI sends it.
		o.Output = append(o.Output, messageItem{ID: ids.message(), Type: "message", Status: responseCompleted, Role: "assistant", Content: []any{newTextPart("")}})
	}
	o.finish(finish, u, created)
	return json.Marshal(o)
}

// reasoningText is a chat message's (or delta's) reasoning text: DeepSeek's
// and the adapters' reasoning_content, or the reasoning some
// OpenAI-compatible servers send.
func reasoningText(m gjson.Result) string {
	if v := m.Get("reasoning_content"); v.Type == gjson.String {
		return v.Str
	}
	if v := m.Get("reasoning"); v.Type == gjson.String {
		return v.Str
	}
	return ""
}
