package adapter

import "switchyard/routing/config"

// Front doors and native pass-through.
//
// A caller may speak another wire shape than OpenAI's chat completions: the
// Anthropic Messages API (POST /v1/messages) or the OpenAI Responses API
// (POST /v1/responses). Such a front door parses its body into the same
// canonical ChatRequest the chat-completions door builds (its Body then an
// OpenAI chat body made from the caller's, its typed view and Set filled as
// usual), so routing, limits, the field policy and every adapter work
// unchanged, and keeps the caller's original body in ChatRequest.Native.
//
// A deployment whose protocol speaks the door's shape natively (Messages →
// an Anthropic-protocol deployment) gets the original body with only the
// model (and the stream flag) replaced: cache_control, thinking signatures,
// roles, blocks and fields this build does not know survive byte for byte.
// Its answer comes back natively too: a ChatResult whose Body is the
// vendor's own answer, and Chunks whose Data is one whole SSE event of the
// vendor's ("event: …\ndata: …\n\n"), Content set on the first content
// event so the stream-commit rule still holds. The adapter still reports
// usage and classifies errors, an in-stream error event included.
//
// Any other deployment gets the translation: the canonical request through
// the adapter's usual code, its OpenAI-shaped answer translated back by the
// front door. What the translation leaves out is in ChatRequest.Drops and
// what it cannot carry in ChatRequest.Untranslatable, both in the door's own
// notation; the field policy (policy.go) decides with them.

// Front door names, as recorded on a native request (and in call logs).
const (
	DoorMessages  = "messages"
	DoorResponses = "responses"
)

// Native is a front door's original request.
type Native struct {
	// Door is the front door it came through (DoorMessages, …).
	Door string
	// Body is the caller's body as received.
	Body []byte
	// Protocol is the upstream protocol that speaks Door natively.
	Protocol config.Protocol
	// PassesIf, when set, narrows the deployments of Protocol that take the
	// request natively (e.g. those declaring a capability); nil means all.
	PassesIf func(caps config.Capabilities) bool
	// Params names, for a refused OpenAI chat field of the canonical
	// request, the door's field it came from ("stop" → "stop_sequences");
	// a field missing from it keeps its OpenAI name.
	Params map[string]string
	// Query is the caller's raw query string: a native path passes the
	// switches of the door's protocol in it (nativeQuery).
	Query string
	// View is the door's own typed view of Body, when it keeps one for
	// rendering answers (the Responses door's *ResponsesRequest); nil
	// otherwise.
	View any
}

// Passes reports whether a deployment of wire p with caps gets the
// request natively: p takes Protocol's bodies (config.NativeDialect; a
// Claude model on Bedrock takes Messages bodies).
func (n *Native) Passes(p config.Protocol, caps config.Capabilities) bool {
	return n != nil && config.NativeDialect(p) == n.Protocol && (n.PassesIf == nil || n.PassesIf(caps))
}

// param is the door's name of a canonical field.
func (n *Native) param(field string) string {
	if n == nil {
		return field
	}
	if f, ok := n.Params[field]; ok {
		return f
	}
	return field
}

// NativeFor reports whether a deployment of protocol p with caps serves r
// in its front door's own shape (pass-through) rather than translated.
func NativeFor(p config.Protocol, r *ChatRequest, caps config.Capabilities) bool {
	return r != nil && r.Native.Passes(p, caps)
}
