package adapter

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// OpenAI speaks OpenAI's chat-completions, embeddings and models API, which
// most vendors also accept (DeepSeek, DashScope's compatible mode, Ark,
// Moonshot, Zhipu, SiliconFlow, vLLM, Ollama). Chat bodies are forwarded as
// the caller sent them: only model and the stream settings are replaced, so
// tools, images, response_format and fields we do not know pass through.
type OpenAI struct{}

var _ Adapter = OpenAI{}

const (
	openaiMaxChatBody  = 32 << 20  // a non-streamed completion
	openaiMaxEmbedBody = 256 << 20 // 2048 inputs × 3072 floats as JSON text
	openaiMaxErrorBody = 1 << 20
	// After [DONE], Close reads what little follows so the connection goes
	// back to the pool instead of being torn down, but never for longer than
	// this: a peer that keeps the response open must not hold us.
	openaiDrainLimit   = 64 << 10
	openaiDrainTimeout = 250 * time.Millisecond
)

// openaiURL joins base (which already ends in /v1 for OpenAI, with or without
// a trailing slash, possibly with a query) and path.
func openaiURL(base, path string) string {
	query := ""
	if i := strings.IndexByte(base, '?'); i >= 0 {
		base, query = base[:i], base[i:]
	}
	return strings.TrimRight(base, "/") + path + query
}

var (
	openaiAcceptJSON = []string{"application/json"}
	openaiAcceptSSE  = []string{"text/event-stream"}
	openaiUserAgent  = []string{"switchyard"}
)

// openaiDo sends one request. Its only deadline is ctx's: Target.Client must
// carry no Timeout of its own.
func openaiDo(ctx context.Context, t Target, method, url string, body []byte, accept string) (*http.Response, *Error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, &Error{Class: ClassNetwork, Code: "invalid_url", Message: "cannot build the upstream request: " + err.Error(), Err: err}
	}
	// Header values shared by every request; net/http only reads them.
	h := http.Header{"Accept": openaiAcceptJSON, "User-Agent": openaiUserAgent}
	if accept == "text/event-stream" {
		h["Accept"] = openaiAcceptSSE
	}
	t.addHeaders(h)
	if body != nil {
		h["Content-Type"] = openaiAcceptJSON
	}
	switch {
	case t.Bearer != nil:
		h["Authorization"] = t.Bearer
	case t.APIKey != "":
		h["Authorization"] = []string{"Bearer " + t.APIKey}
	}
	req.Header = h
	client := t.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, openaiScrub(ClassifyTransport(ctx, err), t.APIKey)
	}
	return resp, nil
}

// openaiRead reads a whole response body of at most limit bytes.
func openaiRead(ctx context.Context, resp *http.Response, limit int64) ([]byte, *Error) {
	tooLarge := func() *Error {
		return &Error{Class: ClassServer, Status: resp.StatusCode, Code: "response_too_large",
			Message: fmt.Sprintf("the upstream response exceeds %d bytes", limit)}
	}
	if resp.ContentLength > limit {
		return nil, tooLarge()
	}
	if resp.ContentLength > 0 {
		buf := make([]byte, resp.ContentLength)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			return nil, ClassifyTransport(ctx, err)
		}
		return buf, nil
	}
	buf, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, ClassifyTransport(ctx, err)
	}
	if int64(len(buf)) > limit {
		return nil, tooLarge()
	}
	return buf, nil
}

// openaiFail classifies a non-2xx response, reading at most
// openaiMaxErrorBody of it.
func openaiFail(resp *http.Response, key string) *Error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, openaiMaxErrorBody))
	return openaiScrub(ClassifyHTTP(resp.StatusCode, resp.Header, raw), key)
}

// openaiScrub removes the key from a vendor message should the vendor echo it.
func openaiScrub(e *Error, key string) *Error {
	if e != nil && len(key) >= 8 && strings.Contains(e.Message, key) {
		e.Message = strings.ReplaceAll(e.Message, key, "[redacted]")
	}
	return e
}

func openaiMalformed(status int, what string) *Error {
	return &Error{Class: ClassServer, Status: status, Code: "malformed_response", Message: "the upstream sent " + what}
}

// Chat sends a non-streamed completion. When the first choice finished with
// content_filter it returns the result (for its usage) together with a
// ClassContentFilter *Error.
func (o OpenAI) Chat(ctx context.Context, t Target, r *ChatRequest) (*ChatResult, error) {
	if rr := nativeResponses(r, t); rr != nil {
		return o.Responses(ctx, t, rr) // the Responses door, spoken natively
	}
	body, e := openaiChatBody(r, t.UpstreamModel, false)
	if e != nil {
		return nil, e
	}
	resp, e := openaiDo(ctx, t, http.MethodPost, openaiURL(t.BaseURL, "/chat/completions"), body, "application/json")
	if e != nil {
		return nil, e
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, openaiFail(resp, t.APIKey)
	}
	raw, e := openaiRead(ctx, resp, openaiMaxChatBody)
	if e != nil {
		return nil, openaiScrub(e, t.APIKey)
	}
	res, e := openaiChatResult(resp.StatusCode, raw)
	if e != nil {
		return estimateResult(res, r), openaiScrub(e, t.APIKey)
	}
	return estimateResult(res, r), nil
}

func openaiChatResult(status int, raw []byte) (*ChatResult, *Error) {
	if !validJSON(raw) {
		return nil, openaiMalformed(status, "a response that is not JSON")
	}
	v := gjson.Parse(parseView(raw))
	if !v.IsObject() {
		return nil, openaiMalformed(status, "a response that is not a JSON object")
	}
	var choices, usage, errv, model gjson.Result
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "choices":
			choices = f
		case "usage":
			usage = f
		case "error":
			errv = f
		case "model":
			model = f
		}
		return true
	})
	if errv.Exists() && errv.Type != gjson.Null && !choices.Exists() {
		return nil, classifyErrorEnvelope(status, raw)
	}
	res := &ChatResult{Body: raw, Usage: openaiUsage(usage)}
	if model.Index > 0 && model.Index+len(model.Raw) <= len(raw) {
		res.ModelAt, res.ModelLen = model.Index, len(model.Raw)
	}
	n := 0
	if choices.IsArray() {
		choices.ForEach(func(_, c gjson.Result) bool {
			n++
			c.ForEach(func(k, f gjson.Result) bool {
				if k.Str == "finish_reason" && f.Type == gjson.String {
					res.FinishReason = openaiFinish(f.Str)
				}
				return true
			})
			return false // the first choice decides
		})
	}
	if n == 0 {
		return nil, openaiMalformed(status, "a completion without choices")
	}
	if res.FinishReason == "content_filter" {
		return res, openaiContentFiltered(status)
	}
	return res, nil
}

func openaiContentFiltered(status int) *Error {
	return &Error{Class: ClassContentFilter, Status: status, Code: "content_filter",
		Message: "the upstream's content filter stopped the completion"}
}

// openaiFinish interns the usual finish reasons.
func openaiFinish(s string) string {
	switch s {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "content_filter":
		return "content_filter"
	case "function_call":
		return "function_call"
	}
	return strings.Clone(s)
}

func openaiCount(v gjson.Result) (int64, bool) {
	if v.Type != gjson.Number || math.IsNaN(v.Num) {
		return 0, false
	}
	if v.Num < 0 {
		return 0, true
	}
	if v.Num > math.MaxInt64/2 {
		return math.MaxInt64 / 2, true
	}
	return int64(v.Num), true
}

// openaiUsage normalizes an OpenAI usage object. Cached prompt tokens come
// from prompt_tokens_details.cached_tokens, else DeepSeek's
// prompt_cache_hit_tokens or Moonshot's top-level cached_tokens.
func openaiUsage(v gjson.Result) Usage {
	var u Usage
	if !v.IsObject() {
		return u
	}
	var (
		hasPrompt, hasCompletion bool
		altCached                int64
		altCachedKnown           bool
	)
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "prompt_tokens":
			u.Prompt, hasPrompt = openaiCount(f)
		case "completion_tokens":
			u.Completion, hasCompletion = openaiCount(f)
		case "prompt_tokens_details":
			f.ForEach(func(k, f gjson.Result) bool {
				if k.Str == "cached_tokens" {
					u.Cached, u.CachedKnown = openaiCount(f)
				}
				return true
			})
		case "completion_tokens_details":
			f.ForEach(func(k, f gjson.Result) bool {
				if k.Str == "reasoning_tokens" {
					u.Reasoning, u.ReasoningKnown = openaiCount(f)
				}
				return true
			})
		case "prompt_cache_hit_tokens", "cached_tokens":
			altCached, altCachedKnown = openaiCount(f)
		}
		return true
	})
	if !u.CachedKnown && altCachedKnown {
		u.Cached, u.CachedKnown = altCached, true
	}
	u.Known = hasPrompt && hasCompletion
	return u
}

// openaiChatBody is the caller's body with model replaced and the stream
// settings ours: stream false, or stream true with
// stream_options.include_usage true (the caller's other stream_options kept).
// Every other member is copied byte for byte.
func openaiChatBody(r *ChatRequest, model string, stream bool) ([]byte, *Error) {
	if r == nil {
		return nil, &Error{Class: ClassBadRequest, Code: "invalid_request", Message: "no chat request"}
	}
	root := gjson.Parse(parseView(r.Body))
	if !root.IsObject() {
		return nil, &Error{Class: ClassBadRequest, Code: "invalid_request", Message: "the chat request body is not a JSON object"}
	}
	out := make([]byte, 0, len(r.Body)+len(model)+64)
	out = append(out, `{"model":`...)
	out = openaiAppendString(out, model)
	if stream {
		out = append(out, `,"stream":true`...)
	} else {
		out = append(out, `,"stream":false`...)
	}
	var opts gjson.Result
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model", "stream":
			return true
		case "stream_options":
			opts = v
			return true
		}
		out = append(out, ',')
		out = append(out, k.Raw...)
		out = append(out, ':')
		out = append(out, v.Raw...)
		return true
	})
	if stream {
		out = append(out, `,"stream_options":{"include_usage":true`...)
		if opts.IsObject() {
			opts.ForEach(func(k, v gjson.Result) bool {
				if k.Str != "include_usage" {
					out = append(out, ',')
					out = append(out, k.Raw...)
					out = append(out, ':')
					out = append(out, v.Raw...)
				}
				return true
			})
		}
		out = append(out, '}')
	}
	return append(out, '}'), nil
}

const openaiHex = "0123456789abcdef"

// openaiAppendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func openaiAppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', openaiHex[c>>4], openaiHex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// ChatStream opens a streamed completion. A non-2xx answer is classified
// before any chunk; after that the Stream reports problems from Next.
func (o OpenAI) ChatStream(ctx context.Context, t Target, r *ChatRequest) (Stream, error) {
	if rr := nativeResponses(r, t); rr != nil {
		return o.ResponsesStream(ctx, t, rr)
	}
	body, e := openaiChatBody(r, t.UpstreamModel, true)
	if e != nil {
		return nil, e
	}
	// Close cancels sctx, which aborts the upstream exchange at once, even
	// while a Next is blocked reading.
	sctx, cancel := context.WithCancel(ctx)
	resp, e := openaiDo(sctx, t, http.MethodPost, openaiURL(t.BaseURL, "/chat/completions"), body, "text/event-stream")
	if e != nil {
		cancel()
		return nil, e
	}
	if resp.StatusCode/100 != 2 {
		e := openaiFail(resp, t.APIKey)
		resp.Body.Close()
		cancel()
		return nil, e
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		// Some compatible servers answer a stream request with one JSON
		// document: an error envelope, or a completion we cannot stream.
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, openaiMaxErrorBody))
		resp.Body.Close()
		cancel()
		if gjson.GetBytes(raw, "error").Exists() {
			return nil, openaiScrub(classifyErrorEnvelope(resp.StatusCode, raw), t.APIKey)
		}
		return nil, openaiMalformed(resp.StatusCode, "a JSON document instead of an event stream")
	}
	return finishing(&openaiStream{
		ctx:    sctx,
		cancel: cancel,
		body:   resp.Body,
		sse:    NewSSEReader(resp.Body),
		key:    t.APIKey,
		status: resp.StatusCode,
	}, r), nil
}

// openaiStream reads OpenAI chat.completion.chunk events. Next and Usage
// belong to one goroutine; Close may be called from another, and twice.
type openaiStream struct {
	ctx    context.Context
	cancel context.CancelFunc
	body   io.ReadCloser
	sse    *SSEReader
	key    string
	status int

	usage  Usage
	finish string // the last finish_reason seen
	err    error  // sticky: io.EOF or the *Error that ended the stream

	sawDone   atomic.Bool
	closed    atomic.Bool
	closeOnce sync.Once
}

func (s *openaiStream) Usage() Usage { return s.usage }

// Next returns the next chunk. A chunk whose finish_reason is content_filter
// comes with a ClassContentFilter *Error; the stream can still be read after
// it (the usage chunk follows), every other error ends it.
func (s *openaiStream) Next() (Chunk, error) {
	if s.err != nil {
		return Chunk{}, s.err
	}
	for {
		ev, err := s.sse.Next()
		if err != nil {
			s.err = s.readErr(err)
			return Chunk{}, s.err
		}
		if len(ev.Data) == 0 {
			continue
		}
		if string(ev.Data) == "[DONE]" {
			s.sawDone.Store(true)
			s.err = io.EOF
			return Chunk{}, io.EOF
		}
		c, e := s.chunk(ev)
		if e != nil {
			s.err = openaiScrub(e, s.key)
			return Chunk{}, s.err
		}
		if c.FinishReason == "content_filter" {
			return c, openaiContentFiltered(s.status)
		}
		return c, nil
	}
}

func (s *openaiStream) readErr(err error) error {
	switch {
	case s.closed.Load():
		return &Error{Class: ClassCancelled, Code: "client_cancelled", Message: "the stream was closed", Err: err}
	case errors.Is(err, io.EOF):
		if s.finish != "" {
			return io.EOF // no [DONE], but the completion had finished
		}
		return &Error{Class: ClassNetwork, Status: s.status, Code: "stream_ended_early", Message: "stream ended early: the upstream closed it before the completion finished"}
	case errors.Is(err, ErrSSELineTooLong):
		return &Error{Class: ClassServer, Status: s.status, Code: "malformed_response", Message: err.Error(), Err: err}
	}
	return openaiScrub(ClassifyTransport(s.ctx, err), s.key)
}

// chunk turns one event into a Chunk, or into the *Error the upstream
// reported in it.
func (s *openaiStream) chunk(ev SSEEvent) (Chunk, *Error) {
	if !validJSON(ev.Data) {
		return Chunk{}, openaiMalformed(s.status, "a stream event that is not JSON")
	}
	// SSEReader reuses its buffer; FinishReason may point into this copy.
	c := Chunk{Data: bytes.Clone(ev.Data)}
	v := gjson.Parse(parseView(c.Data))
	if !v.IsObject() {
		return Chunk{}, openaiMalformed(s.status, "a stream event that is not a JSON object")
	}
	var choices, usage, errv gjson.Result
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "choices":
			choices = f
		case "usage":
			usage = f
		case "error":
			errv = f
		}
		return true
	})
	if ev.Event == "error" || errv.Exists() && errv.Type != gjson.Null {
		return Chunk{}, classifyErrorEnvelope(s.status, c.Data)
	}
	if usage.IsObject() {
		s.usage = openaiUsage(usage)
	}
	n := 0
	choices.ForEach(func(_, ch gjson.Result) bool {
		n++
		ch.ForEach(func(k, f gjson.Result) bool {
			switch k.Str {
			case "delta":
				if !c.Content && openaiDeltaHasContent(f) {
					c.Content = true
				}
			case "finish_reason":
				if f.Type == gjson.String && f.Str != "" && c.FinishReason == "" {
					c.FinishReason = openaiFinish(f.Str)
				}
			}
			return true
		})
		return true
	})
	if c.FinishReason != "" {
		s.finish = c.FinishReason
	}
	c.UsageOnly = n == 0 && usage.IsObject()
	return c, nil
}

// openaiDeltaHasContent reports whether a delta carries something a caller
// can use: text, reasoning text, a refusal or a tool call. A role-only delta
// (content "" or null) does not.
func openaiDeltaHasContent(d gjson.Result) bool {
	has := false
	d.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "content", "reasoning_content", "reasoning", "refusal":
			has = f.Type == gjson.String && f.Str != ""
		case "tool_calls":
			has = f.IsArray() && len(f.Raw) > 2 && strings.TrimSpace(f.Raw[1:len(f.Raw)-1]) != ""
		case "function_call":
			has = f.IsObject()
		}
		return !has
	})
	return has
}

// Close aborts the upstream exchange (or, after [DONE], lets its connection
// return to the pool). It is safe to call twice and concurrently with Next.
func (s *openaiStream) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.sawDone.Load() {
			t := time.AfterFunc(openaiDrainTimeout, s.cancel)
			_, _ = io.CopyN(io.Discard, s.body, openaiDrainLimit)
			t.Stop()
		}
		s.cancel()
		_ = s.body.Close()
	})
	return nil
}

// Embed sends one batch and returns the vectors in input order, whatever
// order the upstream listed them in.
func (OpenAI) Embed(ctx context.Context, t Target, r *EmbedRequest) (*EmbedResult, error) {
	if r == nil || len(r.Inputs) == 0 {
		return nil, &Error{Class: ClassBadRequest, Code: "invalid_request", Message: "an embedding batch needs at least one input"}
	}
	resp, e := openaiDo(ctx, t, http.MethodPost, openaiURL(t.BaseURL, "/embeddings"), openaiEmbedBody(t.UpstreamModel, r), "application/json")
	if e != nil {
		return nil, e
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, openaiFail(resp, t.APIKey)
	}
	raw, e := openaiRead(ctx, resp, openaiMaxEmbedBody)
	if e != nil {
		return nil, openaiScrub(e, t.APIKey)
	}
	res, e := openaiEmbedResult(resp.StatusCode, raw, len(r.Inputs), r.Dimensions)
	if e != nil {
		return nil, openaiScrub(e, t.APIKey)
	}
	return res, nil
}

func openaiEmbedBody(model string, r *EmbedRequest) []byte {
	n := len(model) + 64
	for _, s := range r.Inputs {
		n += len(s) + 3
	}
	out := make([]byte, 0, n)
	out = append(out, `{"model":`...)
	out = openaiAppendString(out, model)
	out = append(out, `,"input":[`...)
	for i, s := range r.Inputs {
		if i > 0 {
			out = append(out, ',')
		}
		out = openaiAppendString(out, s)
	}
	out = append(out, ']')
	if r.Dimensions > 0 {
		out = append(out, `,"dimensions":`...)
		out = strconv.AppendInt(out, int64(r.Dimensions), 10)
	}
	return append(out, `,"encoding_format":"float"}`...)
}

func openaiEmbedResult(status int, raw []byte, n, dims int) (*EmbedResult, *Error) {
	if !json.Valid(raw) {
		return nil, openaiMalformed(status, "an embeddings response that is not JSON")
	}
	v := gjson.Parse(parseView(raw))
	if !v.IsObject() {
		return nil, openaiMalformed(status, "an embeddings response that is not a JSON object")
	}
	var data, usage, errv gjson.Result
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "data":
			data = f
		case "usage":
			usage = f
		case "error":
			errv = f
		}
		return true
	})
	if errv.Exists() && errv.Type != gjson.Null && !data.Exists() {
		return nil, classifyErrorEnvelope(status, raw)
	}
	if !data.IsArray() {
		return nil, openaiMalformed(status, "an embeddings response without a data array")
	}
	res := &EmbedResult{Vectors: make([][]float32, n)}
	var (
		e     *Error
		count int
		width = dims
	)
	data.ForEach(func(_, item gjson.Result) bool {
		idx := count // an item without an index takes its position
		var emb gjson.Result
		item.ForEach(func(k, f gjson.Result) bool {
			switch k.Str {
			case "index":
				if f.Type == gjson.Number && f.Num == math.Trunc(f.Num) && f.Num >= 0 && f.Num < float64(math.MaxInt32) {
					idx = int(f.Num)
				} else {
					idx = -1
				}
			case "embedding":
				emb = f
			}
			return true
		})
		count++
		switch {
		case idx < 0 || idx >= n:
			e = openaiMalformed(status, fmt.Sprintf("embedding index %s for a batch of %d inputs", item.Get("index").Raw, n))
		case res.Vectors[idx] != nil:
			e = openaiMalformed(status, fmt.Sprintf("embedding index %d twice", idx))
		default:
			res.Vectors[idx], e = openaiVector(status, emb, width)
			width = len(res.Vectors[idx])
		}
		return e == nil
	})
	if e != nil {
		return nil, e
	}
	if count != n {
		return nil, openaiMalformed(status, fmt.Sprintf("%d embeddings for %d inputs", count, n))
	}
	for _, vec := range res.Vectors {
		if len(vec) != width {
			return nil, openaiMalformed(status, fmt.Sprintf("vectors of different lengths (%d and %d)", len(vec), width))
		}
	}
	if dims > 0 && width != dims {
		return nil, openaiMalformed(status, fmt.Sprintf("%d-dimensional vectors where %d were asked for", width, dims))
	}
	usage.ForEach(func(k, f gjson.Result) bool {
		if k.Str == "prompt_tokens" {
			res.Usage.Prompt, res.Usage.Known = openaiCount(f)
		}
		return true
	})
	return res, nil
}

// openaiVector decodes one embedding: a JSON array of numbers, or the
// base64 little-endian float32 form some servers send regardless.
func openaiVector(status int, v gjson.Result, width int) ([]float32, *Error) {
	switch {
	case v.IsArray():
		vec := make([]float32, 0, width)
		ok := true
		v.ForEach(func(_, f gjson.Result) bool {
			if f.Type != gjson.Number {
				ok = false
				return false
			}
			vec = append(vec, float32(f.Num))
			return true
		})
		if !ok {
			return nil, openaiMalformed(status, "an embedding with a non-numeric element")
		}
		if len(vec) == 0 {
			return nil, openaiMalformed(status, "an empty embedding")
		}
		return vec, nil
	case v.Type == gjson.String:
		b, err := base64.StdEncoding.DecodeString(v.Str)
		if err != nil || len(b) == 0 || len(b)%4 != 0 {
			return nil, openaiMalformed(status, "an embedding that is neither numbers nor base64 float32")
		}
		vec := make([]float32, len(b)/4)
		for i := range vec {
			vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return vec, nil
	}
	return nil, openaiMalformed(status, "an item without an embedding")
}

// ListModels lists the model ids a key can see: a cheap authenticated call
// used to verify a key.
func (OpenAI) ListModels(ctx context.Context, t Target) (*ModelList, error) {
	resp, e := openaiDo(ctx, t, http.MethodGet, openaiURL(t.BaseURL, "/models"), nil, "application/json")
	if e != nil {
		return nil, e
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, openaiFail(resp, t.APIKey)
	}
	raw, e := openaiRead(ctx, resp, openaiMaxChatBody)
	if e != nil {
		return nil, e
	}
	if !json.Valid(raw) {
		return nil, openaiMalformed(resp.StatusCode, "a model list that is not JSON")
	}
	data := gjson.GetBytes(raw, "data")
	if !data.IsArray() {
		return nil, openaiMalformed(resp.StatusCode, "a model list without a data array")
	}
	list := &ModelList{Models: []string{}}
	data.ForEach(func(_, m gjson.Result) bool {
		if id := m.Get("id"); id.Type == gjson.String && id.Str != "" {
			list.Models = append(list.Models, id.Str)
		}
		return true
	})
	return list, nil
}
