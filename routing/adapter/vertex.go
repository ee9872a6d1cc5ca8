package adapter

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"

	"switchyard/routing/config"
	"switchyard/routing/wire"
)

// Vertex speaks Google Vertex AI. A deployment's upstream model names a
// publisher model (config.VertexPublisher): Google's models speak
// Gemini's wire (the Gemini adapter's translation, streams and errors),
// Anthropic's Claude models the Messages API (the Anthropic adapter's,
// so the Messages front door passes through natively), both under the
// provider's project and location:
//
//	{base}/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent
//	{base}/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:streamGenerateContent?alt=sse
//	{base}/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:rawPredict
//	{base}/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:streamRawPredict
//
// A Claude call's body has no model (the URL names it) and carries
// anthropic_version "vertex-2023-10-16". The base defaults to
// https://{location}-aiplatform.googleapis.com (aiplatform.googleapis.com
// for the global location). A key is a service account's JSON key file,
// exchanged for OAuth2 tokens (google_tokens.go) that are cached per
// credential and refreshed before they expire; a token Vertex refuses
// (401) is fetched anew and the call made once more.
type Vertex struct {
	tokens *GoogleTokens
}

var _ Adapter = Vertex{}

// NewVertex returns a Vertex adapter with its own token cache.
func NewVertex() Vertex { return Vertex{tokens: NewGoogleTokens()} }

// VertexAnthropicVersion is the anthropic_version a Claude call on Vertex
// AI carries in its body.
const VertexAnthropicVersion = "vertex-2023-10-16"

// vertexRoute addresses one call to a publisher model on Vertex AI.
type vertexRoute struct {
	base, project, location, publisher string
	bearer                             []string // "Bearer " + the access token
}

// VertexBaseURL is the endpoint of a Vertex AI provider: the endpoint of
// its location when the base URL is empty or one of Google's own (a
// regional endpoint serves only its own location, so a base URL left from
// another location cannot misroute), else the base URL (a private or
// test endpoint).
func VertexBaseURL(base, location string) string {
	b := vendorBaseURL(base, "/v1")
	if u, err := url.Parse(b); b != "" && (err != nil || !strings.HasSuffix(u.Hostname(), "aiplatform.googleapis.com")) {
		return b
	}
	location = strings.TrimSpace(location)
	if location == "" || location == "global" {
		return "https://aiplatform.googleapis.com"
	}
	return "https://" + location + "-aiplatform.googleapis.com"
}

// modelURL is the URL of a publisher model's method ("generateContent",
// "streamRawPredict", "streamGenerateContent?alt=sse").
func (v *vertexRoute) modelURL(model, method string) string {
	return v.base + "/v1/projects/" + url.PathEscape(v.project) + "/locations/" + url.PathEscape(v.location) +
		"/publishers/" + v.publisher + "/models/" + url.PathEscape(model) + ":" + method
}

// VertexModelURL is the URL of method on t's upstream model, as a call
// would address it (tests and the console show it).
func VertexModelURL(t Target, method string) string {
	pub, model := config.VertexPublisher(t.UpstreamModel)
	v := vertexRoute{base: VertexBaseURL(t.BaseURL, t.Region), project: strings.TrimSpace(t.Project), location: strings.TrimSpace(t.Region), publisher: pub}
	return v.modelURL(model, method)
}

// vertexMessagesBody is a Messages body as it goes: unchanged to
// Anthropic; to Vertex AI without model and with its anthropic_version.
func vertexMessagesBody(t Target, body []byte) ([]byte, error) {
	if t.vertex == nil {
		return body, nil
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, vendorBadRequest("the Messages request body is not a JSON object")
	}
	out := make([]byte, 0, len(body)+48)
	out = append(out, `{"anthropic_version":`...)
	out = wire.AppendString(out, VertexAnthropicVersion)
	root.ForEach(func(k, v gjson.Result) bool {
		if k.Str == "model" || k.Str == "anthropic_version" {
			return true
		}
		out = append(out, ',')
		out = append(out, k.Raw...)
		out = append(out, ':')
		out = append(out, v.Raw...)
		return true
	})
	return append(out, '}'), nil
}

// route addresses t to its publisher model with a token of its service
// account; fresh skips the cached token.
func (v Vertex) route(ctx context.Context, t Target, fresh bool) (Target, *Error) {
	project, location := strings.TrimSpace(t.Project), strings.TrimSpace(t.Region)
	if project == "" || location == "" {
		return t, &Error{Class: ClassBadRequest, Code: "no_project", Message: "the Vertex AI provider needs a project and a location"}
	}
	tok, e := v.tokens.Token(ctx, t, fresh)
	if e != nil {
		return t, e
	}
	pub, model := config.VertexPublisher(t.UpstreamModel)
	t.UpstreamModel = model
	t.vertex = &vertexRoute{base: VertexBaseURL(t.BaseURL, location), project: project, location: location, publisher: pub,
		bearer: []string{"Bearer " + tok}}
	return t, nil
}

// call runs one Gemini- or Anthropic-wire call on Vertex AI. A token
// Vertex refuses with 401 (expired or revoked early) is fetched anew and
// the call made once more, so a token's end never fails a request.
func (v Vertex) call(ctx context.Context, t Target, fn func(Target) error) error {
	at, e := v.route(ctx, t, false)
	if e != nil {
		return e
	}
	err := vertexScrub(fn(at), at)
	var ue *Error
	if !errors.As(err, &ue) || ue.Status != http.StatusUnauthorized || ctx.Err() != nil {
		return err
	}
	if at, e = v.route(ctx, t, true); e != nil {
		return e
	}
	return vertexScrub(fn(at), at)
}

// vertexScrub keeps the access token out of an error message.
func vertexScrub(err error, t Target) error {
	var ue *Error
	if err == nil || t.vertex == nil || !errors.As(err, &ue) {
		return err
	}
	scrubKey(ue, strings.TrimPrefix(t.vertex.bearer[0], "Bearer "))
	return err
}

// anthropicOnVertex reports whether t, once routed, goes to a Claude model.
func anthropicOnVertex(t Target) bool {
	return t.vertex != nil && t.vertex.publisher == config.VertexAnthropic
}

// Chat sends one call to the deployment's publisher model.
func (v Vertex) Chat(ctx context.Context, t Target, r *ChatRequest) (res *ChatResult, err error) {
	err = v.call(ctx, t, func(at Target) error {
		var e error
		if anthropicOnVertex(at) {
			res, e = Anthropic{}.Chat(ctx, at, r)
		} else {
			res, e = Gemini{}.Chat(ctx, at, r)
		}
		return e
	})
	return res, err
}

// ChatStream opens a streamed call (streamGenerateContent in SSE mode, or
// streamRawPredict).
func (v Vertex) ChatStream(ctx context.Context, t Target, r *ChatRequest) (s Stream, err error) {
	err = v.call(ctx, t, func(at Target) error {
		var e error
		if anthropicOnVertex(at) {
			s, e = Anthropic{}.ChatStream(ctx, at, r)
		} else {
			s, e = Gemini{}.ChatStream(ctx, at, r)
		}
		return e
	})
	return s, err
}

// Embed: Vertex AI's embedding models speak predict with their own
// bodies, which this build does not translate.
func (Vertex) Embed(context.Context, Target, *EmbedRequest) (*EmbedResult, error) {
	return nil, &Error{Class: ClassBadRequest, Code: "unsupported", Message: "embeddings on Vertex AI are not supported by this build"}
}

// vertexPing is the smallest Gemini request (one output token).
var vertexPing = []byte(`{"contents":[{"role":"user","parts":[{"text":"ping"}]}],"generationConfig":{"maxOutputTokens":1}}`)

// ListModels verifies the credential: a token from the service account,
// then, when a model is named, the smallest call to it. Vertex AI lists
// no models to a project's credential the way the vendors' APIs do.
func (v Vertex) ListModels(ctx context.Context, t Target) (*ModelList, error) {
	if t.UpstreamModel == "" {
		if _, e := v.tokens.Token(ctx, t, false); e != nil {
			return nil, e
		}
		return &ModelList{}, nil
	}
	err := v.call(ctx, t, func(at Target) error {
		if anthropicOnVertex(at) {
			body, _ := vertexMessagesBody(at, []byte(`{"max_tokens":1,"messages":[{"role":"user","content":"ping"}]}`))
			resp, err := vendorDo(ctx, at, http.MethodPost, anthropicMessagesURL(at, false, ""), anthropicHeaders(at), body, ClassifyVertex)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}
		resp, err := vendorDo(ctx, at, http.MethodPost, geminiModelURL(at, "generateContent"), geminiHeaders(at), vertexPing, ClassifyGemini)
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &ModelList{Models: []string{t.UpstreamModel}}, nil
}

// ClassifyVertex classifies a failed Vertex AI answer. Vertex's own
// failures (quota, credentials, addressing) are google.rpc statuses
// ({"error":{"code","message","status"}}: RESOURCE_EXHAUSTED is a rate
// limit, UNAUTHENTICATED and PERMISSION_DENIED auth, INVALID_ARGUMENT a
// bad request, UNAVAILABLE and INTERNAL the server's); a Claude model's
// own errors come in Anthropic's shape and are read as Anthropic's.
func ClassifyVertex(status int, h http.Header, body []byte) *Error {
	if gjson.GetBytes(body, "type").Str == "error" {
		return ClassifyAnthropic(status, h, body)
	}
	if b := strings.TrimSpace(string(body)); strings.HasPrefix(b, "[") || gjson.Get(b, "error.status").Exists() || gjson.Get(b, "error.code").Type == gjson.Number {
		return ClassifyGemini(status, h, body)
	}
	return ClassifyAnthropic(status, h, body)
}
