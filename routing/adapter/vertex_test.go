package adapter

import (
	"context"
	"crypto/rsa"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/config"
)

// The Vertex adapter: its addressing, its error classification, the body
// of a Claude call, and its tokens against the fake vendor's Vertex wire.

func TestVertexURLs(t *testing.T) {
	for _, c := range []struct {
		base, location, project, model, method, want string
	}{
		{"", "us-central1", "p1", "gemini-2.5-flash", "generateContent",
			"https://us-central1-aiplatform.googleapis.com/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"},
		{"", "europe-west4", "p1", "google/gemini-2.5-pro", "streamGenerateContent?alt=sse",
			"https://europe-west4-aiplatform.googleapis.com/v1/projects/p1/locations/europe-west4/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"},
		{"", "global", "p1", "claude-sonnet-4-5@20250929", "rawPredict",
			"https://aiplatform.googleapis.com/v1/projects/p1/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"},
		{"https://vertex.example.com/v1/", "us-east5", "my proj", "anthropic/claude-opus-4-1@20250805", "streamRawPredict",
			"https://vertex.example.com/v1/projects/my%20proj/locations/us-east5/publishers/anthropic/models/claude-opus-4-1@20250805:streamRawPredict"},
		{"https://us-central1-aiplatform.googleapis.com", "europe-west4", "p1", "gemini-2.5-flash", "generateContent",
			"https://europe-west4-aiplatform.googleapis.com/v1/projects/p1/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent"},
		{"http://127.0.0.1:9", " us-central1 ", "p1", "gemma-3/x", "generateContent",
			"http://127.0.0.1:9/v1/projects/p1/locations/us-central1/publishers/google/models/gemma-3%2Fx:generateContent"},
	} {
		got := VertexModelURL(Target{BaseURL: c.base, Region: c.location, Project: c.project, UpstreamModel: c.model}, c.method)
		if got != c.want {
			t.Errorf("%s %s:\n got %s\nwant %s", c.model, c.method, got, c.want)
		}
	}
}

func TestVertexPublisherAndWire(t *testing.T) {
	for model, want := range map[string][3]string{
		"claude-sonnet-4-5@20250929":          {config.VertexAnthropic, "claude-sonnet-4-5@20250929", string(config.ProtocolAnthropic)},
		"anthropic/claude-3-5-haiku@20241022": {config.VertexAnthropic, "claude-3-5-haiku@20241022", string(config.ProtocolAnthropic)},
		"gemini-2.5-flash":                    {config.VertexGoogle, "gemini-2.5-flash", string(config.ProtocolGemini)},
		"google/gemini-2.5-pro":               {config.VertexGoogle, "gemini-2.5-pro", string(config.ProtocolGemini)},
		"meta/llama-4":                        {config.VertexGoogle, "meta/llama-4", string(config.ProtocolGemini)},
	} {
		pub, id := config.VertexPublisher(model)
		if w := config.WireOf(config.ProtocolVertex, model); pub != want[0] || id != want[1] || string(w) != want[2] {
			t.Errorf("%s: %s %s %s, want %v", model, pub, id, w, want)
		}
	}
}

func TestVertexMessagesBody(t *testing.T) {
	in := []byte(`{"model":"claude-x","anthropic_version":"2023-06-01","max_tokens":5,"top_k":3,"messages":[{"role":"user","content":"hi"}]}`)
	if got, _ := vertexMessagesBody(Target{}, in); string(got) != string(in) {
		t.Fatalf("Anthropic's own API got a changed body: %s", got)
	}
	got, err := vertexMessagesBody(Target{vertex: &vertexRoute{}}, in)
	if err != nil {
		t.Fatal(err)
	}
	b := gjson.ParseBytes(got)
	if b.Get("model").Exists() || b.Get("anthropic_version").Str != VertexAnthropicVersion || b.Get("top_k").Int() != 3 || b.Get("messages.0.content").Str != "hi" || !gjson.ValidBytes(got) {
		t.Fatalf("Vertex body %s", got)
	}
	if _, err := vertexMessagesBody(Target{vertex: &vertexRoute{}}, []byte(`[1]`)); ClassOf(err) != ClassBadRequest {
		t.Fatalf("a body that is no object: %v", err)
	}
}

func TestClassifyVertex(t *testing.T) {
	google := func(code int, status, msg string) []byte {
		return []byte(`{"error":{"code":` + strconv.Itoa(code) + `,"message":"` + msg + `","status":"` + status + `"}}`)
	}
	for _, c := range []struct {
		name   string
		status int
		body   []byte
		want   Class
	}{
		{"quota", 429, google(429, "RESOURCE_EXHAUSTED", "Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model"), ClassRateLimited},
		{"expired token", 401, google(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."), ClassAuth},
		{"no permission", 403, google(403, "PERMISSION_DENIED", "Permission 'aiplatform.endpoints.predict' denied"), ClassAuth},
		{"bad request", 400, google(400, "INVALID_ARGUMENT", "Request contains an invalid argument."), ClassBadRequest},
		{"unavailable", 503, google(503, "UNAVAILABLE", "The service is currently unavailable."), ClassServer},
		{"internal", 500, google(500, "INTERNAL", "Internal error encountered."), ClassServer},
		{"not found", 404, google(404, "NOT_FOUND", "Publisher Model was not found"), ClassBadRequest},
		{"a list of them", 429, []byte(`[` + string(google(429, "RESOURCE_EXHAUSTED", "quota")) + `]`), ClassRateLimited},
		{"Claude overloaded", 529, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), ClassServer},
		{"Claude invalid request", 400, []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}`), ClassBadRequest},
		{"no body", 429, nil, ClassRateLimited},
		{"html", 502, []byte(`<html>Bad Gateway</html>`), ClassServer},
	} {
		e := ClassifyVertex(c.status, http.Header{}, c.body)
		if e.Class != c.want {
			t.Errorf("%s: %s, want %s", c.name, e.Class, c.want)
		}
		if c.want == ClassRateLimited && c.status == 429 && c.body != nil && e.Code != "RESOURCE_EXHAUSTED" {
			t.Errorf("%s: code %q", c.name, e.Code)
		}
	}
}

// vertexFake is the fake vendor knowing two service accounts, and their
// key files.
func vertexFake(t *testing.T, ttl time.Duration) (*fakevendor.Server, string, []string) {
	t.Helper()
	accounts := map[string]*rsa.PublicKey{}
	var files []string
	for _, email := range []string{"one@p.iam.gserviceaccount.com", "two@p.iam.gserviceaccount.com"} {
		f, pub, err := fakevendor.ServiceAccount(email, "p")
		if err != nil {
			t.Fatal(err)
		}
		accounts[email], files = pub, append(files, f)
	}
	fv, url := azureFake(t, fakevendor.Options{VertexAccounts: accounts, VertexTokenTTL: ttl})
	return fv, url, files
}

func vertexTarget(url, file, model string) Target {
	return Target{BaseURL: url, APIKey: file, UpstreamModel: model, Project: "p", Region: "us-central1", AuthURL: url + "/token"}
}

// TestVertexTokens: one token per service account, cached; a token Vertex
// refuses is fetched anew once and the call made again; a key file that
// is not a service account, or one the token endpoint refuses, is an auth
// failure whose message carries nothing of the key.
func TestVertexTokens(t *testing.T) {
	fv, url, files := vertexFake(t, 0)
	v := NewVertex()
	ctx := context.Background()
	req := azureAsk()
	for i := range 3 {
		for _, f := range files {
			if _, err := v.Chat(ctx, vertexTarget(url, f, "gemini-2.5-flash"), req); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
	}
	if n := fv.VertexTokensIssued(); n != 2 {
		t.Fatalf("tokens issued %d, want one per account", n)
	}

	fv.SetRules(fakevendor.Rule{Model: "claude-sonnet-4-5", Fault: fakevendor.Fault{Status: 401, FailTimes: 1}})
	if _, err := v.Chat(ctx, vertexTarget(url, files[0], "claude-sonnet-4-5"), req); err != nil {
		t.Fatalf("after a refused token: %v", err)
	}
	if n := fv.VertexTokensIssued(); n != 3 {
		t.Fatalf("tokens issued %d, want one more after the 401", n)
	}
	fv.SetRules()

	_, err := v.Chat(ctx, vertexTarget(url, `{"type":"authorized_user"}`, "gemini-2.5-flash"), req)
	if ClassOf(err) != ClassAuth {
		t.Fatalf("not a service account: %v", err)
	}
	stranger, _, _ := fakevendor.ServiceAccount("stranger@p.iam.gserviceaccount.com", "p")
	_, err = v.Chat(ctx, vertexTarget(url, stranger, "gemini-2.5-flash"), req)
	var ue *Error
	if ClassOf(err) != ClassAuth || !errors.As(err, &ue) || strings.Contains(ue.Message, "PRIVATE KEY") || !strings.Contains(ue.Message, "invalid_grant") {
		t.Fatalf("a refused account: %v", err)
	}
	if _, err := v.Chat(ctx, Target{BaseURL: url, APIKey: files[0], UpstreamModel: "gemini-2.5-flash", Region: "us-central1"}, req); ClassOf(err) != ClassBadRequest {
		t.Fatalf("no project: %v", err)
	}
}

// TestVertexRefreshBefore: a token within RefreshBefore of its expiry is
// replaced before a call carries it, so Vertex never refuses one.
func TestVertexRefreshBefore(t *testing.T) {
	fv, url, files := vertexFake(t, 3*time.Second)
	v := NewVertex()
	v.tokens.RefreshBefore = 2 * time.Second
	ctx := context.Background()
	req := azureAsk()
	tg := vertexTarget(url, files[0], "gemini-2.5-flash")
	if _, err := v.Chat(ctx, tg, req); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	s, err := v.ChatStream(ctx, tg, req)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if fv.VertexTokensIssued() != 2 || fv.VertexTokensRefused() != 0 {
		t.Fatalf("issued %d, refused %d", fv.VertexTokensIssued(), fv.VertexTokensRefused())
	}
}
