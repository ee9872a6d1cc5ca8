// Package fakevendor is a fake LLM vendor for the gateway's tests,
// benchmarks and the newcomer sandbox. One http.Handler speaks three
// protocols with their real wire shapes:
//
//	OpenAI     POST /v1/chat/completions, POST /v1/embeddings, GET /v1/models,
//	           POST /v1/responses (the Responses API, responses.go)
//	           (Authorization: Bearer KEY)
//	Anthropic  POST /v1/messages, POST /v1/messages/count_tokens, GET /v1/models
//	           (x-api-key: KEY, anthropic-version required)
//	Azure      POST /openai/deployments/DEPLOYMENT/chat/completions?api-version=V
//	           and Entra ID tokens (api-key: KEY or a bearer token; azure.go)
//	Bedrock    POST /model/MODEL_ID/converse, /model/MODEL_ID/converse-stream
//	           (AWS SigV4 verified; the stream in AWS event-stream framing; bedrock.go)
//	Vertex AI  POST /v1/projects/P/locations/L/publishers/google/models/M:generateContent
//	           (and :streamGenerateContent), .../publishers/anthropic/models/M:rawPredict
//	           (and :streamRawPredict), behind POST /token, a JWT-bearer token
//	           endpoint that verifies the signed assertion (vertex.go)
//	Gemini     POST /v1beta/models/MODEL:generateContent
//	           POST /v1beta/models/MODEL:streamGenerateContent?alt=sse
//	           POST /v1beta/models/MODEL:embedContent
//	           POST /v1beta/models/MODEL:batchEmbedContents
//	           GET  /v1beta/models (x-goog-api-key: KEY or ?key=KEY; /v1/ works too)
//
// GET /v1/models is answered in Anthropic's shape when the request carries
// x-api-key or anthropic-version, otherwise in OpenAI's.
//
// The reply is deterministic: "Hello from MODEL." sent as ReplyChunks
// chunks (" Hello from MODEL." after the first). Usage: prompt tokens are
// ceil(bytes of prompt text / 4) (at least 1) plus Fault.CachedTokens;
// completion tokens are the number of chunks sent. max_tokens
// (max_completion_tokens, maxOutputTokens) below the chunk count truncates
// the reply with the protocol's length finish reason.
//
// Tool use is scripted by the conversation (tools.go), the same in every
// protocol, so a coding agent can make one tool round trip through it:
//
//   - When the last turn carries tool results (OpenAI: tool messages last;
//     Anthropic: tool_result blocks in the last user turn; Gemini:
//     functionResponse parts in the last user content; Responses:
//     function_call_output or custom_tool_call_output items last) and no
//     words of the user, the answer is the text "Tool result: " and the
//     first 200 characters of the results (a functionResponse's response as
//     JSON), chunked like any text. This comes before any directive. A last
//     turn with results and the user's words too (Anthropic and Gemini can
//     send both in one turn) is answered as those words.
//   - Otherwise, when the last user message's text (its text parts joined)
//     says "call tool NAME", optionally followed by a JSON object
//     (call tool Read {"file_path":"/tmp/x/notes.txt"}), the answer is one
//     call of the offered tool NAME with exactly those arguments ({} without
//     them): OpenAI tool_calls, an Anthropic tool_use block, a Gemini
//     functionCall part, a Responses function_call item. Responses also
//     calls tools inside namespace tools (the item names the namespace) and
//     custom tools (a custom_tool_call item whose input is the text after
//     NAME). A bare "call tool" calls the first tool with {}. A NAME the
//     request does not offer is answered with the text "no tool NAME was
//     offered; offered: a, b, c".
//
// Text parts that are wholly a Claude Code <system-reminder> do not count as
// the user's words. Requests are read leniently, as the real APIs read what
// real clients send: unknown fields are ignored, system and developer
// messages may come anywhere in the conversation, and hosted tools
// (Anthropic web_search_* and other server tools, Gemini google_search,
// Responses web_search and tool_search, OpenAI web_search_options) are
// accepted and never called. A request offering hosted web search is
// counted in Stats.WebSearch and marked in its Request.
//
// Structured output (OpenAI response_format, Anthropic
// output_config.format or a forced tool_choice, Gemini responseMimeType
// application/json) answers with JSON made from the schema, and several
// choices (OpenAI n, Gemini candidateCount) repeat the reply per choice; see
// structured.go.
//
// Keys starting with "bad" get the protocol's invalid-key error (OpenAI 401
// invalid_api_key, Anthropic 401 authentication_error, Gemini 400
// INVALID_ARGUMENT/API_KEY_INVALID as the real API does); keys starting with
// "broke" get its billing error (OpenAI 429 insufficient_quota, Anthropic 402
// billing_error, Gemini 403 PERMISSION_DENIED/BILLING_DISABLED).
//
// Faults (see Fault) come from Options.Fault, from rules (SetRules, PUT
// /_fake/rules; the first rule matching the model and key wins, else
// Options.Fault) and from X-Fake-* request headers, which override single
// fields of that: X-Fake-Status, -Retry-After, -Latency, -First-Chunk-Delay,
// -Inter-Chunk-Delay, -Cut-After, -Error-After, -Content-Filter,
// -Oversized-Line, -No-Usage, -Shuffle, -Dimension, -Cached-Tokens,
// -Reply-Chunks, -Error-Message, -Error-Code, -Finish-Every-Chunk,
// -Reasoning-Content, -Reject-Stream-Options, -Reject-Max-Completion-Tokens,
// -Reject-Developer (durations as Go duration strings). An unknown or malformed X-Fake-* header is
// answered with a 400 in the protocol's format. The stream faults only act
// on streaming requests.
//
// Counters and the last request per model are kept for assertions (Count,
// CountKey, CountStatus, Stats, LastBody, LastRequest; GET /_fake/stats,
// GET /_fake/last?model=M, POST /_fake/reset).
package fakevendor

import (
	"context"
	"crypto/rsa"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures a Server. The zero value is usable.
type Options struct {
	// ReplyChunks is the number of content chunks in a reply (default 5).
	ReplyChunks int
	// Dimension is the default embedding size (default 1536).
	Dimension int
	// Models, when set, is the only models served (others get the protocol's
	// 404) and what the model lists return. When empty every model name is
	// served and the lists return a few typical names.
	Models []string
	// Fault applies to every request that no rule matches.
	Fault Fault
	// Rules are the initial rules (see SetRules).
	Rules []Rule
	// EntraTokenTTL is the lifetime of the Entra ID tokens it issues
	// (default one hour; azure.go).
	EntraTokenTTL time.Duration
	// AWSSecrets maps an AWS access key id to its secret for verifying
	// SigV4 signatures (bedrock.go); an id not listed has the secret
	// "fake-secret-" + id.
	AWSSecrets map[string]string
	// VertexAccounts maps a service account's email to the public key
	// that verifies its signed token requests (vertex.go; ServiceAccount
	// makes one).
	VertexAccounts map[string]*rsa.PublicKey
	// VertexTokenTTL is the lifetime of the Vertex access tokens it issues
	// (default one hour).
	VertexTokenTTL time.Duration
	// MaxBodyBytes limits request bodies (default 32 MiB); larger ones get 413.
	MaxBodyBytes int64
}

// Server is the fake vendor. Create it with New; it is an http.Handler.
type Server struct {
	opts    Options
	allowed map[string]bool

	rulesMu     sync.Mutex // serialises writers of rules
	rules       atomic.Pointer[[]*ruleState]
	defaultHits atomic.Int64

	stats  counters
	seq    atomic.Uint64
	entra  entraIssuer
	vertex vertexIssuer
}

// New returns a Server ready to serve.
func New(opts Options) *Server {
	if opts.ReplyChunks <= 0 {
		opts.ReplyChunks = 5
	}
	if opts.Dimension <= 0 {
		opts.Dimension = 1536
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 32 << 20
	}
	s := &Server{opts: opts}
	if len(opts.Models) > 0 {
		s.allowed = make(map[string]bool, len(opts.Models))
		for _, m := range opts.Models {
			s.allowed[m] = true
		}
	}
	s.SetRules(opts.Rules...)
	s.stats.reset()
	return s
}

type protocol int

const (
	protoOpenAI protocol = iota
	protoAnthropic
	protoGemini
	numProtocols
)

func (p protocol) String() string {
	switch p {
	case protoOpenAI:
		return "openai"
	case protoAnthropic:
		return "anthropic"
	default:
		return "gemini"
	}
}

// ServeHTTP routes vendor endpoints and the /_fake/ control endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if !strings.HasPrefix(path, "/_fake/") {
		defer s.stats.enter()()
	}
	switch {
	case path == "/v1/chat/completions":
		s.serve(w, r, protoOpenAI, http.MethodPost, "", s.openaiChat)
	case path == "/v1/embeddings":
		s.serve(w, r, protoOpenAI, http.MethodPost, "", s.openaiEmbeddings)
	case path == "/v1/responses":
		s.serve(w, r, protoOpenAI, http.MethodPost, "", s.openaiResponses)
	case path == "/v1/messages":
		s.serve(w, r, protoAnthropic, http.MethodPost, "", s.anthropicMessages)
	case path == "/v1/messages/count_tokens":
		s.serve(w, r, protoAnthropic, http.MethodPost, "", s.anthropicCountTokens)
	case path == "/v1/models":
		if r.Header.Get("X-Api-Key") != "" || r.Header.Get("Anthropic-Version") != "" {
			s.serve(w, r, protoAnthropic, http.MethodGet, "", s.anthropicModels)
		} else {
			s.serve(w, r, protoOpenAI, http.MethodGet, "", s.openaiModels)
		}
	case path == "/v1beta/models":
		s.serve(w, r, protoGemini, http.MethodGet, "", s.geminiModels)
	case strings.HasPrefix(path, "/v1beta/models/") || strings.HasPrefix(path, "/v1/models/"):
		s.routeGemini(w, r, path[strings.Index(path, "/models/")+len("/models/"):])
	case strings.HasPrefix(path, "/model/"):
		s.routeBedrock(w, r, path)
	case strings.HasPrefix(path, "/openai/"):
		s.routeAzure(w, r, path)
	case strings.HasSuffix(path, "/oauth2/v2.0/token"):
		s.entraToken(w, r)
	case path == "/token":
		s.vertexToken(w, r)
	case strings.HasPrefix(path, "/v1/projects/"):
		s.routeVertex(w, r, path)
	case strings.HasPrefix(path, "/_fake/"):
		s.serveControl(w, r)
	default:
		writeJSON(w, http.StatusNotFound, []byte(`{"error":{"message":"fakeupstream: no route for `+jsonEscape(path)+`","type":"invalid_request_error","param":null,"code":"unknown_url"}}`))
	}
}

func (s *Server) routeGemini(w http.ResponseWriter, r *http.Request, rest string) {
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		writeJSON(w, http.StatusNotFound, geminiErrorBody(http.StatusNotFound, "fakeupstream: no route for "+r.URL.Path, ""))
		return
	}
	model, method := rest[:i], rest[i+1:]
	var h func(*call)
	switch method {
	case "generateContent":
		h = s.geminiGenerate
	case "streamGenerateContent":
		h = s.geminiStreamGenerate
	case "embedContent":
		h = s.geminiEmbed
	case "batchEmbedContents":
		h = s.geminiBatchEmbed
	default:
		writeJSON(w, http.StatusNotFound, geminiErrorBody(http.StatusNotFound, "fakeupstream: unknown method "+method, ""))
		return
	}
	s.serve(w, r, protoGemini, http.MethodPost, model, h)
}

// call is one vendor request in flight.
type call struct {
	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	proto   protocol
	model   string
	key     string
	body    []byte
	bodyErr error
	fault   Fault
	ctrs    [3]*counter
	seq     uint64
	// webSearch is set by the handler, before begin, when the request
	// offers a hosted web-search tool.
	webSearch bool
	// vertex: the call came through Vertex AI's addressing (vertex.go):
	// the URL names the model, the bearer token the key, and injected
	// statuses are Vertex's own errors.
	vertex bool
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, p protocol, method, model string, h func(*call)) {
	if r.Method != method {
		w.Header().Set("Allow", method)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	c := &call{s: s, w: w, r: r, proto: p, model: model, key: keyOf(p, r), seq: s.seq.Add(1)}
	if method == http.MethodPost {
		c.body, c.bodyErr = readBody(w, r, s.opts.MaxBodyBytes)
	}
	h(c)
}

func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		b := make([]byte, n)
		if _, err := io.ReadFull(body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(body)
}

func keyOf(p protocol, r *http.Request) string {
	switch p {
	case protoAnthropic:
		return r.Header.Get("X-Api-Key")
	case protoGemini:
		if k := r.Header.Get("X-Goog-Api-Key"); k != "" {
			return k
		}
		if r.URL.RawQuery != "" {
			return r.URL.Query().Get("key")
		}
		return ""
	default:
		a := r.Header.Get("Authorization")
		if len(a) > 7 && strings.EqualFold(a[:7], "Bearer ") {
			return strings.TrimSpace(a[7:])
		}
		return ""
	}
}

// begin counts the request, picks its fault, waits its latency and answers
// the errors that come before the work: body, auth, injected status, unknown
// model. It reports whether the handler should go on.
func (c *call) begin() bool {
	s := c.s
	c.ctrs = s.stats.begin(c.proto, c.model, c.key)
	if c.webSearch {
		s.stats.webSearch.Add(1)
	}
	if c.model != "" {
		s.stats.last.Store(c.model, &Request{
			Protocol: c.proto.String(), Method: c.r.Method, Path: c.r.URL.Path, RawQuery: c.r.URL.RawQuery,
			Key: c.key, Header: c.r.Header, Body: c.body, WebSearch: c.webSearch,
		})
	}
	f, ferr := s.faultFor(c.model, c.key, c.r.Header)
	c.fault = f
	if !sleep(c.r.Context(), f.Latency) {
		c.record(StatusClientGone)
		return false
	}
	var tooLarge *http.MaxBytesError
	switch {
	case ferr != nil:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: ferr.Error()})
	case errors.As(c.bodyErr, &tooLarge):
		c.fail(apiErr{kind: errTooLarge, status: http.StatusRequestEntityTooLarge})
	case c.bodyErr != nil:
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "could not read request body: " + c.bodyErr.Error()})
	case c.key == "":
		c.fail(apiErr{kind: errNoKey})
	case strings.HasPrefix(c.key, "bad"):
		c.fail(apiErr{kind: errBadKey})
	case strings.HasPrefix(c.key, "broke"):
		c.fail(apiErr{kind: errBilling})
	case c.proto == protoAnthropic && !c.vertex && c.r.Header.Get("Anthropic-Version") == "":
		c.fail(apiErr{kind: errInvalid, status: http.StatusBadRequest, msg: "anthropic-version: header is required"})
	case f.Status >= 400:
		c.fail(apiErr{kind: errStatus, status: f.Status, msg: f.ErrorMessage})
	case c.model != "" && s.allowed != nil && !s.allowed[c.model]:
		c.fail(apiErr{kind: errNotFound, status: http.StatusNotFound})
	default:
		return true
	}
	return false
}

func (c *call) record(status int) {
	for _, ct := range c.ctrs {
		if ct != nil {
			ct.addStatus(status)
		}
	}
}

// writeHeader records status and sends it.
func (c *call) writeHeader(status int) {
	c.record(status)
	c.w.WriteHeader(status)
}

func (c *call) writeJSON(status int, body []byte) {
	c.record(status)
	writeJSON(c.w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// requestID is a short unique suffix for vendor ids (chatcmpl-…, msg_…).
func (c *call) requestID() string {
	return "fake" + strconv.FormatUint(c.seq, 36)
}

// sleep waits d unless ctx ends first; it reports whether the wait completed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// reply is the deterministic answer to one generation request.
type reply struct {
	first, rest string // text of chunk 0 and of every later chunk
	chunks      int    // content chunks to send (1 for a tool call, 0 when filtered)
	finish      finishKind
	tool        string // name of the tool to call, if any
	namespace   string // Responses: the namespace of the tool
	custom      bool   // Responses: the tool is a custom tool (args is its input)
	prompt      int    // prompt tokens, cached included
	cached      int
	parts       []string // a fixed answer (structured JSON, a scripted text), one piece per chunk
	args        string   // the tool call's arguments ("" is {})
	n           int      // choices (OpenAI n, Gemini candidateCount); 0 is 1
}

// choices is the number of choices to answer.
func (rp reply) choices() int { return max(rp.n, 1) }

// toolArgs is the tool call's arguments as JSON text.
func (rp reply) toolArgs() string {
	if rp.args == "" {
		return "{}"
	}
	return rp.args
}

// callInput is what the tool call carries: a custom tool's input text, or
// the JSON arguments.
func (rp reply) callInput() string {
	if rp.custom {
		return rp.args
	}
	return rp.toolArgs()
}

type finishKind int

const (
	finishStop finishKind = iota
	finishLength
	finishTool
	finishFilter
)

// plan is the reply to a request: the content filter, else the intent's
// tool call, else its text or the greeting, cut to maxTokens chunks.
func (c *call) plan(model string, promptBytes, maxTokens int, in intent) reply {
	n := c.fault.ReplyChunks
	if n <= 0 {
		n = c.s.opts.ReplyChunks
	}
	rp := reply{first: "Hello from " + model + ".", chunks: n, cached: c.fault.CachedTokens}
	rp.rest = " " + rp.first
	rp.prompt = max(1, (promptBytes+3)/4) + rp.cached
	switch {
	case c.fault.ContentFilter:
		rp.chunks, rp.finish = 0, finishFilter
		return rp
	case in.tool.name != "":
		rp.chunks, rp.finish, rp.tool, rp.args = 1, finishTool, in.tool.name, in.args
		rp.namespace, rp.custom = in.tool.namespace, in.tool.custom
		return rp
	case in.say != "":
		rp.parts = pieces(in.say, n)
		rp.chunks = len(rp.parts)
	}
	if maxTokens > 0 && maxTokens < rp.chunks {
		rp.chunks, rp.finish = maxTokens, finishLength
	}
	return rp
}

func (rp reply) text(i int) string {
	if rp.parts != nil {
		if i < len(rp.parts) {
			return rp.parts[i]
		}
		return ""
	}
	if i == 0 {
		return rp.first
	}
	return rp.rest
}

func (rp reply) fullText() string {
	if rp.chunks <= 0 || rp.tool != "" {
		return ""
	}
	if rp.parts != nil {
		return strings.Join(rp.parts[:min(rp.chunks, len(rp.parts))], "")
	}
	return rp.first + strings.Repeat(rp.rest, rp.chunks-1)
}

// completion is the completion token count: one per chunk sent, for
// every choice.
func (rp reply) completion() int { return rp.chunks * rp.choices() }
