package adapter

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Anthropic speaks the Anthropic Messages API (POST {base}/v1/messages),
// translating OpenAI chat requests to it and its answers back.
type Anthropic struct {
	// DefaultMaxTokens is sent when the caller gave no max_tokens, which
	// Anthropic requires; 0 means 4096.
	DefaultMaxTokens int
}

var _ Adapter = Anthropic{}

const (
	anthropicVersion          = "2023-06-01"
	anthropicDefaultMaxTokens = 4096
	anthropicMinThinking      = 1024 // the smallest budget_tokens Anthropic accepts
)

func (a Anthropic) defaultMaxTokens() int {
	if a.DefaultMaxTokens > 0 {
		return a.DefaultMaxTokens
	}
	return anthropicDefaultMaxTokens
}

func anthropicURL(base, path string) string {
	return vendorBaseURL(base, "/v1") + path
}

// anthropicMessagesURL is where a Messages call goes: Anthropic's API
// (with query, a native call's switches), or a Claude model on Vertex AI
// (rawPredict, streamRawPredict; vertex.go).
func anthropicMessagesURL(t Target, stream bool, query string) string {
	if t.vertex == nil {
		return anthropicURL(t.BaseURL, "/v1/messages") + query
	}
	if stream {
		return t.vertex.modelURL(t.UpstreamModel, "streamRawPredict")
	}
	return t.vertex.modelURL(t.UpstreamModel, "rawPredict")
}

// anthropicClassifier reads a failed Messages call: Anthropic's errors, or
// on Vertex AI Google's too (ClassifyVertex).
func anthropicClassifier(t Target) vendorClassifier {
	if t.vertex != nil {
		return ClassifyVertex
	}
	return ClassifyAnthropic
}

// anthropicStreamErrors are anthropicErrors with anthropicClassifier's
// reading of a failed answer.
func anthropicStreamErrors(t Target) vendorErrors {
	if t.vertex == nil {
		return anthropicErrors
	}
	return vendorErrors{classify: ClassifyVertex, envelope: anthropicErrors.envelope}
}

func anthropicHeaders(t Target) http.Header {
	h := http.Header{}
	if t.vertex != nil {
		// The version travels in the body (vertexMessagesBody).
		h["Authorization"] = t.vertex.bearer
		return h
	}
	h.Set("x-api-key", t.APIKey)
	h.Set("anthropic-version", anthropicVersion)
	return h
}

// Embed fails: Anthropic offers no embeddings.
func (Anthropic) Embed(context.Context, Target, *EmbedRequest) (*EmbedResult, error) {
	return nil, &Error{Class: ClassBadRequest, Code: "unsupported", Message: "Anthropic has no embeddings API"}
}

// ListModels lists the models the key may use (GET /v1/models).
func (Anthropic) ListModels(ctx context.Context, t Target) (*ModelList, error) {
	resp, err := vendorDo(ctx, t, http.MethodGet, anthropicURL(t.BaseURL, "/v1/models?limit=1000"), anthropicHeaders(t), nil, ClassifyAnthropic)
	if err != nil {
		return nil, err
	}
	raw, err := vendorReadBody(ctx, resp)
	if err != nil {
		return nil, err
	}
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, &Error{Class: ClassServer, Status: resp.StatusCode, Message: "malformed model list", Err: err}
	}
	out := &ModelList{Models: make([]string, 0, len(page.Data))}
	for _, m := range page.Data {
		out.Models = append(out.Models, m.ID)
	}
	return out, nil
}

type anthropicResponse struct {
	ID          string                   `json:"id"`
	Type        string                   `json:"type"`
	Model       string                   `json:"model"`
	Content     []anthropicResponseBlock `json:"content"`
	StopReason  string                   `json:"stop_reason"`
	StopDetails *anthropicStopDetails    `json:"stop_details"`
	Usage       anthropicUsage           `json:"usage"`
	Error       *anthropicErrorObject    `json:"error"`
}

type anthropicResponseBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
}

type anthropicStopDetails struct {
	Type        string `json:"type"`
	Category    string `json:"category"`
	Explanation string `json:"explanation"`
}

type anthropicUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

type anthropicErrorObject struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// merge overlays the fields present in later (message_delta's cumulative
// usage) on u (message_start's).
func (u *anthropicUsage) merge(later *anthropicUsage) {
	if later == nil {
		return
	}
	if later.InputTokens != nil {
		u.InputTokens = later.InputTokens
	}
	if later.OutputTokens != nil {
		u.OutputTokens = later.OutputTokens
	}
	if later.CacheCreationInputTokens != nil {
		u.CacheCreationInputTokens = later.CacheCreationInputTokens
	}
	if later.CacheReadInputTokens != nil {
		u.CacheReadInputTokens = later.CacheReadInputTokens
	}
}

// usage normalizes Anthropic's usage: its input_tokens excludes cache reads
// and writes, OpenAI's prompt_tokens includes them.
func (u anthropicUsage) usage() Usage {
	val := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	out := Usage{
		Prompt:        val(u.InputTokens) + val(u.CacheReadInputTokens) + val(u.CacheCreationInputTokens),
		Completion:    val(u.OutputTokens),
		Cached:        val(u.CacheReadInputTokens),
		CacheCreation: val(u.CacheCreationInputTokens),
		Known:         u.InputTokens != nil && u.OutputTokens != nil,
	}
	out.CachedKnown = out.Known && u.CacheReadInputTokens != nil
	return out
}

type anthropicEvent struct {
	Type         string                  `json:"type"`
	Message      *anthropicResponse      `json:"message"`
	Index        int                     `json:"index"`
	ContentBlock *anthropicResponseBlock `json:"content_block"`
	Delta        *anthropicEventDelta    `json:"delta"`
	Usage        *anthropicUsage         `json:"usage"`
	Error        *anthropicErrorObject   `json:"error"`
}

type anthropicEventDelta struct {
	Type        string                `json:"type"`
	Text        string                `json:"text"`
	PartialJSON string                `json:"partial_json"`
	Thinking    string                `json:"thinking"`
	StopReason  string                `json:"stop_reason"`
	StopDetails *anthropicStopDetails `json:"stop_details"`
}

// --- errors ---

// ClassifyAnthropic classifies a failed Messages API answer by the error type
// in its body ({"type":"error","error":{"type","message"}}), falling back to
// the HTTP status when the body has none.
func ClassifyAnthropic(status int, h http.Header, body []byte) *Error {
	var env struct {
		Error anthropicErrorObject `json:"error"`
	}
	_ = json.Unmarshal(body, &env)
	e := &Error{
		Class:   anthropicClass(status, env.Error.Type, env.Error.Message),
		Status:  status,
		Code:    env.Error.Type,
		Message: env.Error.Message,
	}
	if e.Message == "" {
		e.Message = vendorMessage(status, body)
	}
	if e.Class == ClassRateLimited {
		e.RetryAfter = anthropicRetryAfter(h, time.Now())
	}
	return e
}

// anthropicStreamError classifies an error object received with HTTP 200:
// an in-stream "event: error" or a body of type "error".
func anthropicStreamError(obj *anthropicErrorObject) *Error {
	return &Error{Class: anthropicClass(0, obj.Type, obj.Message), Code: obj.Type, Message: obj.Message}
}

func anthropicClass(status int, typ, msg string) Class {
	switch typ {
	case "rate_limit_error":
		return ClassRateLimited
	case "authentication_error", "permission_error":
		return ClassAuth
	case "billing_error":
		return ClassBilling
	case "overloaded_error", "api_error":
		return ClassServer
	case "timeout_error":
		return ClassTimeout
	case "invalid_request_error", "not_found_error", "request_too_large":
		// An exhausted prepaid balance arrives as a 400 invalid_request_error.
		if strings.Contains(strings.ToLower(msg), "credit balance") {
			return ClassBilling
		}
		return ClassBadRequest
	}
	switch {
	case status == http.StatusTooManyRequests:
		return ClassRateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ClassAuth
	case status == http.StatusPaymentRequired:
		return ClassBilling
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return ClassTimeout
	case status == StatusVendorCancelled:
		return ClassServer
	case status >= 400 && status < 500:
		return ClassBadRequest
	}
	return ClassServer // 5xx, 529 and anything unexpected
}

// anthropicRetryAfter honours Retry-After, else the latest
// anthropic-ratelimit-*-reset (RFC 3339) among the exhausted limits, or
// among all of them when none says it is exhausted.
func anthropicRetryAfter(h http.Header, now time.Time) time.Duration {
	if d := ParseRetryAfter(h, now); d > 0 {
		return d
	}
	var exhausted, latest time.Duration
	for _, limit := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		reset, err := time.Parse(time.RFC3339, strings.TrimSpace(h.Get("anthropic-ratelimit-"+limit+"-reset")))
		if err != nil || !reset.After(now) {
			continue
		}
		d := reset.Sub(now)
		latest = max(latest, d)
		if strings.TrimSpace(h.Get("anthropic-ratelimit-"+limit+"-remaining")) == "0" {
			exhausted = max(exhausted, d)
		}
	}
	if exhausted > 0 {
		return exhausted
	}
	return latest
}
