package fakevendor

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/oauth2/jwt"
)

const vertexTestEmail = "svc@proj.iam.gserviceaccount.com"

// vertexFake starts a fake that knows one service account and returns it,
// its URL and the account's private key.
func vertexFake(t *testing.T, ttl time.Duration) (*Server, string, *rsa.PrivateKey) {
	t.Helper()
	file, pub, err := ServiceAccount(vertexTestEmail, "proj")
	if err != nil {
		t.Fatal(err)
	}
	var sa struct {
		PrivateKey string `json:"private_key"`
	}
	if err := json.Unmarshal([]byte(file), &sa); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode([]byte(sa.PrivateKey))
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	s, u := start(t, Options{VertexAccounts: map[string]*rsa.PublicKey{vertexTestEmail: pub}, VertexTokenTTL: ttl})
	return s, u, k.(*rsa.PrivateKey)
}

// assertion signs claims with key as RS256.
func assertion(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func vertexTokenFor(t *testing.T, base, jwtText string) (int, gjson.Result) {
	t.Helper()
	res, err := http.PostForm(base+"/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {jwtText}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, gjson.ParseBytes(b)
}

// TestVertexTokenEndpoint: the official JWT flow gets a token; an
// assertion signed by another key, for another audience, without the
// cloud-platform scope, expired or too long-lived is refused with
// invalid_grant.
func TestVertexTokenEndpoint(t *testing.T) {
	s, base, key := vertexFake(t, 0)
	cfg := &jwt.Config{Email: vertexTestEmail, PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		Scopes: []string{vertexScope}, TokenURL: base + "/token"}
	tok, err := cfg.TokenSource(context.Background()).Token()
	if err != nil || !strings.HasPrefix(tok.AccessToken, "ya29.fake-vertex-") || time.Until(tok.Expiry) < 59*time.Minute {
		t.Fatalf("token %+v: %v", tok, err)
	}
	if s.VertexTokensIssued() != 1 {
		t.Fatalf("issued %d", s.VertexTokensIssued())
	}

	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	now := time.Now().Unix()
	good := func() map[string]any {
		return map[string]any{"iss": vertexTestEmail, "aud": base + "/token", "scope": vertexScope, "iat": now, "exp": now + 3600}
	}
	with := func(k string, v any) map[string]any { c := good(); c[k] = v; return c }
	for name, c := range map[string]struct {
		key    *rsa.PrivateKey
		claims map[string]any
	}{
		"another key":        {other, good()},
		"unknown account":    {key, with("iss", "nobody@proj.iam.gserviceaccount.com")},
		"another audience":   {key, with("aud", "https://oauth2.googleapis.com/token")},
		"no vertex scope":    {key, with("scope", "https://www.googleapis.com/auth/userinfo.email")},
		"expired":            {key, with("exp", now-10)},
		"longer than 1 hour": {key, with("exp", now+7200)},
	} {
		if status, body := vertexTokenFor(t, base, assertion(t, c.key, c.claims)); status != http.StatusBadRequest || body.Get("error").Str != "invalid_grant" {
			t.Errorf("%s: %d %s", name, status, body.Raw)
		}
	}
	if status, body := vertexTokenFor(t, base, assertion(t, key, good())); status != http.StatusOK || body.Get("token_type").Str != "Bearer" {
		t.Fatalf("a good assertion: %d %s", status, body.Raw)
	}
}

func vertexCall(t *testing.T, base, token, path, body string, hdr ...string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

const (
	vertexGeminiPath = "/v1/projects/proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:"
	vertexClaudePath = "/v1/projects/proj/locations/us-central1/publishers/anthropic/models/claude-sonnet-4-5@20250929:"
	vertexClaudeBody = `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"messages":[{"role":"user","content":"Say hello"}]`
)

// TestVertexPublishers: Gemini and Claude answer on their paths with the
// bearer token; the Claude body must carry the Vertex version and no
// model; the account is the request's key; unknown and expired tokens
// are 401; injected faults are Vertex's google.rpc errors; a stream's
// mid-stream error is the publisher's.
func TestVertexPublishers(t *testing.T) {
	s, base, key := vertexFake(t, 0)
	now := time.Now().Unix()
	_, tb := vertexTokenFor(t, base, assertion(t, key, map[string]any{"iss": vertexTestEmail, "aud": base + "/token", "scope": vertexScope, "iat": now, "exp": now + 3600}))
	tok := tb.Get("access_token").Str

	status, b := vertexCall(t, base, tok, vertexGeminiPath+"generateContent", `{"contents":[{"role":"user","parts":[{"text":"Say hello"}]}]}`)
	if status != http.StatusOK || !strings.Contains(gjson.GetBytes(b, "candidates.0.content.parts.0.text").Str, "gemini-2.5-flash") {
		t.Fatalf("generateContent: %d %s", status, b)
	}
	if last, _ := s.LastRequest("gemini-2.5-flash"); last.Key != vertexTestEmail {
		t.Fatalf("key %q", last.Key)
	}
	status, b = vertexCall(t, base, tok, vertexGeminiPath+"streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"Say hello"}]}]}`)
	if status != http.StatusOK || !strings.Contains(string(b), "data: ") {
		t.Fatalf("streamGenerateContent: %d %s", status, b)
	}
	status, b = vertexCall(t, base, tok, vertexClaudePath+"rawPredict", vertexClaudeBody+`}`)
	if status != http.StatusOK || gjson.GetBytes(b, "type").Str != "message" || gjson.GetBytes(b, "model").Str != "claude-sonnet-4-5@20250929" {
		t.Fatalf("rawPredict: %d %s", status, b)
	}
	status, b = vertexCall(t, base, tok, vertexClaudePath+"streamRawPredict", vertexClaudeBody+`,"stream":true}`)
	if status != http.StatusOK || !strings.Contains(string(b), "event: message_stop") {
		t.Fatalf("streamRawPredict: %d %s", status, b)
	}

	for name, body := range map[string]string{
		"the Messages API's version": `{"anthropic_version":"2023-06-01","max_tokens":64,"messages":[{"role":"user","content":"x"}]}`,
		"a model in the body":        `{"anthropic_version":"vertex-2023-10-16","model":"claude","max_tokens":64,"messages":[{"role":"user","content":"x"}]}`,
		"a stream on rawPredict":     vertexClaudeBody + `,"stream":true}`,
	} {
		if status, b := vertexCall(t, base, tok, vertexClaudePath+"rawPredict", body); status != http.StatusBadRequest || gjson.GetBytes(b, "error.status").Str != "INVALID_ARGUMENT" {
			t.Errorf("%s: %d %s", name, status, b)
		}
	}
	if status, b := vertexCall(t, base, "ya29.unknown", vertexGeminiPath+"generateContent", `{}`); status != http.StatusUnauthorized || gjson.GetBytes(b, "error.status").Str != "UNAUTHENTICATED" {
		t.Fatalf("unknown token: %d %s", status, b)
	}

	for _, c := range []struct {
		status int
		rpc    string
	}{{429, "RESOURCE_EXHAUSTED"}, {403, "PERMISSION_DENIED"}, {400, "INVALID_ARGUMENT"}, {503, "UNAVAILABLE"}} {
		for _, path := range []string{vertexGeminiPath + "generateContent", vertexClaudePath + "rawPredict"} {
			body := `{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`
			if strings.Contains(path, "anthropic") {
				body = vertexClaudeBody + `}`
			}
			status, b := vertexCall(t, base, tok, path, body, HeaderStatus, strconv.Itoa(c.status))
			if status != c.status || gjson.GetBytes(b, "error.status").Str != c.rpc {
				t.Errorf("%s with status %d: %d %s", path, c.status, status, b)
			}
		}
	}

	status, b = vertexCall(t, base, tok, vertexClaudePath+"streamRawPredict", vertexClaudeBody+`,"stream":true}`, HeaderErrorAfter, "1")
	if status != http.StatusOK || !strings.Contains(string(b), "event: error") || strings.Contains(string(b), "message_stop") {
		t.Fatalf("mid-stream error: %d %s", status, b)
	}
}

// TestVertexTokenExpires: a token past its lifetime is 401 and counted as
// refused.
func TestVertexTokenExpires(t *testing.T) {
	s, base, key := vertexFake(t, time.Millisecond)
	now := time.Now().Unix()
	_, tb := vertexTokenFor(t, base, assertion(t, key, map[string]any{"iss": vertexTestEmail, "aud": base + "/token", "scope": vertexScope, "iat": now, "exp": now + 3600}))
	time.Sleep(5 * time.Millisecond)
	if status, b := vertexCall(t, base, tb.Get("access_token").Str, vertexGeminiPath+"generateContent", `{}`); status != http.StatusUnauthorized || gjson.GetBytes(b, "error.status").Str != "UNAUTHENTICATED" {
		t.Fatalf("expired token: %d %s", status, b)
	}
	if s.VertexTokensRefused() != 1 {
		t.Fatalf("refused %d", s.VertexTokensRefused())
	}
}
