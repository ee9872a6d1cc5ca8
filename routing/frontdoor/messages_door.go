package frontdoor

import (
	"net/http"

	"switchyard/routing/adapter"
)

// MessagesDoor is Anthropic's Messages API (POST /v1/messages): the
// request parsed by ParseMessagesRequest, answers and events in
// Anthropic's shapes (messages_answer.go), errors as
// {"type":"error","error":{"type","message"}}. Anthropic-protocol
// deployments serve it natively; the others through the translation.
type MessagesDoor struct{}

func (MessagesDoor) Parse(body []byte) (*adapter.ChatRequest, error) {
	return ParseMessagesRequest(body)
}

func (MessagesDoor) Answer(dst []byte, _ *adapter.ChatRequest, res *adapter.ChatResult, model, _ string, native bool) ([]byte, error) {
	if native {
		return AppendAnswerModel(dst, res.Body, model), nil
	}
	return MessagesAnswer(dst, res.Body, model, MessagesID(AnswerID(res.Body)), res.Usage)
}

// ReadHeaders keeps the query for the native path (?beta=true), and
// records the caller's anthropic-beta as what a translation drops: the
// betas are Anthropic's, and reach only an Anthropic vendor.
func (MessagesDoor) ReadHeaders(r *adapter.ChatRequest, h http.Header, rawQuery string) {
	if r.Native == nil {
		return
	}
	r.Native.Query = rawQuery
	if h.Get("Anthropic-Beta") != "" {
		r.Drop("anthropic-beta (header)")
	}
}

func (MessagesDoor) Stream(_ *adapter.ChatRequest, model, requestID string, native bool) Stream {
	return NewMessagesStream(model, MessagesID(requestID), native)
}

func (MessagesDoor) Error(status int, code, msg string, param *string) []byte {
	return MessagesError(status, code, msg, param)
}
