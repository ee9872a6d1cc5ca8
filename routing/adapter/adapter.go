// Package adapter speaks what vendors speak. Every front door
// (routing/frontdoor) hands it the same canonical request, an OpenAI chat
// request's typed view (request.go), and a translator per protocol pair
// turns it into one upstream call and the vendor's answer back into OpenAI
// chat shapes, with normalized usage and classified errors:
//
//	chat_openai.go        chat request → an OpenAI(-compatible) vendor (near pass-through)
//	chat_anthropic.go     chat request → Anthropic's Messages API
//	chat_gemini.go        chat request → Gemini's generateContent
//	messages_anthropic.go a Messages caller → Anthropic, natively (the body passes)
//	responses_openai.go   a Responses caller → OpenAI's Responses API, natively
//
// Each vendor's own plumbing (URLs, credentials, error classification,
// embeddings, model lists) is its protocol's file (openai.go, anthropic.go,
// gemini.go); stream_open.go is the one way every translator opens an
// upstream event stream; policy*.go decide, per protocol, what a request's
// fields become (pass, translate, drop and record, refuse). A new vendor
// protocol is one translator file plus its row in registry.go.
//
// An adapter is stateless and safe to call again for the next key or the
// next candidate: it never mutates the caller's request.
package adapter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"switchyard/routing/config"
)

// Class is a failure class of the request journey's classification; it decides what the executor does next.
type Class string

const (
	ClassRateLimited   Class = "rate_limited"
	ClassAuth          Class = "auth"
	ClassBilling       Class = "billing"
	ClassServer        Class = "server"
	ClassTimeout       Class = "timeout"
	ClassNetwork       Class = "network"
	ClassContentFilter Class = "content_filter"
	ClassBadRequest    Class = "bad_request"
	// ClassCancelled is not a vendor failure: the caller went away. It never
	// moves on, never counts for a breaker and never touches a key.
	ClassCancelled Class = "client_cancelled"
)

// KeyAction is what a failure does to the key that was used.
type KeyAction int

const (
	KeyNone       KeyAction = iota
	KeyCool                 // rest the key until Retry-After
	KeyQuarantine           // take the key out until an operator re-enables it
)

// Policy is one row of the failure-classification table.
type Policy struct {
	NextKey       bool
	NextCandidate bool
	Breaker       bool // counts as a failure for the deployment's circuit breaker
	Key           KeyAction
	Status        int    // HTTP status the caller sees when nothing succeeds
	Code          string // OpenAI error code the caller sees
}

var policies = map[Class]Policy{
	ClassRateLimited:   {NextKey: true, NextCandidate: true, Key: KeyCool, Status: http.StatusTooManyRequests, Code: "rate_limited"},
	ClassAuth:          {NextKey: true, NextCandidate: true, Key: KeyQuarantine, Status: http.StatusServiceUnavailable, Code: "upstream_error"},
	ClassBilling:       {NextKey: true, NextCandidate: true, Key: KeyQuarantine, Status: http.StatusServiceUnavailable, Code: "upstream_error"},
	ClassServer:        {NextCandidate: true, Breaker: true, Status: http.StatusBadGateway, Code: "upstream_error"},
	ClassTimeout:       {NextCandidate: true, Breaker: true, Status: http.StatusGatewayTimeout, Code: "timeout"},
	ClassNetwork:       {NextCandidate: true, Breaker: true, Status: http.StatusBadGateway, Code: "upstream_error"},
	ClassContentFilter: {Status: http.StatusBadRequest, Code: "content_filtered"},
	ClassBadRequest:    {Status: http.StatusBadRequest, Code: "invalid_request"},
	ClassCancelled:     {Status: 499, Code: "client_cancelled"},
}

// Policy returns the table row for c. Unknown classes are treated as server
// failures, the conservative choice.
func (c Class) Policy() Policy {
	if p, ok := policies[c]; ok {
		return p
	}
	return policies[ClassServer]
}

// Error is a classified upstream failure. Message is the vendor's own message,
// which never contains our secrets (keys travel only in request headers).
type Error struct {
	Class      Class
	Status     int           // upstream HTTP status; 0 when none was received
	Code       string        // vendor error type or code, e.g. "insufficient_quota"
	Param      string        // the request field at fault (CodeUnsupportedParameter), if known
	Message    string        // vendor message, safe to show the caller
	RetryAfter time.Duration // from Retry-After or the vendor's body; 0 if unknown
	Err        error         // underlying transport error, if any
}

func (e *Error) Error() string {
	s := string(e.Class)
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil && e.Message == "" {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns the class of err: the class of an *Error in its chain, the
// cancellation or timeout of a context, else ClassNetwork.
func ClassOf(err error) Class {
	var ue *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ue):
		return ue.Class
	case errors.Is(err, context.Canceled):
		return ClassCancelled
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	}
	return ClassNetwork
}

// Usage is normalized token usage. Unknown is kept distinct from zero: a
// stream that ended without a usage report has Known == false.
type Usage struct {
	Prompt        int64
	Completion    int64
	Cached        int64 // prompt tokens served from the vendor's cache
	CacheCreation int64 // Anthropic cache writes
	Reasoning     int64
	Known         bool // Prompt and Completion were reported (or estimated)
	// Estimated: the vendor reported no usage, so the gateway counted the
	// tokens itself (CountTokens); Known is true as well.
	Estimated      bool
	CachedKnown    bool
	ReasoningKnown bool
}

// Target is where one attempt goes: a deployment's provider with one key.
type Target struct {
	BaseURL string
	APIKey  string
	// Bearer, when set, is "Bearer " + APIKey as a header value (built
	// once per key); nil: built per request.
	Bearer        []string
	UpstreamModel string
	// Capabilities are the deployment's declared capabilities; an adapter
	// reads the ones that change its translation (StructuredOutput).
	Capabilities config.Capabilities
	// Client carries the shared transport. It must have no Timeout: every
	// deadline comes from the attempt's context.
	Client *http.Client
	// APIVersion, Region, Project and AuthURL are a cloud provider's
	// settings: Azure's api-version and Entra ID token endpoint, Bedrock's
	// region, Vertex AI's location (Region), project and token endpoint.
	APIVersion, Region, Project, AuthURL string
	// Quirks are an OpenAI-compatible vendor's wire quirks: the chat body
	// is sent in the older forms it accepts (see openaiQuirks).
	Quirks config.Quirks
	// Header is added to the upstream request: the provider's static
	// headers and the caller headers it lets through. Reserved names
	// (credentials, cookies, framing) are never taken from it.
	Header http.Header

	// keyHeader, when set, carries APIKey as that header instead of a
	// bearer token (Azure's api-key).
	keyHeader string
	// vertex, when set, sends a Gemini or Anthropic call to a publisher
	// model on Vertex AI instead of the vendor's own API (vertex.go).
	vertex *vertexRoute
}

// addHeaders copies t.Header into h, never a reserved name; the adapter's
// own headers set afterwards (credentials, content type, a protocol version
// such as anthropic-version) win.
func (t Target) addHeaders(h http.Header) {
	for k, v := range t.Header {
		if !config.ReservedHeader(k) {
			h[k] = v
		}
	}
}

// ChatResult is a complete, non-streamed answer in OpenAI's chat.completion shape.
type ChatResult struct {
	Body         []byte // OpenAI chat.completion JSON
	FinishReason string
	Usage        Usage
	// ModelAt and ModelLen locate the value of Body's top-level "model"
	// member when the adapter found it while reading Body (0: not known;
	// AppendAnswerModelAt looks for it then).
	ModelAt, ModelLen int
}

// Chunk is one streamed event in OpenAI's chat.completion.chunk shape.
type Chunk struct {
	Data []byte // the JSON after "data: "
	// Content is true when the chunk carries something the caller can use:
	// text, reasoning text, a refusal or a tool call. A role-only chunk is
	// not content; the first content chunk commits the stream.
	Content bool
	// UsageOnly marks the final usage chunk ("choices": []) that callers who
	// did not ask for include_usage must not receive.
	UsageOnly    bool
	FinishReason string
}

// Stream yields chunks until io.EOF (a clean end) or a classified *Error.
type Stream interface {
	Next() (Chunk, error)
	// Usage is the usage reported so far (final after io.EOF).
	Usage() Usage
	Close() error
}

// WaitNotifier is a Stream that can tell its relay when it is about to
// wait for the vendor. FlushBeforeWait(flush) makes the stream call flush
// before every read that may wait (nil: no longer), and reports whether it
// will. A relay that got true may leave the events it wrote unflushed
// until then, so that events the vendor sent together leave together; one
// that got false flushes after every event.
type WaitNotifier interface {
	FlushBeforeWait(flush func()) bool
}

// EmbedRequest is one batch for one upstream call.
type EmbedRequest struct {
	Inputs     []string
	Dimensions int // requested output dimension, 0 for the model's default
}

// EmbedResult holds one vector per input, in input order.
type EmbedResult struct {
	Vectors [][]float32
	Usage   Usage
}

// ModelList is what a key verification found.
type ModelList struct {
	Models []string
}

// Adapter is one wire protocol.
type Adapter interface {
	Chat(ctx context.Context, t Target, r *ChatRequest) (*ChatResult, error)
	ChatStream(ctx context.Context, t Target, r *ChatRequest) (Stream, error)
	Embed(ctx context.Context, t Target, r *EmbedRequest) (*EmbedResult, error)
	// ListModels makes a cheap authenticated call, used to verify a key.
	ListModels(ctx context.Context, t Target) (*ModelList, error)
}
