package fakevendor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Fault is misbehaviour injected into a response. The zero Fault is a healthy
// vendor. The same struct is used process-wide (Options.Fault, cmd flags),
// per rule (Rule.Fault, PUT /_fake/rules) and per request (X-Fake-* headers);
// the meaning of every field is identical in all three places.
type Fault struct {
	// Status, when >= 400, answers with that HTTP status and the protocol's own
	// error body and type for it (e.g. 429 rate_limit_error, 529 overloaded),
	// after auth checks and before request validation. Below 400 it is ignored.
	Status int
	// RetryAfter sets the Retry-After header (whole seconds, rounded up) on
	// the error response of Status.
	RetryAfter time.Duration
	// Latency is waited before anything is written (also before auth errors).
	Latency time.Duration
	// FirstChunkDelay is waited, in a stream, after the headers and the
	// preamble (OpenAI role chunk, Anthropic message_start/ping) are flushed and
	// before the first content chunk.
	FirstChunkDelay time.Duration
	// InterChunkDelay is waited between content chunks of a stream.
	InterChunkDelay time.Duration
	// CutAfterChunks closes the connection abruptly after that many content
	// chunks (no finish chunk, no [DONE], no message_stop). A negative value
	// cuts right after the preamble, before any content. 0 is off.
	CutAfterChunks int
	// ErrorAfterChunks sends the protocol's in-stream error event after that
	// many content chunks and ends the stream (OpenAI `data: {"error":…}`,
	// Anthropic `event: error` overloaded_error, Gemini a raw JSON error
	// object). Negative means before any content. 0 is off.
	ErrorAfterChunks int
	// ErrorStatus is the HTTP status the in-stream error event of
	// ErrorAfterChunks reports; 0 is the protocol's usual server-side error
	// (OpenAI server_error, Anthropic overloaded_error, Gemini 503). 499 is a
	// vendor-side cancellation, google.rpc CANCELLED, as Gemini (and its
	// OpenAI-compatible endpoint) reports it mid-stream.
	ErrorStatus int
	// ContentFilter answers with the protocol's content-filter outcome:
	// OpenAI finish_reason content_filter, Anthropic stop_reason refusal,
	// Gemini finishReason SAFETY.
	ContentFilter bool
	// OversizedLine makes the first content chunk's `data:` line exactly this
	// many bytes long (without its line feed), padding the text with 'x'.
	OversizedLine int
	// NoUsage omits token usage (OpenAI usage and the usage-only chunk,
	// Anthropic usage, Gemini usageMetadata).
	NoUsage bool
	// FailTimes limits the fault to the first N requests matching it; later
	// requests succeed (only Dimension, CachedTokens and ReplyChunks are kept).
	// 0 means every matching request. Counted per rule (and once for the
	// process-wide fault); Reset starts the count again. Ignored in headers.
	FailTimes int
	// ShuffleEmbeddings returns OpenAI embedding items in a random order with
	// their index fields still correct (Gemini has no index, so it is ignored).
	ShuffleEmbeddings bool
	// Dimension sets the embedding size; it wins over the request's
	// dimensions/outputDimensionality and over Options.Dimension.
	Dimension int
	// CachedTokens is reported as cached prompt tokens (OpenAI
	// prompt_tokens_details.cached_tokens, Anthropic cache_read_input_tokens,
	// Gemini cachedContentTokenCount) and added to the prompt token count.
	CachedTokens int
	// ReplyChunks overrides Options.ReplyChunks.
	ReplyChunks int
	// ErrorMessage replaces the vendor's message in the error answer of
	// Status (every protocol) and in OpenAI's in-stream error event of
	// ErrorAfterChunks, e.g. a context-length overflow quoting a key.
	ErrorMessage string
	// ErrorCode sets OpenAI's error.code in the same two places, e.g.
	// "context_length_exceeded" or "content_filter" (other protocols have
	// no such field and ignore it).
	ErrorCode string
	// FinishEveryChunk puts the finish reason on every content chunk of a
	// stream, as Gemini and Vertex do (OpenAI finish_reason, Gemini
	// finishReason; Anthropic has no such habit and ignores it).
	FinishEveryChunk bool
	// ReasoningContent makes an OpenAI chat answer reason the way
	// DeepSeek-R1 style vendors do: message.reasoning_content beside the
	// content, and reasoning_content deltas before the content deltas of a
	// stream (ReasoningText).
	ReasoningContent bool
	// RejectStreamOptions, RejectMaxCompletionTokens and RejectDeveloper
	// make the OpenAI chat endpoint a strict older vendor: a request
	// carrying stream_options, max_completion_tokens or a developer message
	// is answered with the 400 invalid_request_error such a vendor sends.
	RejectStreamOptions       bool
	RejectMaxCompletionTokens bool
	RejectDeveloper           bool
}

// ReasoningText is the reasoning a ReasoningContent answer gives.
const ReasoningText = "The user greets me; a short greeting back will do."

// shapeOnly keeps the fields that shape a healthy reply, for requests past
// FailTimes.
func (f Fault) shapeOnly() Fault {
	return Fault{Dimension: f.Dimension, CachedTokens: f.CachedTokens, ReplyChunks: f.ReplyChunks, FinishEveryChunk: f.FinishEveryChunk,
		ReasoningContent: f.ReasoningContent}
}

// Rule selects a Fault for requests whose upstream model and API key match.
// An empty Model or Key matches anything. The first matching rule wins; when
// none matches, Options.Fault applies.
type Rule struct {
	Model string `json:"model,omitempty"`
	Key   string `json:"key,omitempty"`
	Fault Fault  `json:"fault"`
}

// RuleStatus is a rule together with how many requests it has matched since
// it was set or since the last Reset.
type RuleStatus struct {
	Rule
	Matched int64 `json:"matched"`
}

func (r Rule) matches(model, key string) bool {
	return (r.Model == "" || r.Model == model) && (r.Key == "" || r.Key == key)
}

type ruleState struct {
	rule Rule
	hits atomic.Int64
}

// SetRules replaces all rules. It is safe to call while serving.
func (s *Server) SetRules(rules ...Rule) {
	next := make([]*ruleState, len(rules))
	for i, r := range rules {
		next[i] = &ruleState{rule: r}
	}
	s.rulesMu.Lock()
	s.rules.Store(&next)
	s.rulesMu.Unlock()
}

// AddRule appends a rule after the existing ones. It is safe to call while
// serving.
func (s *Server) AddRule(r Rule) {
	s.rulesMu.Lock()
	defer s.rulesMu.Unlock()
	cur := *s.rules.Load()
	next := make([]*ruleState, len(cur), len(cur)+1)
	copy(next, cur)
	next = append(next, &ruleState{rule: r})
	s.rules.Store(&next)
}

// ClearRules removes every rule; Options.Fault still applies.
func (s *Server) ClearRules() { s.SetRules() }

// Rules returns the current rules with their match counts.
func (s *Server) Rules() []RuleStatus {
	cur := *s.rules.Load()
	out := make([]RuleStatus, len(cur))
	for i, r := range cur {
		out[i] = RuleStatus{Rule: r.rule, Matched: r.hits.Load()}
	}
	return out
}

// faultFor picks the fault for one request: the first matching rule, else
// the process-wide fault; FailTimes is applied; X-Fake-* headers overlay it.
func (s *Server) faultFor(model, key string, h http.Header) (Fault, error) {
	f, hits := s.opts.Fault, &s.defaultHits
	for _, r := range *s.rules.Load() {
		if r.rule.matches(model, key) {
			f, hits = r.rule.Fault, &r.hits
			break
		}
	}
	n := hits.Add(1)
	if f.FailTimes > 0 && n > int64(f.FailTimes) {
		f = f.shapeOnly()
	}
	if err := overlayHeaders(&f, h); err != nil {
		return f, err
	}
	return f, nil
}

// Request headers that set a per-request fault. Durations are Go duration
// strings ("250ms"), booleans accept strconv.ParseBool values.
const (
	HeaderStatus          = "X-Fake-Status"
	HeaderRetryAfter      = "X-Fake-Retry-After"
	HeaderLatency         = "X-Fake-Latency"
	HeaderFirstChunkDelay = "X-Fake-First-Chunk-Delay"
	HeaderInterChunkDelay = "X-Fake-Inter-Chunk-Delay"
	HeaderCutAfter        = "X-Fake-Cut-After"
	HeaderErrorAfter      = "X-Fake-Error-After"
	HeaderErrorStatus     = "X-Fake-Error-Status"
	HeaderContentFilter   = "X-Fake-Content-Filter"
	HeaderOversizedLine   = "X-Fake-Oversized-Line"
	HeaderNoUsage         = "X-Fake-No-Usage"
	HeaderShuffle         = "X-Fake-Shuffle"
	HeaderDimension       = "X-Fake-Dimension"
	HeaderCachedTokens    = "X-Fake-Cached-Tokens"
	HeaderReplyChunks     = "X-Fake-Reply-Chunks"
	HeaderErrorMessage    = "X-Fake-Error-Message"
	HeaderErrorCode       = "X-Fake-Error-Code"
	HeaderFinishEvery     = "X-Fake-Finish-Every-Chunk"
	HeaderReasoning       = "X-Fake-Reasoning-Content"
	HeaderRejectStreamOpt = "X-Fake-Reject-Stream-Options"
	HeaderRejectMaxCompl  = "X-Fake-Reject-Max-Completion-Tokens"
	HeaderRejectDeveloper = "X-Fake-Reject-Developer"
)

// overlayHeaders sets the fields named by X-Fake-* headers on f. It costs
// one pass over the header keys when none is present.
func overlayHeaders(f *Fault, h http.Header) error {
	for name, vals := range h {
		if len(name) < 7 || !strings.EqualFold(name[:7], "X-Fake-") || len(vals) == 0 {
			continue
		}
		v := strings.TrimSpace(vals[0])
		var err error
		switch http.CanonicalHeaderKey(name) {
		case HeaderStatus:
			f.Status, err = strconv.Atoi(v)
		case HeaderRetryAfter:
			f.RetryAfter, err = time.ParseDuration(v)
		case HeaderLatency:
			f.Latency, err = time.ParseDuration(v)
		case HeaderFirstChunkDelay:
			f.FirstChunkDelay, err = time.ParseDuration(v)
		case HeaderInterChunkDelay:
			f.InterChunkDelay, err = time.ParseDuration(v)
		case HeaderCutAfter:
			f.CutAfterChunks, err = strconv.Atoi(v)
		case HeaderErrorAfter:
			f.ErrorAfterChunks, err = strconv.Atoi(v)
		case HeaderErrorStatus:
			f.ErrorStatus, err = strconv.Atoi(v)
		case HeaderContentFilter:
			f.ContentFilter, err = strconv.ParseBool(v)
		case HeaderOversizedLine:
			f.OversizedLine, err = strconv.Atoi(v)
		case HeaderNoUsage:
			f.NoUsage, err = strconv.ParseBool(v)
		case HeaderShuffle:
			f.ShuffleEmbeddings, err = strconv.ParseBool(v)
		case HeaderDimension:
			f.Dimension, err = strconv.Atoi(v)
		case HeaderCachedTokens:
			f.CachedTokens, err = strconv.Atoi(v)
		case HeaderReplyChunks:
			f.ReplyChunks, err = strconv.Atoi(v)
		case HeaderErrorMessage:
			f.ErrorMessage = v
		case HeaderErrorCode:
			f.ErrorCode = v
		case HeaderFinishEvery:
			f.FinishEveryChunk, err = strconv.ParseBool(v)
		case HeaderReasoning:
			f.ReasoningContent, err = strconv.ParseBool(v)
		case HeaderRejectStreamOpt:
			f.RejectStreamOptions, err = strconv.ParseBool(v)
		case HeaderRejectMaxCompl:
			f.RejectMaxCompletionTokens, err = strconv.ParseBool(v)
		case HeaderRejectDeveloper:
			f.RejectDeveloper, err = strconv.ParseBool(v)
		default:
			return fmt.Errorf("fakeupstream: unknown header %s", http.CanonicalHeaderKey(name))
		}
		if err != nil {
			return fmt.Errorf("fakeupstream: header %s: %w", http.CanonicalHeaderKey(name), err)
		}
	}
	return f.Validate()
}

// Validate reports a Fault that cannot be served (negative sizes, a status
// outside 100–599).
func (f Fault) Validate() error {
	switch {
	case f.Status != 0 && (f.Status < 100 || f.Status > 599):
		return fmt.Errorf("fakeupstream: status %d out of range", f.Status)
	case f.ErrorStatus != 0 && (f.ErrorStatus < 400 || f.ErrorStatus > 599):
		return fmt.Errorf("fakeupstream: error status %d out of range", f.ErrorStatus)
	case f.RetryAfter < 0 || f.Latency < 0 || f.FirstChunkDelay < 0 || f.InterChunkDelay < 0:
		return fmt.Errorf("fakeupstream: negative duration")
	case f.OversizedLine < 0 || f.Dimension < 0 || f.CachedTokens < 0 || f.ReplyChunks < 0 || f.FailTimes < 0:
		return fmt.Errorf("fakeupstream: negative size or count")
	case f.Dimension > 1<<16:
		return fmt.Errorf("fakeupstream: dimension %d too large", f.Dimension)
	}
	return nil
}

// retryAfterSeconds rounds d up to whole seconds, as Retry-After needs.
func retryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10)
}

// faultJSON is Fault on the wire: snake_case names, durations as Go
// duration strings ("1.5s"); integers are accepted as nanoseconds.
type faultJSON struct {
	Status            int          `json:"status,omitempty"`
	RetryAfter        jsonDuration `json:"retry_after,omitempty"`
	Latency           jsonDuration `json:"latency,omitempty"`
	FirstChunkDelay   jsonDuration `json:"first_chunk_delay,omitempty"`
	InterChunkDelay   jsonDuration `json:"inter_chunk_delay,omitempty"`
	CutAfterChunks    int          `json:"cut_after_chunks,omitempty"`
	ErrorAfterChunks  int          `json:"error_after_chunks,omitempty"`
	ErrorStatus       int          `json:"error_status,omitempty"`
	ContentFilter     bool         `json:"content_filter,omitempty"`
	OversizedLine     int          `json:"oversized_line,omitempty"`
	NoUsage           bool         `json:"no_usage,omitempty"`
	FailTimes         int          `json:"fail_times,omitempty"`
	ShuffleEmbeddings bool         `json:"shuffle_embeddings,omitempty"`
	Dimension         int          `json:"dimension,omitempty"`
	CachedTokens      int          `json:"cached_tokens,omitempty"`
	ReplyChunks       int          `json:"reply_chunks,omitempty"`
	ErrorMessage      string       `json:"error_message,omitempty"`
	ErrorCode         string       `json:"error_code,omitempty"`
	FinishEveryChunk  bool         `json:"finish_every_chunk,omitempty"`
	ReasoningContent  bool         `json:"reasoning_content,omitempty"`
	RejectStreamOpts  bool         `json:"reject_stream_options,omitempty"`
	RejectMaxCompl    bool         `json:"reject_max_completion_tokens,omitempty"`
	RejectDeveloper   bool         `json:"reject_developer,omitempty"`
}

// MarshalJSON encodes f with snake_case names and duration strings.
func (f Fault) MarshalJSON() ([]byte, error) {
	return json.Marshal(faultJSON{
		Status: f.Status, RetryAfter: jsonDuration(f.RetryAfter), Latency: jsonDuration(f.Latency),
		FirstChunkDelay: jsonDuration(f.FirstChunkDelay), InterChunkDelay: jsonDuration(f.InterChunkDelay),
		CutAfterChunks: f.CutAfterChunks, ErrorAfterChunks: f.ErrorAfterChunks, ErrorStatus: f.ErrorStatus, ContentFilter: f.ContentFilter,
		OversizedLine: f.OversizedLine, NoUsage: f.NoUsage, FailTimes: f.FailTimes,
		ShuffleEmbeddings: f.ShuffleEmbeddings, Dimension: f.Dimension, CachedTokens: f.CachedTokens,
		ReplyChunks: f.ReplyChunks, ErrorMessage: f.ErrorMessage, ErrorCode: f.ErrorCode, FinishEveryChunk: f.FinishEveryChunk,
		ReasoningContent: f.ReasoningContent, RejectStreamOpts: f.RejectStreamOptions, RejectMaxCompl: f.RejectMaxCompletionTokens, RejectDeveloper: f.RejectDeveloper,
	})
}

// UnmarshalJSON decodes what MarshalJSON writes and rejects unknown fields,
// so a misspelt fault is an error rather than a silent healthy vendor.
func (f *Fault) UnmarshalJSON(b []byte) error {
	var j faultJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("fakeupstream: fault: %w", err)
	}
	*f = Fault{
		Status: j.Status, RetryAfter: time.Duration(j.RetryAfter), Latency: time.Duration(j.Latency),
		FirstChunkDelay: time.Duration(j.FirstChunkDelay), InterChunkDelay: time.Duration(j.InterChunkDelay),
		CutAfterChunks: j.CutAfterChunks, ErrorAfterChunks: j.ErrorAfterChunks, ErrorStatus: j.ErrorStatus, ContentFilter: j.ContentFilter,
		OversizedLine: j.OversizedLine, NoUsage: j.NoUsage, FailTimes: j.FailTimes,
		ShuffleEmbeddings: j.ShuffleEmbeddings, Dimension: j.Dimension, CachedTokens: j.CachedTokens,
		ReplyChunks: j.ReplyChunks, ErrorMessage: j.ErrorMessage, ErrorCode: j.ErrorCode, FinishEveryChunk: j.FinishEveryChunk,
		ReasoningContent: j.ReasoningContent, RejectStreamOptions: j.RejectStreamOpts, RejectMaxCompletionTokens: j.RejectMaxCompl, RejectDeveloper: j.RejectDeveloper,
	}
	return f.Validate()
}

type jsonDuration time.Duration

func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = jsonDuration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration must be a string like \"250ms\" or integer nanoseconds: %w", err)
	}
	*d = jsonDuration(n)
	return nil
}
