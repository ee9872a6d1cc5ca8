package components

import "switchyard/routing/config"

// quirkWords are what the console says for each vendor wire quirk: a label
// and what the gateway does about it.
var quirkWords = map[config.Quirk][2]string{
	config.QuirkNoStreamOptions:  {"Refuses stream_options", "streams go without it; the gateway counts the tokens when the vendor reports none (marked estimated)"},
	config.QuirkMaxTokens:        {"Refuses max_completion_tokens", "the limit is sent as max_tokens"},
	config.QuirkNoDeveloperRole:  {"Refuses the developer role", "developer messages are sent as system messages"},
	config.QuirkReasoningContent: {"Reasons in reasoning_content", "read as reasoning: thinking blocks for Messages callers, reasoning items for Responses callers, never content"},
}

// QuirkLabel is a quirk's short description ("Refuses stream_options").
func QuirkLabel(q config.Quirk) string {
	if w, ok := quirkWords[q]; ok {
		return w[0]
	}
	return string(q)
}

// QuirkHint is what the gateway does about a quirk.
func QuirkHint(q config.Quirk) string { return quirkWords[q][1] }
