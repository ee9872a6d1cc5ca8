// Package frontdoor speaks what callers speak: OpenAI's chat completions
// (and embeddings), Anthropic's Messages API and OpenAI's Responses API.
//
// Every chat-like request takes the same journey (routing.Journey) —
// authenticate, idempotency, route, limits, execute (failover before the
// first content), account, log — whatever shape the caller sent it in. A
// Door is only the caller-facing wire shape around that journey:
//
//   - Parse turns the body into the canonical adapter.ChatRequest (an
//     OpenAI chat request's typed view, which the router and every adapter
//     read). A door other than chat completions also keeps the caller's
//     original body in ChatRequest.Native, names the upstream protocol that
//     speaks it natively, and names what a translation would drop or could
//     not carry (adapter.Native): deployments that cannot carry it are
//     skipped, and if none is left the caller gets a 400 in the door's shape
//     naming that field.
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
// One file per door: chat.go (chat completions), messages*.go (Messages),
// responses*.go (Responses); parse.go holds the JSON readers they share.
// The vendors' side — one translator per protocol pair — is routing/adapter.
package frontdoor

import (
	"encoding/json"
	"net/http"

	"switchyard/routing/adapter"
)

// Door is one caller wire shape.
type Door interface {
	// Parse validates body and returns the canonical request. Errors are
	// *RequestError (Param in the door's notation).
	Parse(body []byte) (*adapter.ChatRequest, error)
	// Answer appends to dst the caller's complete answer. res.Body is the
	// vendor's own answer when native is true, else an OpenAI
	// chat.completion; model is the logic model that served; requestID
	// the request's id (a door may name its answer by it).
	Answer(dst []byte, req *adapter.ChatRequest, res *adapter.ChatResult, model, requestID string, native bool) ([]byte, error)
	// Stream starts rendering a committed stream (see Stream).
	Stream(req *adapter.ChatRequest, model, requestID string, native bool) Stream
	// Error renders an error answer's body.
	Error(status int, code, msg string, param *string) []byte
}

// HeaderReader is a door that reads request headers of its own protocol
// into the canonical request (the Messages door's anthropic-beta), and
// the query string's switches for a native path.
type HeaderReader interface {
	ReadHeaders(r *adapter.ChatRequest, h http.Header, rawQuery string)
}

// Stream renders one committed stream as the door's SSE events. Each
// method appends whole events (framing included) to dst; appending nothing
// sends nothing.
type Stream interface {
	// Chunk renders one chunk of the stream.
	Chunk(dst []byte, ch adapter.Chunk) []byte
	// End renders a clean end; u is the stream's final usage.
	End(dst []byte, u adapter.Usage) []byte
	// Fail renders the error event that ends a stream which failed after
	// its first content.
	Fail(dst []byte, status int, code, msg string) []byte
}

// ErrorJSON is an OpenAI error object: {"error":{"message","type","code","param"}}.
func ErrorJSON(status int, code, msg string, param *string) []byte {
	b, _ := json.Marshal(map[string]openAIError{"error": {Message: msg, Type: ErrorType(status), Code: code, Param: param}})
	return b
}

type openAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    string  `json:"code"`
	Param   *string `json:"param"`
}

// ErrorType maps an HTTP status onto OpenAI's error types.
func ErrorType(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 429:
		return "rate_limit_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}
