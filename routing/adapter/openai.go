package adapter

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"switchyard/routing/wire"
	"time"

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
	req, sent, err := newUpstreamRequest(ctx, method, url, body)
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
	case t.keyHeader != "":
		h[t.keyHeader] = []string{t.APIKey}
	case t.Bearer != nil:
		h["Authorization"] = t.Bearer
	case t.APIKey != "":
		h["Authorization"] = []string{"Bearer " + t.APIKey}
	}
	req.Header = h
	resp, err := sent.do(t.Client, req)
	if err != nil {
		return nil, scrubKey(ClassifyTransport(ctx, err), t.APIKey)
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
	return scrubKey(ClassifyHTTP(resp.StatusCode, resp.Header, raw), key)
}

func openaiMalformed(status int, what string) *Error {
	return &Error{Class: ClassServer, Status: status, Code: "malformed_response", Message: "the upstream sent " + what}
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
		return nil, scrubKey(e, t.APIKey)
	}
	res, e := openaiEmbedResult(resp.StatusCode, raw, len(r.Inputs), r.Dimensions)
	if e != nil {
		return nil, scrubKey(e, t.APIKey)
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
	out = wire.AppendString(out, model)
	out = append(out, `,"input":[`...)
	for i, s := range r.Inputs {
		if i > 0 {
			out = append(out, ',')
		}
		out = wire.AppendString(out, s)
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
	v := gjson.Parse(wire.View(raw))
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
