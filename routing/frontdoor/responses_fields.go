package frontdoor

import (
	"cmp"
	"fmt"
	"strings"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
)

// The Responses door's field table: for every Responses API request field,
// what a deployment gets. A deployment that speaks the Responses API
// natively (OpenAI protocol with the responses_api capability) gets the
// body as sent; every other deployment gets the request translated into
// chat completions, and then the chat field's own decision of its protocol
// applies (the tables of fields_tables.go). A field the translation cannot
// carry skips the deployment with unsupported_parameter{param, protocol};
// nothing is dropped silently. The README's "Responses API fields per
// upstream" is this table (TestResponsesFieldsREADME).

// responsesFieldKind is how the translation carries a Responses field.
type responsesFieldKind int

const (
	// rfChat: becomes the chat field Chat, then that field's decision.
	rfChat responsesFieldKind = iota
	// rfGateway: served by the gateway itself for every translated upstream.
	rfGateway
	// rfNative: only a Responses upstream can carry it.
	rfNative
	// rfStateless: refused with 400 everywhere (the gateway stores nothing).
	rfStateless
)

// ResponsesField is one row of the Responses door's field table.
type ResponsesField struct {
	Name string
	kind responsesFieldKind
	// Chat is the chat-completions field the translation writes (rfChat).
	Chat string
	// Native says what a Responses upstream gets ("" is: forwarded as sent).
	Native string
	// How says what the translation does, in words.
	How string
	// Sample is a request member that sets the field, for the table's test.
	Sample string
	// Refusal is a stateless row's per-protocol cell ("" is "400").
	Refusal string
}

// ResponsesFields is the table, in the README's order.
var ResponsesFields = []ResponsesField{
	{Name: "model", kind: rfChat, Chat: "model", Native: "replaced by the deployment's upstream model", How: "the deployment's upstream model"},
	{Name: "input", kind: rfChat, Chat: "messages", How: "a string → one user message; message items (roles user, assistant, system, developer; `input_text`, `output_text`, `refusal` parts → text, `input_image` by URL → `image_url`) → messages; `function_call` items → the assistant message's `tool_calls` (consecutive calls joined); `function_call_output` → a `tool` message (text parts joined). `reasoning` items are not re-sent (chat completions has no place for earlier reasoning). `input_file`, `input_audio`, images by `file_id`, images in a tool output and built-in tool items are refused; `item_reference` → 400 (stateless)",
		Sample: `"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}]`},
	{Name: "instructions", kind: rfChat, Chat: "messages", How: "a first system message", Sample: `"instructions":"be brief"`},
	{Name: "stream", kind: rfChat, Chat: "stream", Native: "set by the gateway (false, or true for a stream)", How: "the chat stream, turned into Responses events by the gateway", Sample: `"stream":true`},
	{Name: "stream_options", kind: rfGateway, How: "`include_obfuscation` accepted; the gateway adds no obfuscation padding", Sample: `"stream_options":{"include_obfuscation":false}`},
	{Name: "tools", kind: rfChat, Chat: "tools", How: "function tools → `tools[].function` (`strict` as sent: the Responses API's default of true is not imposed on chat-completions vendors); built-in tools (`web_search`, `file_search`, `mcp`, `custom`, …) refused", Sample: `"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]`},
	{Name: "tool_choice", kind: rfChat, Chat: "tool_choice", How: "`none`, `required`, a named function; `allowed_tools` and built-in tool choices refused", Sample: `"tools":[{"type":"function","name":"f"}],"tool_choice":"required"`},
	{Name: "parallel_tool_calls", kind: rfChat, Chat: "parallel_tool_calls", How: "false → `parallel_tool_calls` false", Sample: `"parallel_tool_calls":false`},
	{Name: "text.format", kind: rfChat, Chat: "response_format", How: "`json_object`, `json_schema` (name, schema, strict, description) → `response_format`", Sample: `"text":{"format":{"type":"json_object"}}`},
	{Name: "text.verbosity", kind: rfChat, Chat: "verbosity", How: "`verbosity`", Sample: `"text":{"verbosity":"low"}`},
	{Name: "reasoning.effort", kind: rfChat, Chat: "reasoning_effort", How: "`reasoning_effort` (and the request goes to the deep tier)", Sample: `"reasoning":{"effort":"high"}`},
	{Name: "reasoning.summary", kind: rfGateway, How: "no summary is generated: the upstream's reasoning text, when it sends any, comes back as a `reasoning` item with `reasoning_text` content", Sample: `"reasoning":{"summary":"auto"}`},
	{Name: "max_output_tokens", kind: rfChat, Chat: "max_completion_tokens", How: "`max_completion_tokens`", Sample: `"max_output_tokens":64`},
	{Name: "temperature", kind: rfChat, Chat: "temperature", How: "`temperature`", Sample: `"temperature":0.5`},
	{Name: "top_p", kind: rfChat, Chat: "top_p", How: "`top_p`", Sample: `"top_p":0.5`},
	{Name: "top_logprobs", kind: rfNative, How: "log probabilities are not translated back", Sample: `"top_logprobs":2`},
	{Name: "max_tool_calls", kind: rfNative, How: "limits built-in tool calls, which only a Responses upstream runs", Sample: `"max_tool_calls":3`},
	{Name: "metadata", kind: rfGateway, How: "echoed in the response object by the gateway (all it does without storage); not sent upstream", Sample: `"metadata":{"k":"v"}`},
	{Name: "user", kind: rfChat, Chat: "user", How: "`user`", Sample: `"user":"u1"`},
	{Name: "safety_identifier", kind: rfChat, Chat: "safety_identifier", How: "`safety_identifier`", Sample: `"safety_identifier":"u1"`},
	{Name: "prompt_cache_key", kind: rfGateway, How: "echoed, not sent: a hint for OpenAI's prompt cache that changes no answer (Codex-style clients always send one; Anthropic and Gemini cache by their own means)", Sample: `"prompt_cache_key":"k"`},
	{Name: "prompt_cache_retention", kind: rfGateway, How: "not sent: a prompt-cache setting that changes no answer", Sample: `"prompt_cache_retention":"24h"`},
	{Name: "service_tier", kind: rfChat, Chat: "service_tier", How: "`service_tier`", Sample: `"service_tier":"flex"`},
	{Name: "include", kind: rfGateway, How: "`reasoning.encrypted_content` accepted (a translated upstream has no encrypted reasoning to give); anything else refused", Sample: `"include":["reasoning.encrypted_content"]`},
	{Name: "truncation", kind: rfNative, How: "`auto` refused (the gateway does not truncate); `disabled` is the default", Sample: `"truncation":"auto"`},
	{Name: "prompt", kind: rfNative, How: "a prompt template stored at OpenAI", Sample: `"prompt":{"id":"pmpt_1"}`},
	{Name: "store", kind: rfStateless, Native: "omitted or false: sent as false; true: 400 `stateless_gateway`", How: "`true` → 400 `stateless_gateway`; omitted (OpenAI's default is true) or false: served, nothing stored", Sample: `"store":true`, Refusal: "400 if true"},
	{Name: "previous_response_id", kind: rfStateless, How: "400 `stateless_gateway`: send the whole conversation in `input`", Sample: `"previous_response_id":"resp_1"`},
	{Name: "conversation", kind: rfStateless, How: "400 `stateless_gateway`", Sample: `"conversation":"conv_1"`},
	{Name: "background", kind: rfStateless, How: "`true` → 400 `stateless_gateway` (background responses are stored for polling)", Sample: `"background":true`, Refusal: "400 if true"},
	{Name: adapter.AnyOtherField, kind: rfNative, How: "not a field this gateway translates", Sample: `"context_management":[{"type":"compaction"}]`},
}

// responsesNative reports whether a deployment with caps (of the OpenAI
// protocol) serves the Responses door natively: it declares responses_api.
func responsesNative(caps config.Capabilities) bool { return caps.ResponsesAPI }

// responsesParams names the chat fields of the translation by the Responses
// fields they come from, for skip reasons and errors.
var responsesParams = map[string]string{
	"messages":              "input",
	"max_completion_tokens": "max_output_tokens",
	"max_tokens":            "max_output_tokens",
	"response_format":       "text.format",
	"reasoning_effort":      "reasoning.effort",
	"verbosity":             "text.verbosity",
	"stream_options":        "stream",
}

// ResponsesFieldsMarkdown renders the table as the README shows it: the
// native column, the translation, then the chat field's decision per
// protocol.
func ResponsesFieldsMarkdown() string {
	var b strings.Builder
	b.WriteString("| field | OpenAI with `responses_api` (native) | translated into chat completions | OpenAI chat | Anthropic | Gemini |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, f := range ResponsesFields {
		name := "`" + f.Name + "`"
		if f.Name == adapter.AnyOtherField {
			name = "any other field"
		}
		native := f.Native
		if native == "" {
			native = "forwarded as sent"
		}
		if f.kind == rfStateless && f.Native == "" {
			native = "400 `stateless_gateway`, as translated"
		}
		how := f.How
		switch chat := "`" + f.Chat + "`"; {
		case f.kind != rfChat:
		case strings.HasPrefix(how, chat):
			how = "→ " + how
		case !strings.Contains(how, chat):
			how = "→ " + chat + ": " + how
		}
		fmt.Fprintf(&b, "| %s | %s | %s |", name, esc(native), esc(how))
		for _, p := range []config.Protocol{config.ProtocolOpenAI, config.ProtocolAnthropic, config.ProtocolGemini} {
			d := string(f.decision(p))
			if f.kind == rfStateless {
				d = cmp.Or(f.Refusal, "400")
			}
			fmt.Fprintf(&b, " %s |", d)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// decision is what a translated deployment of protocol p does with the
// field: the chat field's decision, the gateway's own, or a refusal.
func (f ResponsesField) decision(p config.Protocol) adapter.Decision {
	switch f.kind {
	case rfGateway:
		return adapter.Translate
	case rfNative, rfStateless:
		return adapter.Refuse
	}
	rule, ok := adapter.FieldRuleOf(p, f.Chat)
	if !ok {
		return adapter.Refuse
	}
	return rule.Decision
}
