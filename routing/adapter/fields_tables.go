package adapter

import "switchyard/routing/config"

// The field tables: for every OpenAI chat request field, what each adapter
// does when a caller sets it (to anything but OpenAI's default: n 1,
// logprobs false, parallel_tool_calls true, an empty metadata object, ...).
// The README's "Request fields per upstream protocol" is these tables;
// TestFieldTables walks every row against the adapter's real behaviour.

// Fields is the OpenAI adapter's table: OpenAI-compatible upstreams get the
// caller's body as sent, with only the model and the stream settings ours.
func (OpenAI) Fields() FieldTable {
	t := FieldTable{}
	for _, f := range ChatFields {
		t[f] = FieldRule{Decision: Pass, How: "forwarded as sent"}
	}
	t["model"] = FieldRule{Decision: Translate, How: "replaced by the deployment's upstream model"}
	t["stream"] = FieldRule{Decision: Translate, How: "set by the gateway (false, or true for a stream)"}
	t["stream_options"] = FieldRule{Decision: Translate, How: "include_usage always asked upstream; the caller's other options forwarded; the usage chunk reaches the caller only if asked"}
	t[AnyOtherField] = FieldRule{Decision: Pass, How: "forwarded as sent"}
	return t
}

// thinkingOn reports whether r turns on Anthropic's extended thinking.
func thinkingOn(r *ChatRequest) bool { return r.WantsReasoning() }

// forcedToolChoice reports a tool_choice of "required" or a named function.
func forcedToolChoice(r *ChatRequest) bool {
	tc, err := parseVendorToolChoice(r.ToolChoice)
	return err == nil && (tc.Mode == "required" || tc.Mode == "function")
}

// Fields is the Anthropic adapter's table.
func (Anthropic) Fields() FieldTable {
	refuse := func(why string) FieldRule { return FieldRule{Decision: Refuse, How: why} }
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
		"thinking":         {Decision: Translate, How: "thinking"},
		"response_format": {Decision: Translate, How: "json_schema on a deployment with the structured_output capability → output_config.format; otherwise (and json_object) a forced tool call whose arguments become the message content; refused then together with tools or thinking",
			RefuseIf: func(r *ChatRequest, caps config.Capabilities) bool {
				return !anthropicNativeFormat(r, caps) && (len(r.Tools) > 0 || thinkingOn(r))
			}},
		"user": {Decision: Translate, How: "metadata.user_id; refused when safety_identifier names someone else",
			RefuseIf: func(r *ChatRequest, _ config.Capabilities) bool {
				return r.SafetyIdentifier != "" && r.SafetyIdentifier != r.User
			}},
		"safety_identifier":      {Decision: Translate, How: "metadata.user_id"},
		"n":                      {Decision: Translate, How: "fan-out: n concurrent Messages calls, call i answers choice i; usage summed"},
		"parallel_tool_calls":    {Decision: Translate, How: "false → tool_choice.disable_parallel_tool_use"},
		"seed":                   refuse("Anthropic has no sampling seed"),
		"frequency_penalty":      refuse("Anthropic has no frequency penalty"),
		"presence_penalty":       refuse("Anthropic has no presence penalty"),
		"logit_bias":             refuse("Anthropic has no logit bias"),
		"logprobs":               refuse("Anthropic returns no log probabilities"),
		"top_logprobs":           refuse("Anthropic returns no log probabilities"),
		"modalities":             refuse("Anthropic answers in text only"),
		"audio":                  refuse("Anthropic has no audio output"),
		"prediction":             refuse("Anthropic has no predicted outputs"),
		"service_tier":           refuse("OpenAI's service tiers do not exist at Anthropic"),
		"store":                  refuse("Anthropic does not store completions"),
		"metadata":               refuse("Anthropic's metadata holds only user_id"),
		"web_search_options":     refuse("web search is not translated to Anthropic's web search tool"),
		"functions":              refuse("deprecated; send tools"),
		"function_call":          refuse("deprecated; send tool_choice"),
		"verbosity":              refuse("Anthropic has no verbosity setting"),
		"prompt_cache_key":       refuse("Anthropic caches by cache_control blocks, not by key"),
		"prompt_cache_retention": refuse("Anthropic caches by cache_control blocks, not by retention"),
		AnyOtherField:            refuse("not an OpenAI field this gateway translates; only OpenAI-protocol deployments forward unknown fields"),
	}
}

// Fields is the Gemini adapter's table.
func (Gemini) Fields() FieldTable {
	refuse := func(why string) FieldRule { return FieldRule{Decision: Refuse, How: why} }
	return FieldTable{
		"model":                  {Decision: Translate, How: "the URL's model: the deployment's upstream model"},
		"messages":               {Decision: Translate, How: "system and developer messages → systemInstruction; user and tool messages → user turns (tool results as functionResponse), assistant messages → model turns (tool calls as functionCall)"},
		"stream":                 {Decision: Translate, How: "streamGenerateContent?alt=sse"},
		"stream_options":         {Decision: Translate, How: "honoured by the gateway: a stream that asks for include_usage ends with the usage chunk (estimated if Gemini sent none)"},
		"max_tokens":             {Decision: Translate, How: "generationConfig.maxOutputTokens (plus the thinking budget when thinking is on)"},
		"max_completion_tokens":  {Decision: Translate, How: "generationConfig.maxOutputTokens (wins over max_tokens)"},
		"temperature":            {Decision: Translate, How: "generationConfig.temperature"},
		"top_p":                  {Decision: Translate, How: "generationConfig.topP"},
		"stop":                   {Decision: Translate, How: "generationConfig.stopSequences"},
		"tools":                  {Decision: Translate, How: "tools[].functionDeclarations, the JSON Schema rewritten to Gemini's subset"},
		"tool_choice":            {Decision: Translate, How: "toolConfig.functionCallingConfig: AUTO, ANY, NONE, ANY with allowedFunctionNames"},
		"reasoning_effort":       {Decision: Translate, How: "generationConfig.thinkingConfig.thinkingBudget"},
		"thinking":               {Decision: Translate, How: "generationConfig.thinkingConfig"},
		"response_format":        {Decision: Translate, How: "generationConfig.responseMimeType application/json, and responseJsonSchema for json_schema"},
		"n":                      {Decision: Translate, How: "generationConfig.candidateCount; candidate i answers choice i"},
		"seed":                   {Decision: Translate, How: "generationConfig.seed"},
		"frequency_penalty":      {Decision: Translate, How: "generationConfig.frequencyPenalty"},
		"presence_penalty":       {Decision: Translate, How: "generationConfig.presencePenalty"},
		"parallel_tool_calls":    refuse("Gemini cannot be told to call one function at a time"),
		"user":                   refuse("Gemini's API has no end-user identifier"),
		"safety_identifier":      refuse("Gemini's API has no end-user identifier"),
		"logit_bias":             refuse("Gemini has no logit bias"),
		"logprobs":               refuse("Gemini's log probabilities are not translated back"),
		"top_logprobs":           refuse("Gemini's log probabilities are not translated back"),
		"modalities":             refuse("only text answers are translated"),
		"audio":                  refuse("only text answers are translated"),
		"prediction":             refuse("Gemini has no predicted outputs"),
		"service_tier":           refuse("OpenAI's service tiers do not exist at Gemini"),
		"store":                  refuse("Gemini does not store completions"),
		"metadata":               refuse("Gemini's API has no request metadata"),
		"web_search_options":     refuse("web search is not translated to Gemini's Google Search tool"),
		"functions":              refuse("deprecated; send tools"),
		"function_call":          refuse("deprecated; send tool_choice"),
		"verbosity":              refuse("Gemini has no verbosity setting"),
		"prompt_cache_key":       refuse("Gemini caches through cachedContents, not by key"),
		"prompt_cache_retention": refuse("Gemini caches through cachedContents, not by retention"),
		AnyOtherField:            refuse("not an OpenAI field this gateway translates; only OpenAI-protocol deployments forward unknown fields"),
	}
}
