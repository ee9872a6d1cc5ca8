package frontdoor

import (
	"switchyard/routing/adapter"
)

// ChatDoor is OpenAI's chat completions (and the OpenAI error shape of
// embeddings and models). Every upstream protocol serves it: OpenAI's
// natively, the others through their translators.
type ChatDoor struct{}

func (ChatDoor) Parse(body []byte) (*adapter.ChatRequest, error) {
	return ParseChatRequest(body)
}

func (ChatDoor) Answer(dst []byte, _ *adapter.ChatRequest, res *adapter.ChatResult, model, _ string, _ bool) ([]byte, error) {
	return AppendAnswerModelAt(dst, res, model), nil
}

func (ChatDoor) Stream(req *adapter.ChatRequest, model, _ string, _ bool) Stream {
	return &ChatStream{Model: model, Usage: req.IncludeUsage}
}

func (ChatDoor) Error(status int, code, msg string, param *string) []byte {
	return ErrorJSON(status, code, msg, param)
}

// ChatStream writes chat.completion.chunk events, [DONE] at a clean end
// and an OpenAI error object after a failure. Its zero value plus Model is
// ready to use, so the journey can keep one inside its own state.
type ChatStream struct {
	// Model is the logic model that serves (the answer's one rule for
	// model, as in a complete answer).
	Model string
	// Usage: the caller asked for stream_options.include_usage.
	Usage bool
}

func (s *ChatStream) Chunk(dst []byte, ch adapter.Chunk) []byte {
	if ch.UsageOnly && !s.Usage {
		return dst
	}
	dst = append(dst, "data: "...)
	dst = AppendAnswerModel(dst, ch.Data, s.Model)
	return append(dst, '\n', '\n')
}

func (*ChatStream) End(dst []byte, _ adapter.Usage) []byte {
	return append(dst, "data: [DONE]\n\n"...)
}

func (*ChatStream) Fail(dst []byte, status int, code, msg string) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, ErrorJSON(status, code, msg, nil)...)
	return append(dst, '\n', '\n')
}
