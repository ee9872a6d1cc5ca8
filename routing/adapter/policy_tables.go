package adapter

import "switchyard/routing/config"

// The field tables: for every OpenAI chat request field (and the canonical
// hints), what each adapter does on a translated path when a caller sets it
// to anything but OpenAI's default (n 1, logprobs false,
// parallel_tool_calls true, an empty metadata object, …). The manual's
// "Request fields" page (static/manual/fields.md) is these tables;
// TestFieldTables walks every row against the adapter's real behaviour.

// Fields is the OpenAI adapter's table. A chat-completions caller reaches
// an OpenAI-protocol vendor natively (its body as sent, only the model and
// the stream settings ours); these rows apply to what the Messages and
// Responses doors translate into chat completions.
func (OpenAI) Fields() FieldTable {
	t := FieldTable{}
	for _, f := range ChatFields {
		t[f] = FieldRule{Decision: Pass, How: "forwarded as sent"}
	}
	t["model"] = FieldRule{Decision: Translate, How: "replaced by the deployment's upstream model"}
	t["stream"] = FieldRule{Decision: Translate, How: "set by the gateway (false, or true for a stream)"}
	t["stream_options"] = FieldRule{Decision: Translate, How: "include_usage always asked upstream; the caller's other options forwarded; the usage chunk reaches the caller only if asked. A provider with the `no_stream_options` quirk gets none: its tokens are counted by the gateway when it reports none (marked estimated)"}
	t["max_completion_tokens"] = FieldRule{Decision: Pass, How: "forwarded as sent; as max_tokens (replacing one sent beside it) to a provider with the `max_tokens` quirk"}
	t["messages"] = FieldRule{Decision: Pass, How: "forwarded as sent; developer messages as system messages to a provider with the `no_developer_role` quirk"}
	t["web_search_options"] = FieldRule{Decision: Pass, How: "forwarded as sent; refused when translated for a deployment without the web search capability (most compatible vendors would ignore it)",
		RefuseIf: func(r *ChatRequest, caps config.Capabilities) bool { return r.Native != nil && !caps.WebSearch }}
	t["top_k"] = FieldRule{Decision: Drop, How: "OpenAI's chat API has no top_k (a chat-completions caller reaches a compatible server that takes it natively)"}
	t["effort"] = FieldRule{Decision: Translate, How: "reasoning_effort (max → high) on a deployment with the thinking capability; dropped on others",
		DropIf: func(_ *ChatRequest, caps config.Capabilities) bool { return !caps.Thinking }}
	t[AnyOtherField] = FieldRule{Decision: Pass, How: "forwarded as sent"}
	return t
}

// thinkingOn reports whether r turns on Anthropic's extended thinking
// (enabled, or adaptive: the model may think).
func thinkingOn(r *ChatRequest) bool { return r.WantsReasoning() || r.Adaptive() }

// forcedToolChoice reports a tool_choice of "required" or a named function.
func forcedToolChoice(r *ChatRequest) bool {
	tc, err := parseVendorToolChoice(r.ToolChoice)
	return err == nil && (tc.Mode == "required" || tc.Mode == "function")
}

// noWebSearch: the deployment declares no hosted web search.
func noWebSearch(_ *ChatRequest, caps config.Capabilities) bool { return !caps.WebSearch }

// Rule constructors for the tables below.
func refuse(why string) FieldRule { return FieldRule{Decision: Refuse, How: why} }
func drop(why string) FieldRule   { return FieldRule{Decision: Drop, How: why} }

// Fields is the Anthropic adapter's table.
func (Anthropic) Fields() FieldTable {
	return FieldTable{
		"model":                 {Decision: Translate, How: "model: the deployment's upstream model"},
		"messages":              {Decision: Translate, How: "system and developer messages → system; user, assistant and tool messages → alternating turns of text, image, tool_use and tool_result blocks"},
		"stream":                {Decision: Translate, How: "stream"},
		"stream_options":        {Decision: Translate, How: "honoured by the gateway: a stream that asks for include_usage ends with the usage chunk (estimated if Anthropic sent none)"},
		"max_tokens":            {Decision: Translate, How: "max_tokens (Anthropic requires one: 4096 when the caller sets none)"},
		"max_completion_tokens": {Decision: Translate, How: "max_tokens (wins over max_tokens)"},
		"temperature": {Decision: Translate, How: "temperature; refused above 1 (Anthropic's range is 0–1) and, with thinking on, unless 1",
			RefuseIf: func(r *ChatRequest, _ config.Capabilities) bool {
				return r.Temperature != nil && (*r.Temperature > 1 || thinkingOn(r) && *r.Temperature != 1)
			}},
		"top_p": {Decision: Translate, How: "top_p, sent beside temperature too (newer models refuse the pair; top_p 1, OpenAI's default, is then not sent); refused below 0.95 with thinking on",
			RefuseIf: func(r *ChatRequest, _ config.Capabilities) bool {
				return r.TopP != nil && thinkingOn(r) && *r.TopP < 0.95
			}},
		"stop":  {Decision: Translate, How: "stop_sequences"},
		"tools": {Decision: Translate, How: "tools[].input_schema"},
		"tool_choice": {Decision: Translate, How: `tool_choice: auto, any ("required"), none, tool (a named function); refused when forced ("required" or a function) with thinking on`,
			RefuseIf: func(r *ChatRequest, _ config.Capabilities) bool { return thinkingOn(r) && forcedToolChoice(r) }},
		"reasoning_effort": {Decision: Translate, How: "thinking.budget_tokens (minimal 1024, low 2048, medium 8192, high 16384)"},
		"thinking":         {Decision: Translate, How: "thinking (enabled with its budget, or adaptive)"},
		"response_format": {Decision: Translate, How: "json_schema on a deployment with the structured_output capability → output_config.format; otherwise (and json_object) a forced tool call whose arguments become the message content; refused then together with tools or thinking",
			RefuseIf: func(r *ChatRequest, caps config.Capabilities) bool {
				return !anthropicNativeFormat(r, caps) && (len(r.Tools) > 0 || thinkingOn(r))
			}},
		"user": {Decision: Translate, How: "metadata.user_id; refused when safety_identifier names someone else",
			RefuseIf: func(r *ChatRequest, _ config.Capabilities) bool {
				return r.SafetyIdentifier != "" && r.SafetyIdentifier != r.User
			}},
		"safety_identifier":   {Decision: Translate, How: "metadata.user_id"},
		"n":                   {Decision: Translate, How: "fan-out: n concurrent Messages calls, call i answers choice i; usage summed"},
		"parallel_tool_calls": {Decision: Translate, How: "false → tool_choice.disable_parallel_tool_use"},
		"top_k":               {Decision: Translate, How: "top_k"},
		"web_search_options": {Decision: Translate, How: "the web search server tool on a deployment with the web search capability; refused on others",
			RefuseIf: noWebSearch},
		"seed":                   drop("Anthropic has no sampling seed: the answer is a sample all the same"),
		"frequency_penalty":      drop("Anthropic has no frequency penalty, a sampling tweak"),
		"presence_penalty":       drop("Anthropic has no presence penalty, a sampling tweak"),
		"logit_bias":             refuse("Anthropic has no logit bias: tokens the caller banned could appear"),
		"logprobs":               refuse("Anthropic returns no log probabilities"),
		"top_logprobs":           refuse("Anthropic returns no log probabilities"),
		"modalities":             refuse("Anthropic answers in text only"),
		"audio":                  refuse("Anthropic has no audio output"),
		"prediction":             drop("predicted outputs only speed OpenAI up"),
		"service_tier":           drop("OpenAI's service tiers do not exist at Anthropic"),
		"store":                  drop("Anthropic stores no completions; the answer is the same"),
		"metadata":               drop("request metadata is for OpenAI's dashboards"),
		"functions":              refuse("deprecated; send tools"),
		"function_call":          refuse("deprecated; send tool_choice"),
		"verbosity":              drop("a length hint Anthropic has no setting for"),
		"prompt_cache_key":       drop("Anthropic caches by cache_control blocks, not by key"),
		"prompt_cache_retention": drop("Anthropic caches by cache_control blocks, not by retention"),
		"effort":                 {Decision: Translate, How: "output_config.effort"},
		AnyOtherField:            drop("not an OpenAI field this gateway translates (a strict deployment refuses it)"),
	}
}

// Fields is the Gemini adapter's table.
func (Gemini) Fields() FieldTable {
	return FieldTable{
		"model":                 {Decision: Translate, How: "the URL's model: the deployment's upstream model"},
		"messages":              {Decision: Translate, How: "leading system and developer messages → systemInstruction, later ones folded into the next user turn as marked instructions; user and tool messages → user turns (tool results as functionResponse), assistant messages → model turns (tool calls as functionCall)"},
		"stream":                {Decision: Translate, How: "streamGenerateContent?alt=sse"},
		"stream_options":        {Decision: Translate, How: "honoured by the gateway: a stream that asks for include_usage ends with the usage chunk (estimated if Gemini sent none)"},
		"max_tokens":            {Decision: Translate, How: "generationConfig.maxOutputTokens (plus the thinking budget when thinking is on)"},
		"max_completion_tokens": {Decision: Translate, How: "generationConfig.maxOutputTokens (wins over max_tokens)"},
		"temperature":           {Decision: Translate, How: "generationConfig.temperature"},
		"top_p":                 {Decision: Translate, How: "generationConfig.topP"},
		"top_k":                 {Decision: Translate, How: "generationConfig.topK"},
		"stop":                  {Decision: Translate, How: "generationConfig.stopSequences"},
		"tools":                 {Decision: Translate, How: "tools[].functionDeclarations, the JSON Schema rewritten to Gemini's subset"},
		"tool_choice":           {Decision: Translate, How: "toolConfig.functionCallingConfig: AUTO, ANY, NONE, ANY with allowedFunctionNames"},
		"reasoning_effort":      {Decision: Translate, How: "generationConfig.thinkingConfig.thinkingBudget"},
		"thinking":              {Decision: Translate, How: "generationConfig.thinkingConfig (adaptive: a dynamic budget on a deployment with the thinking capability)"},
		"response_format":       {Decision: Translate, How: "generationConfig.responseMimeType application/json, and responseJsonSchema for json_schema"},
		"n":                     {Decision: Translate, How: "generationConfig.candidateCount; candidate i answers choice i"},
		"seed":                  {Decision: Translate, How: "generationConfig.seed"},
		"frequency_penalty":     {Decision: Translate, How: "generationConfig.frequencyPenalty"},
		"presence_penalty":      {Decision: Translate, How: "generationConfig.presencePenalty"},
		"parallel_tool_calls": {Decision: Drop, How: "Gemini cannot be told to call one function at a time: dropped when the request offers at most one tool (the answer stays valid), refused otherwise",
			RefuseIf: func(r *ChatRequest, _ config.Capabilities) bool { return len(r.Tools) > 1 }},
		"web_search_options": {Decision: Translate, How: "the google_search tool on a deployment with the web search capability; refused on others",
			RefuseIf: noWebSearch},
		"user":                   drop("Gemini's API has no end-user identifier"),
		"safety_identifier":      drop("Gemini's API has no end-user identifier"),
		"logit_bias":             refuse("Gemini has no logit bias: tokens the caller banned could appear"),
		"logprobs":               refuse("Gemini's log probabilities are not translated back"),
		"top_logprobs":           refuse("Gemini's log probabilities are not translated back"),
		"modalities":             refuse("only text answers are translated"),
		"audio":                  refuse("only text answers are translated"),
		"prediction":             drop("predicted outputs only speed OpenAI up"),
		"service_tier":           drop("OpenAI's service tiers do not exist at Gemini"),
		"store":                  drop("Gemini stores no completions; the answer is the same"),
		"metadata":               drop("request metadata is for OpenAI's dashboards"),
		"functions":              refuse("deprecated; send tools"),
		"function_call":          refuse("deprecated; send tool_choice"),
		"verbosity":              drop("a length hint Gemini has no setting for"),
		"prompt_cache_key":       drop("Gemini caches through cachedContents, not by key"),
		"prompt_cache_retention": drop("Gemini caches through cachedContents, not by retention"),
		"effort": {Decision: Translate, How: "generationConfig.thinkingConfig.thinkingBudget (low 2048, medium 8192, high and max 16384) on a deployment with the thinking capability; dropped on others",
			DropIf: func(_ *ChatRequest, caps config.Capabilities) bool { return !caps.Thinking }},
		AnyOtherField: drop("not an OpenAI field this gateway translates (a strict deployment refuses it)"),
	}
}

// Fields is the Bedrock adapter's table (Converse).
func (Bedrock) Fields() FieldTable {
	return FieldTable{
		"model":                  {Decision: Translate, How: "the URL's model id: the deployment's upstream model (a model id or an inference profile id)"},
		"messages":               {Decision: Translate, How: "system and developer messages → system blocks; user, assistant and tool messages → alternating turns of text, image (data: URLs), toolUse and toolResult blocks"},
		"stream":                 {Decision: Translate, How: "ConverseStream (the AWS event-stream framing)"},
		"stream_options":         {Decision: Translate, How: "honoured by the gateway: a stream that asks for include_usage ends with the usage chunk from Bedrock's metadata event"},
		"max_tokens":             {Decision: Translate, How: "inferenceConfig.maxTokens"},
		"max_completion_tokens":  {Decision: Translate, How: "inferenceConfig.maxTokens (wins over max_tokens)"},
		"temperature":            {Decision: Translate, How: "inferenceConfig.temperature"},
		"top_p":                  {Decision: Translate, How: "inferenceConfig.topP"},
		"stop":                   {Decision: Translate, How: "inferenceConfig.stopSequences"},
		"tools":                  {Decision: Translate, How: "toolConfig.tools[].toolSpec with inputSchema.json"},
		"tool_choice":            {Decision: Translate, How: `toolConfig.toolChoice: auto, any ("required"), tool (a named function); "none" sends no tools`},
		"reasoning_effort":       drop("Converse takes reasoning settings per model in additionalModelRequestFields, which this build does not send"),
		"thinking":               drop("Converse takes reasoning settings per model in additionalModelRequestFields, which this build does not send"),
		"response_format":        refuse("Converse has no response format: the answer would not be the JSON the caller asked for"),
		"user":                   drop("Converse has no end-user field"),
		"safety_identifier":      drop("Converse has no end-user field"),
		"n":                      refuse("Converse answers one choice"),
		"parallel_tool_calls":    drop("Converse has no switch for parallel tool calls"),
		"top_k":                  drop("top_k is a per-model additionalModelRequestFields setting on Converse"),
		"web_search_options":     refuse("Bedrock has no hosted web search"),
		"seed":                   drop("Converse has no sampling seed: the answer is a sample all the same"),
		"frequency_penalty":      drop("Converse has no frequency penalty, a sampling tweak"),
		"presence_penalty":       drop("Converse has no presence penalty, a sampling tweak"),
		"logit_bias":             refuse("Converse has no logit bias: tokens the caller banned could appear"),
		"logprobs":               refuse("Converse returns no log probabilities"),
		"top_logprobs":           refuse("Converse returns no log probabilities"),
		"modalities":             refuse("Converse answers in text only"),
		"audio":                  refuse("Converse has no audio output"),
		"prediction":             drop("predicted outputs only speed OpenAI up"),
		"service_tier":           drop("OpenAI's service tiers do not exist on Bedrock"),
		"store":                  drop("Bedrock stores no completions; the answer is the same"),
		"metadata":               drop("request metadata is for OpenAI's dashboards"),
		"functions":              refuse("deprecated; send tools"),
		"function_call":          refuse("deprecated; send tool_choice"),
		"verbosity":              drop("a length hint Converse has no setting for"),
		"prompt_cache_key":       drop("Bedrock caches by cachePoint blocks, not by key"),
		"prompt_cache_retention": drop("Bedrock caches by cachePoint blocks, not by retention"),
		"effort":                 drop("Converse takes reasoning settings per model, which this build does not send"),
		AnyOtherField:            drop("not an OpenAI field this gateway translates (a strict deployment refuses it)"),
	}
}
