package routing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
)

// The degradation ladder: a route group may opt in to answer worse rather
// than not at all. Three rungs, each visible (X-Switchyard-Degraded, the
// call log's degraded column and trail, Test route, the dashboard):
//
//   - step_down: a tier whose recent SLA is violated sends its traffic to a
//     lighter tier of the group (chosen in route; explicit logic-model
//     requests and reasoning requests are never substituted);
//   - cached: when every candidate failed, an earlier answer to the same
//     request (exact match on the canonical request), if the request is
//     cacheable;
//   - static: last, the operator's reply, marked finish_reason
//     "static_answer" and model "switchyard-static-answer".
//
// Answers are produced as OpenAI chat.completion bodies and chunks, like a
// vendor's, so any front door can translate them.

// Degradation levels: X-Switchyard-Degraded and the call log's degraded.
const (
	DegradedStepDown = "step_down"
	DegradedCached   = "cached"
	DegradedStatic   = "static"
)

// HeaderDegraded names the rung that answered.
const HeaderDegraded = "X-Switchyard-Degraded"

// Static answers are marked so no caller mistakes them for a model's.
const (
	FinishStatic = "static_answer"
	StaticModel  = "switchyard-static-answer"
)

// CacheHeader lets a caller opt a request in to the answer cache
// ("allow") or out of it ("deny"). Without it, a request is cacheable when
// it is deterministic: temperature 0 and one choice.
const CacheHeader = "X-Switchyard-Cache"

// MaxCachedAnswer bounds an answer kept in the cache (bytes).
const MaxCachedAnswer = 256 << 10

// Degraded is the rung of the ladder that answered, on the trail.
type Degraded struct {
	Level string `json:"level"`
	// step_down: the tier asked for and the tier that served, and the
	// window that broke the SLA with the threshold crossed.
	From         string  `json:"from,omitempty"`
	To           string  `json:"to,omitempty"`
	Calls        int64   `json:"calls,omitempty"`
	P95MS        int64   `json:"p95_ms,omitempty"`
	ErrorPercent float64 `json:"error_percent,omitempty"`
	OverP95MS    int64   `json:"over_p95_ms,omitempty"`
	OverErrors   int     `json:"over_error_percent,omitempty"`
	// cached and static: the error code of the failure answered for;
	// cached: the answer's age and the cache's scope.
	Failure ErrorCode `json:"failure,omitempty"`
	AgeMS   int64     `json:"age_ms,omitempty"`
	Scope   string    `json:"scope,omitempty"`
}

// SLAViolation is what broke a tier's SLA (see routing/ladder).
type SLAViolation struct {
	Calls        int64
	P95          time.Duration
	ErrorPercent float64
	OverP95      time.Duration // the p95 threshold crossed; 0 if latency was fine
	OverErrors   int           // the error threshold crossed; 0 if errors were fine
}

// SLAWatch keeps the tiers' recent service level (per instance).
type SLAWatch interface {
	// Observe records one served or failed request of a tier a step-down
	// rule watches.
	Observe(k TierKey, r *config.RStepDown, latency time.Duration, failed bool)
	// SteppedDown reports whether the tier's traffic steps down now.
	SteppedDown(k TierKey) (SLAViolation, bool)
}

// AnswerCache keeps answers to cacheable requests per route group, bounded
// in entries; entries older than ttl are not served.
type AnswerCache interface {
	Get(ctx context.Context, group int64, key [32]byte, ttl time.Duration) (body []byte, age time.Duration, ok bool, err error)
	Put(ctx context.Context, group int64, key [32]byte, body []byte, ttl time.Duration, maxEntries int) error
}

// Cacheable reports whether a chat request may be answered from, and
// stored in, the answer cache: the caller opted in (X-Switchyard-Cache:
// allow), or the request is deterministic (temperature 0, one choice) and
// did not opt out (deny).
func Cacheable(req *adapter.ChatRequest, h http.Header) bool {
	switch strings.ToLower(strings.TrimSpace(h.Get(CacheHeader))) {
	case "allow":
		return true
	case "deny":
		return false
	}
	return req.Temperature != nil && *req.Temperature == 0 && req.N <= 1
}

// AnswerKey is a request's key in the answer cache: the scope ("c<id>" for
// the caller, "g<id>" for the whole route group) and the request's JSON
// canonicalised — keys sorted, whitespace dropped, and stream and
// stream_options removed, so a streamed and a plain request share their
// answer. ok is false for a body that is not a JSON object.
func AnswerKey(scope string, body []byte) (key [32]byte, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return key, false
	}
	delete(m, "stream")
	delete(m, "stream_options")
	canon, err := json.Marshal(m)
	if err != nil {
		return key, false
	}
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write(canon)
	copy(key[:], h.Sum(nil))
	return key, true
}

// StaticAnswer is the operator's reply as an OpenAI chat.completion, with
// finish_reason static_answer, model switchyard-static-answer and no usage
// spent.
func StaticAnswer(text, requestID string, now time.Time) *adapter.ChatResult {
	return &adapter.ChatResult{Body: completionBody("chatcmpl-"+requestID, now.Unix(), StaticModel, text, FinishStatic), FinishReason: FinishStatic, Usage: adapter.Usage{Known: true}}
}

func completionBody(id string, created int64, model, content, finish string) []byte {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	}
	b, _ := json.Marshal(struct {
		ID      string         `json:"id"`
		Object  string         `json:"object"`
		Created int64          `json:"created"`
		Model   string         `json:"model"`
		Choices []choice       `json:"choices"`
		Usage   map[string]int `json:"usage"`
	}{id, "chat.completion", created, model, []choice{{Message: message{Role: "assistant", Content: content}, FinishReason: finish}},
		map[string]int{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})
	return b
}

// AnswerChunks turns a chat.completion body into the chunks a stream of it
// would carry: a role chunk, one chunk with the whole content (and tool
// calls), the finish chunk and, last, a usage-only chunk (sent only to
// callers who asked for include_usage).
func AnswerChunks(body []byte) []adapter.Chunk {
	r := gjson.ParseBytes(body)
	head := func(b []byte) []byte {
		b = append(b, `{"id":`...)
		b = append(b, jsonString(r.Get("id").String())...)
		b = append(b, `,"object":"chat.completion.chunk","created":`...)
		b = strconv.AppendInt(b, r.Get("created").Int(), 10)
		b = append(b, `,"model":`...)
		b = append(b, jsonString(r.Get("model").String())...)
		return b
	}
	choice := func(delta string, finish string) []byte {
		b := head(nil)
		b = append(b, `,"choices":[{"index":0,"delta":`...)
		b = append(b, delta...)
		b = append(b, `,"finish_reason":`...)
		if finish == "" {
			b = append(b, "null"...)
		} else {
			b = append(b, jsonString(finish)...)
		}
		return append(b, "}]}"...)
	}
	msg := r.Get("choices.0.message")
	finish := r.Get("choices.0.finish_reason").String()
	if finish == "" {
		finish = "stop"
	}
	delta := map[string]any{}
	if c := msg.Get("content"); present(c) {
		delta["content"] = c.String()
	}
	if calls := msg.Get("tool_calls"); calls.IsArray() {
		var out []any
		for i, c := range calls.Array() {
			var call map[string]any
			if json.Unmarshal([]byte(c.Raw), &call) == nil {
				call["index"] = i
				out = append(out, call)
			}
		}
		delta["tool_calls"] = out
	}
	if rf := msg.Get("refusal"); present(rf) {
		delta["refusal"] = rf.String()
	}
	content, _ := json.Marshal(delta)
	chunks := []adapter.Chunk{
		{Data: choice(`{"role":"assistant","content":""}`, "")},
		{Data: choice(string(content), ""), Content: true},
		{Data: choice(`{}`, finish), FinishReason: finish},
	}
	if u := r.Get("usage"); u.Exists() {
		b := head(nil)
		b = append(b, `,"choices":[],"usage":`...)
		b = append(b, u.Raw...)
		chunks = append(chunks, adapter.Chunk{Data: append(b, '}'), UsageOnly: true})
	}
	return chunks
}

// present reports a JSON member that is there and not null.
func present(v gjson.Result) bool { return v.Exists() && v.Type != gjson.Null }

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// answerStream is a stream of chunks already in memory (a degraded answer).
type answerStream struct{}

func (answerStream) Next() (adapter.Chunk, error) { return adapter.Chunk{}, io.EOF }
func (answerStream) Usage() adapter.Usage         { return adapter.Usage{Known: true} }
func (answerStream) Close() error                 { return nil }

// streamAnswer collects a streamed answer's text for the answer cache; a
// stream with tool calls or an unknown shape is not kept.
type streamAnswer struct {
	content strings.Builder
	finish  string
	id      string
	created int64
	broken  bool
}

func (a *streamAnswer) add(data []byte) {
	if a.broken {
		return
	}
	r := gjson.ParseBytes(data)
	if a.id == "" {
		a.id, a.created = r.Get("id").String(), r.Get("created").Int()
	}
	d := r.Get("choices.0.delta")
	if present(d.Get("tool_calls")) || present(d.Get("refusal")) || a.content.Len() > MaxCachedAnswer {
		a.broken = true
		return
	}
	a.content.WriteString(d.Get("content").String())
	if f := r.Get("choices.0.finish_reason").String(); f != "" {
		a.finish = f
	}
}

// body is the collected answer as a chat.completion, or nil.
func (a *streamAnswer) body(model string) []byte {
	if a.broken || a.finish == "" {
		return nil
	}
	return completionBody(a.id, a.created, model, a.content.String(), a.finish)
}
