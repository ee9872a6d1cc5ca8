package frontdoor

import (
	"switchyard/routing/adapter"
	"switchyard/routing/config"
)

// ResponsesPolicy is the Responses door's field policy. A deployment that
// speaks the Responses API natively (OpenAI protocol with the
// responses_api capability) gets the body as sent; every other deployment
// gets the request translated into chat completions, and these rows say
// what the translation does (a Chat row: then the chat field's own
// decision of the deployment's protocol applies).
var ResponsesPolicy = []DoorField{
	{Field: "model", Chat: "model", Native: "replaced by the deployment's upstream model", How: "the deployment's upstream model"},
	{Field: "input", Chat: "messages", How: "a string → one user message; message items (roles user, assistant, system, developer; `input_text`, `output_text`, `refusal` parts → text, `input_image` by URL → `image_url`) → messages; `function_call` and `custom_tool_call` items → the assistant message's `tool_calls` (consecutive calls joined; a namespaced call by its flattened name); `function_call_output` and `custom_tool_call_output` → a `tool` message (text parts joined); `item_reference` → 400 (stateless)",
		Sample: `"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}]`},
	{Field: "input[] (reasoning)", Decision: adapter.Drop, How: "earlier reasoning: chat completions has no place for it",
		Sample: `"input":[{"role":"user","content":"hi"},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"x"},{"role":"user","content":"go"}]`},
	{Field: "input[] (web_search_call)", Decision: adapter.Drop, How: "an earlier hosted web search: its results are in the conversation",
		Sample: `"input":[{"role":"user","content":"hi"},{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}},{"role":"user","content":"go"}]`},
	{Field: "input[].type", Decision: adapter.Refuse, How: "`input_file`, `input_audio`, images by `file_id`, images in a tool output and other built-in tool items have no counterpart",
		Sample: `"input":[{"type":"computer_call","call_id":"c","action":{}}]`},
	{Field: "instructions", Chat: "messages", How: "a first system message", Sample: `"instructions":"be brief"`},
	{Field: "stream", Chat: "stream", Native: "set by the gateway (false, or true for a stream)", How: "the chat stream, turned into Responses events by the gateway", Sample: `"stream":true`},
	{Field: "stream_options", Decision: adapter.Translate, How: "`include_obfuscation` accepted; the gateway adds no obfuscation padding", Sample: `"stream":true,"stream_options":{"include_obfuscation":false}`},
	{Field: "tools", Chat: "tools", How: "function tools → `tools[].function` (`strict` as sent: the Responses API's default of true is not imposed on chat-completions vendors); a namespace's functions → function tools named `<namespace>__<name>`, named back on the way out; custom tools → functions taking their input as one string, answered as `custom_tool_call` items",
		Sample: `"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]`},
	{Field: "tools[].format", Decision: adapter.Drop, How: "a custom tool's grammar cannot be enforced by another vendor: it is told to the model in the tool's description",
		Sample: `"tools":[{"type":"custom","name":"apply_patch","format":{"type":"grammar","syntax":"lark","definition":"start: \"x\""}}]`},
	{Field: "tools[] (web_search)", Chat: "web_search_options", How: "the hosted web search → the deployment's own (Anthropic's web search tool, Gemini's google_search, OpenAI's web_search_options)",
		Sample: `"tools":[{"type":"web_search"}]`},
	{Field: "tools[] (tool_search)", Decision: adapter.Drop, How: "tool search finds deferred tools; a translation offers every tool directly",
		Sample: `"tools":[{"type":"tool_search","execution":"client","parameters":{"type":"object"}}]`},
	{Field: "tools[].type", Decision: adapter.Refuse, How: "`file_search`, `mcp`, computer use, code interpreter, image generation and other built-in tools have no counterpart",
		Sample: `"tools":[{"type":"file_search","vector_store_ids":["v"]}]`},
	{Field: "tool_choice", Chat: "tool_choice", How: "`none`, `required`, a named function; `allowed_tools` and built-in tool choices refused",
		Sample: `"tools":[{"type":"function","name":"f"}],"tool_choice":"required"`},
	{Field: "parallel_tool_calls", Chat: "parallel_tool_calls", How: "false → `parallel_tool_calls` false",
		Sample: `"tools":[{"type":"function","name":"f"}],"parallel_tool_calls":false`},
	{Field: "text.format", Chat: "response_format", How: "`json_object`, `json_schema` (name, schema, strict, description) → `response_format`", Sample: `"text":{"format":{"type":"json_object"}}`},
	{Field: "text.verbosity", Chat: "verbosity", How: "`verbosity`", Sample: `"text":{"verbosity":"low"}`},
	{Field: "reasoning.effort", Chat: "reasoning_effort", How: "`reasoning_effort` (and the request goes to the deep tier)", Sample: `"reasoning":{"effort":"high"}`},
	{Field: "reasoning.summary", Decision: adapter.Translate, How: "no summary is generated: the upstream's reasoning text, when it sends any, comes back as a `reasoning` item with `reasoning_text` content", Sample: `"reasoning":{"summary":"auto"}`},
	{Field: "max_output_tokens", Chat: "max_completion_tokens", How: "`max_completion_tokens`", Sample: `"max_output_tokens":64`},
	{Field: "temperature", Chat: "temperature", How: "`temperature`", Sample: `"temperature":0.5`},
	{Field: "top_p", Chat: "top_p", How: "`top_p`", Sample: `"top_p":0.5`},
	{Field: "top_logprobs", Decision: adapter.Refuse, How: "log probabilities are not translated back", Sample: `"top_logprobs":2`},
	{Field: "max_tool_calls", Decision: adapter.Refuse, How: "limits built-in tool calls, which only a Responses upstream runs", Sample: `"max_tool_calls":3`},
	{Field: "metadata", Decision: adapter.Translate, How: "echoed in the response object by the gateway (all it does without storage); not sent upstream", Sample: `"metadata":{"k":"v"}`},
	{Field: "user", Chat: "user", How: "`user`", Sample: `"user":"u1"`},
	{Field: "safety_identifier", Chat: "safety_identifier", How: "`safety_identifier`", Sample: `"safety_identifier":"u1"`},
	{Field: "prompt_cache_key", Chat: "prompt_cache_key", How: "`prompt_cache_key` (also echoed)", Sample: `"prompt_cache_key":"k"`},
	{Field: "prompt_cache_retention", Chat: "prompt_cache_retention", How: "`prompt_cache_retention`", Sample: `"prompt_cache_retention":"24h"`},
	{Field: "service_tier", Chat: "service_tier", How: "`service_tier`", Sample: `"service_tier":"flex"`},
	{Field: "include (reasoning.encrypted_content)", Decision: adapter.Drop, How: "a translated upstream has no encrypted reasoning to give", Sample: `"include":["reasoning.encrypted_content"]`},
	{Field: "include[]", Decision: adapter.Refuse, How: "other output a translated upstream cannot produce (log probabilities, search sources, …)", Sample: `"include":["message.output_text.logprobs"]`},
	{Field: "truncation", Decision: adapter.Refuse, How: "`auto` refused (the gateway does not truncate); `disabled` is the default", Sample: `"truncation":"auto"`},
	{Field: "prompt", Decision: adapter.Refuse, How: "a prompt template stored at OpenAI", Sample: `"prompt":{"id":"pmpt_1"}`},
	{Field: "store", Stateless: true, Native: "omitted or false: sent as false; true: 400 `stateless_gateway`", How: "`true` → 400 `stateless_gateway`; omitted (OpenAI's default is true) or false: served, nothing stored", Sample: `"store":true`, Refusal: "400 if true"},
	{Field: "previous_response_id", Stateless: true, Native: "400 `stateless_gateway`", How: "400 `stateless_gateway`: send the whole conversation in `input`", Sample: `"previous_response_id":"resp_1"`},
	{Field: "conversation", Stateless: true, Native: "400 `stateless_gateway`", How: "400 `stateless_gateway`", Sample: `"conversation":"conv_1"`},
	{Field: "background", Stateless: true, Native: "400 `stateless_gateway`", How: "`true` → 400 `stateless_gateway` (background responses are stored for polling)", Sample: `"background":true`, Refusal: "400 if true"},
	{Field: adapter.AnyOtherField, Decision: adapter.Drop, How: "not a field this gateway translates: `client_metadata`, fields newer than this build (a strict deployment refuses it)", Sample: `"client_metadata":{"k":"v"}`},
}

// responsesNative reports whether a deployment with caps (of the OpenAI
// protocol) serves the Responses door natively: it declares responses_api.
func responsesNative(caps config.Capabilities) bool { return caps.ResponsesAPI }

// responsesParams names the chat fields of the translation by the Responses
// fields they come from, for skip reasons, errors and dropped-field records.
var responsesParams = map[string]string{
	"messages":              "input",
	"max_completion_tokens": "max_output_tokens",
	"max_tokens":            "max_output_tokens",
	"response_format":       "text.format",
	"reasoning_effort":      "reasoning.effort",
	"verbosity":             "text.verbosity",
	"stream_options":        "stream",
	"web_search_options":    "tools[] (web_search)",
}
