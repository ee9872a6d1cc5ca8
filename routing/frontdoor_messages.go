package routing

import (
	"switchyard/routing/adapter"
)

// messagesDoor is Anthropic's Messages API (POST /v1/messages): the
// request parsed by adapter.ParseMessagesRequest, answers and events in
// Anthropic's shapes (adapter/messages_answer.go), errors as
// {"type":"error","error":{"type","message"}}. Anthropic-protocol
// deployments serve it natively; the others through the translation.
type messagesDoor struct{}

func (messagesDoor) Parse(body []byte) (*adapter.ChatRequest, error) {
	return adapter.ParseMessagesRequest(body)
}

func (messagesDoor) Answer(dst []byte, _ *adapter.ChatRequest, res *adapter.ChatResult, model, _ string, native bool) ([]byte, error) {
	if native {
		return adapter.AppendAnswerModel(dst, res.Body, model), nil
	}
	return adapter.MessagesAnswer(dst, res.Body, model, adapter.MessagesID(adapter.AnswerID(res.Body)), res.Usage)
}

func (messagesDoor) Stream(_ *adapter.ChatRequest, model, requestID string, native bool) DoorStream {
	return adapter.NewMessagesStream(model, adapter.MessagesID(requestID), native)
}

func (messagesDoor) Error(status int, code, msg string, param *string) []byte {
	return adapter.MessagesError(status, code, msg, param)
}
