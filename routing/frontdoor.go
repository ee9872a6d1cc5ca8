package routing

import (
	"switchyard/routing/adapter"
)

// Front doors: the wire shapes callers speak.
//
// Every chat-like request takes the same journey — authenticate,
// idempotency, route, limits, execute (failover before the first content),
// account, log — whatever shape the caller sent it in. A FrontDoor is only
// the caller-facing wire shape around that journey:
//
//   - Parse turns the body into the canonical adapter.ChatRequest (an OpenAI
//     chat request's typed view, which the router and every adapter read).
//     A door other than chat completions also keeps the caller's original
//     body in ChatRequest.Native, names the upstream protocol that speaks it
//     natively, and names the first field a translation could not carry
//     (adapter/native.go): deployments of other protocols are then skipped
//     with unsupported_parameter, and if none is left the caller gets a 400
//     in the door's shape naming that field.
//   - Answer renders a complete answer: native (the deployment spoke the
//     door's own protocol; its body is passed on with the model set to the
//     logic model) or translated from the adapters' OpenAI chat.completion.
//   - Stream renders a committed stream event by event: the door's own
//     event sequence, its clean end and its mid-stream error event. Native
//     chunks carry whole vendor events; translated ones carry OpenAI
//     chunks. The journey still sends nothing before the first content
//     chunk, so failover stays invisible to the caller.
//   - Error renders an error in the door's shape (status, code, message,
//     param); the journey decides statuses and codes, the door only words
//     them on the wire.
//
// The chat-completions door is the first implementation (chatDoor below);
// the Anthropic Messages door is messagesDoor (frontdoor_messages.go). A new
// door is a type implementing FrontDoor, an Endpoint, and a case in doorOf.
// A door costs the chat-completions path nothing: chatDoor does exactly
// what the journey did before doors existed.
type FrontDoor interface {
	// Parse validates body and returns the canonical request. Errors are
	// *adapter.RequestError (Param in the door's notation).
	Parse(body []byte) (*adapter.ChatRequest, error)
	// Answer appends to dst the caller's complete answer. res.Body is the
	// vendor's own answer when native is true, else an OpenAI
	// chat.completion; model is the logic model that served; requestID
	// the request's id (a door may name its answer by it).
	Answer(dst []byte, req *adapter.ChatRequest, res *adapter.ChatResult, model, requestID string, native bool) ([]byte, error)
	// Stream starts rendering a committed stream (see DoorStream).
	Stream(req *adapter.ChatRequest, model, requestID string, native bool) DoorStream
	// Error renders an error answer's body.
	Error(status int, code, msg string, param *string) []byte
}

// DoorStream renders one committed stream as the door's SSE events. Each
// method appends whole events (framing included) to dst; appending nothing
// sends nothing.
type DoorStream interface {
	// Chunk renders one chunk of the stream.
	Chunk(dst []byte, ch adapter.Chunk) []byte
	// End renders a clean end; u is the stream's final usage.
	End(dst []byte, u adapter.Usage) []byte
	// Fail renders the error event that ends a stream which failed after
	// its first content.
	Fail(dst []byte, status int, code, msg string) []byte
}

// doorOf is the front door of an endpoint.
func doorOf(ep Endpoint) FrontDoor {
	switch ep {
	case EndpointMessages, EndpointCountTokens:
		return messagesDoor{}
	case EndpointResponses:
		return responsesDoor{}
	}
	return chatDoor{}
}

// String is the endpoint's name in call logs, metrics and Test route.
func (e Endpoint) String() string {
	if int(e) >= 0 && int(e) < len(endpointNames) && endpointNames[e] != "" {
		return endpointNames[e]
	}
	return "unknown"
}

var endpointNames = [...]string{
	EndpointChat:        "chat_completions",
	EndpointEmbeddings:  "embeddings",
	EndpointModels:      "models",
	EndpointModel:       "models",
	EndpointMessages:    "messages",
	EndpointCountTokens: "count_tokens",
	EndpointResponses:   "responses",
}

// EndpointNames lists the distinct endpoint names, in display order.
func EndpointNames() []string {
	return []string{"chat_completions", "messages", "responses", "count_tokens", "embeddings", "models"}
}

// chatDoor is OpenAI's chat completions (and the OpenAI error shape of
// embeddings and models).
type chatDoor struct{}

func (chatDoor) Parse(body []byte) (*adapter.ChatRequest, error) {
	return adapter.ParseChatRequest(body)
}

func (chatDoor) Answer(dst []byte, _ *adapter.ChatRequest, res *adapter.ChatResult, model, _ string, _ bool) ([]byte, error) {
	return adapter.AppendAnswerModelAt(dst, res, model), nil
}

func (chatDoor) Stream(req *adapter.ChatRequest, model, _ string, _ bool) DoorStream {
	return chatStream{model: model, usage: req.IncludeUsage}
}

func (chatDoor) Error(status int, code, msg string, param *string) []byte {
	return ErrorJSON(status, code, msg, param)
}

// chatStream writes chat.completion.chunk events, [DONE] at a clean end
// and an OpenAI error object after a failure.
type chatStream struct {
	model string
	usage bool // the caller asked for stream_options.include_usage
}

func (s chatStream) Chunk(dst []byte, ch adapter.Chunk) []byte {
	if ch.UsageOnly && !s.usage {
		return dst
	}
	// The model field is the logic model that serves (the answer's one
	// rule for model, as in a complete answer).
	dst = append(dst, "data: "...)
	dst = adapter.AppendAnswerModel(dst, ch.Data, s.model)
	return append(dst, '\n', '\n')
}

func (chatStream) End(dst []byte, _ adapter.Usage) []byte {
	return append(dst, "data: [DONE]\n\n"...)
}

func (chatStream) Fail(dst []byte, status int, code, msg string) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, ErrorJSON(status, code, msg, nil)...)
	return append(dst, '\n', '\n')
}
