package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Gemini speaks the Gemini API (generateContent, streamGenerateContent with
// alt=sse, batchEmbedContents), translating OpenAI requests to it and its
// answers back.
type Gemini struct{}

var _ Adapter = Gemini{}

func geminiBase(base string) string {
	return vendorBaseURL(base, "/v1beta") + "/v1beta/"
}

// geminiModelPath is the resource name of a model: "gemini-2.0-flash" and
// "models/gemini-2.0-flash" are both models/gemini-2.0-flash; a tuned model
// ("tunedModels/x") keeps its collection.
func geminiModelPath(model string) string {
	model = strings.Trim(model, "/")
	col, name, ok := strings.Cut(model, "/")
	if !ok {
		col, name = "models", model
	}
	return col + "/" + url.PathEscape(name)
}

// geminiModelURL is where a model's method is called: the Gemini API, or
// a Google model on Vertex AI (vertex.go).
func geminiModelURL(t Target, method string) string {
	if t.vertex != nil {
		return t.vertex.modelURL(t.UpstreamModel, method)
	}
	return geminiBase(t.BaseURL) + geminiModelPath(t.UpstreamModel) + ":" + method
}

// geminiHeaders carry the credential: the API key, or on Vertex AI the
// service account's bearer token.
func geminiHeaders(t Target) http.Header {
	h := http.Header{}
	if t.vertex != nil {
		h["Authorization"] = t.vertex.bearer
		return h
	}
	h.Set("x-goog-api-key", t.APIKey)
	return h
}

func (Gemini) Embed(ctx context.Context, t Target, r *EmbedRequest) (*EmbedResult, error) {
	if len(r.Inputs) == 0 {
		return nil, vendorBadRequest("no input to embed")
	}
	type item struct {
		Model                string        `json:"model"`
		Content              geminiContent `json:"content"`
		OutputDimensionality int           `json:"outputDimensionality,omitempty"`
	}
	mp := geminiModelPath(t.UpstreamModel)
	req := struct {
		Requests []item `json:"requests"`
	}{Requests: make([]item, 0, len(r.Inputs))}
	for _, in := range r.Inputs {
		req.Requests = append(req.Requests, item{
			Model:                mp,
			Content:              geminiContent{Parts: []geminiPart{{Text: in}}},
			OutputDimensionality: r.Dimensions,
		})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, vendorBadRequest("cannot encode the Gemini request: %v", err)
	}
	resp, err := vendorDo(ctx, t, http.MethodPost, geminiBase(t.BaseURL)+mp+":batchEmbedContents", geminiHeaders(t), body, ClassifyGemini)
	if err != nil {
		return nil, err
	}
	raw, err := vendorReadBody(ctx, resp)
	if err != nil {
		return nil, err
	}
	var out struct {
		Embeddings []struct {
			Values []float32 `json:"values"`
		} `json:"embeddings"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, &Error{Class: ClassServer, Status: resp.StatusCode, Message: "malformed Gemini embeddings", Err: err}
	}
	if len(out.Embeddings) != len(r.Inputs) {
		return nil, &Error{Class: ClassServer, Status: resp.StatusCode,
			Message: fmt.Sprintf("Gemini returned %d embeddings for %d inputs", len(out.Embeddings), len(r.Inputs))}
	}
	res := &EmbedResult{Vectors: make([][]float32, len(out.Embeddings))}
	for i, e := range out.Embeddings {
		res.Vectors[i] = e.Values
	}
	return res, nil // batchEmbedContents reports no usage: Usage stays unknown
}

// ListModels lists the models the key may use (GET /v1beta/models).
func (Gemini) ListModels(ctx context.Context, t Target) (*ModelList, error) {
	resp, err := vendorDo(ctx, t, http.MethodGet, geminiBase(t.BaseURL)+"models?pageSize=1000", geminiHeaders(t), nil, ClassifyGemini)
	if err != nil {
		return nil, err
	}
	raw, err := vendorReadBody(ctx, resp)
	if err != nil {
		return nil, err
	}
	var page struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, &Error{Class: ClassServer, Status: resp.StatusCode, Message: "malformed model list", Err: err}
	}
	out := &ModelList{Models: make([]string, 0, len(page.Models))}
	for _, m := range page.Models {
		out.Models = append(out.Models, strings.TrimPrefix(m.Name, "models/"))
	}
	return out, nil
}

type geminiErrorObject struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Type       string `json:"@type"`
		Reason     string `json:"reason"`
		RetryDelay string `json:"retryDelay"`
	} `json:"details"`
}

// ClassifyGemini classifies a failed Gemini API answer by its google.rpc
// status ({"error":{"code","message","status","details"}}), falling back to
// the HTTP status when the body has none.
func ClassifyGemini(status int, h http.Header, body []byte) *Error {
	var env struct {
		Error *geminiErrorObject `json:"error"`
	}
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		var list []struct {
			Error *geminiErrorObject `json:"error"`
		}
		if json.Unmarshal(b, &list) == nil && len(list) > 0 {
			env.Error = list[0].Error
		}
	} else {
		_ = json.Unmarshal(b, &env)
	}
	if env.Error == nil {
		return &Error{Class: geminiClass(status, nil), Status: status, Message: vendorMessage(status, body),
			RetryAfter: ParseRetryAfter(h, time.Now())}
	}
	return geminiErrorFrom(status, h, env.Error)
}

func geminiErrorFrom(status int, h http.Header, obj *geminiErrorObject) *Error {
	if status == 0 || status == http.StatusOK {
		status = obj.Code
	}
	e := &Error{Class: geminiClass(status, obj), Status: status, Code: obj.Status, Message: obj.Message}
	for _, d := range obj.Details {
		if d.Reason != "" {
			e.Code = d.Reason
			break
		}
	}
	if e.Message == "" {
		e.Message = vendorMessage(status, nil)
	}
	if e.Class == ClassRateLimited {
		e.RetryAfter = ParseRetryAfter(h, time.Now())
		for _, d := range obj.Details {
			if e.RetryAfter == 0 && strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
				if dur, err := time.ParseDuration(d.RetryDelay); err == nil && dur > 0 {
					e.RetryAfter = dur
				}
			}
		}
	}
	return e
}

func geminiClass(status int, obj *geminiErrorObject) Class {
	var rpc, msg string
	var reasons []string
	if obj != nil {
		rpc, msg = obj.Status, strings.ToLower(obj.Message)
		if status == 0 {
			status = obj.Code
		}
		for _, d := range obj.Details {
			reasons = append(reasons, d.Reason)
		}
	}
	hasReason := func(r string) bool {
		for _, x := range reasons {
			if x == r {
				return true
			}
		}
		return false
	}
	switch {
	case hasReason("API_KEY_INVALID") || strings.Contains(msg, "api key expired") || strings.Contains(msg, "api key not valid"):
		return ClassAuth
	case rpc == "RESOURCE_EXHAUSTED" || status == http.StatusTooManyRequests:
		// Includes the free tier's "quota exceeded", which refills.
		return ClassRateLimited
	case hasReason("BILLING_DISABLED") || strings.Contains(msg, "billing"):
		return ClassBilling
	case rpc == "UNAUTHENTICATED" || rpc == "PERMISSION_DENIED" || status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ClassAuth
	case rpc == "DEADLINE_EXCEEDED" || status == http.StatusGatewayTimeout || status == http.StatusRequestTimeout:
		return ClassTimeout
	case rpc == "INTERNAL" || rpc == "UNAVAILABLE" || rpc == "UNKNOWN" || rpc == "CANCELLED" || status == StatusVendorCancelled || status >= 500:
		return ClassServer
	case rpc == "INVALID_ARGUMENT" || rpc == "FAILED_PRECONDITION" || rpc == "NOT_FOUND" || rpc == "OUT_OF_RANGE" ||
		(status >= 400 && status < 500):
		return ClassBadRequest
	}
	return ClassServer
}
