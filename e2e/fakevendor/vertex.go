package fakevendor

// Google Vertex AI's wire behind a fake OAuth2 token endpoint:
//
//	POST /token   the JWT-bearer grant (RFC 7523): the assertion must be an
//	              RS256 JWT signed with the key of a service account in
//	              Options.VertexAccounts, its iss that account, its aud this
//	              endpoint's URL, its scope cloud-platform, and unexpired
//	POST /v1/projects/P/locations/L/publishers/google/models/M:generateContent
//	POST /v1/projects/P/locations/L/publishers/google/models/M:streamGenerateContent?alt=sse
//	POST /v1/projects/P/locations/L/publishers/anthropic/models/M:rawPredict
//	POST /v1/projects/P/locations/L/publishers/anthropic/models/M:streamRawPredict
//
// Google's models answer with the Gemini handlers; Anthropic's with the
// Messages handlers, whose body must carry anthropic_version
// "vertex-2023-10-16" and no model (the URL names it), and stream true on
// streamRawPredict. A request carries a bearer token this server issued; an
// unknown one is 401 UNAUTHENTICATED, an expired one too (tokens live
// Options.VertexTokenTTL, default one hour). The request's key (counters,
// rules) is the service account's email. Injected statuses are Vertex's
// own google.rpc errors for both publishers (429 RESOURCE_EXHAUSTED, 403
// PERMISSION_DENIED, 400 INVALID_ARGUMENT, 503 UNAVAILABLE); a stream's
// ErrorAfterChunks is the publisher's own in-stream error.

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// VertexAnthropicVersion is the anthropic_version a Claude call on Vertex
// AI must carry.
const VertexAnthropicVersion = "vertex-2023-10-16"

// vertexScope is the OAuth2 scope Vertex AI takes.
const vertexScope = "https://www.googleapis.com/auth/cloud-platform"

type vertexGrant struct {
	email   string
	expires time.Time
}

type vertexIssuer struct {
	mu      sync.Mutex
	grants  map[string]vertexGrant
	issued  int
	refused int
}

// VertexTokensRefused is how many Vertex calls the server refused for an
// unknown or expired access token.
func (s *Server) VertexTokensRefused() int {
	s.vertex.mu.Lock()
	defer s.vertex.mu.Unlock()
	return s.vertex.refused
}

// VertexTokensIssued is how many Vertex access tokens the server has issued.
func (s *Server) VertexTokensIssued() int {
	s.vertex.mu.Lock()
	defer s.vertex.mu.Unlock()
	return s.vertex.issued
}

func (s *Server) vertexTTL() time.Duration {
	if s.opts.VertexTokenTTL > 0 {
		return s.opts.VertexTokenTTL
	}
	return time.Hour
}

// ServiceAccount makes a service account for the fake: its JSON key file
// (as Google issues it, with a fresh 2048-bit RSA key) and the public key
// that verifies its assertions, for Options.VertexAccounts.
func ServiceAccount(email, project string) (keyFile string, pub *rsa.PublicKey, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", nil, err
	}
	var id [20]byte
	_, _ = rand.Read(id[:])
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", nil, err
	}
	b, err := json.MarshalIndent(map[string]string{
		"type": "service_account", "project_id": project, "private_key_id": hex.EncodeToString(id[:]),
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": email, "client_id": "1000000000000", "token_uri": "https://oauth2.googleapis.com/token",
		"auth_uri": "https://accounts.google.com/o/oauth2/auth",
	}, "", "  ")
	return string(b), &key.PublicKey, err
}

// vertexTokenError writes Google's OAuth2 error answer.
func vertexTokenError(w http.ResponseWriter, status int, code, desc string) {
	b, _ := json.Marshal(map[string]string{"error": code, "error_description": desc})
	writeJSON(w, status, b)
}

// vertexToken answers a JWT-bearer token request after verifying the
// assertion.
func (s *Server) vertexToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		vertexTokenError(w, http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type.")
		return
	}
	aud := "http://" + r.Host + r.URL.Path
	if r.TLS != nil {
		aud = "https://" + r.Host + r.URL.Path
	}
	email, msg := s.vertexAssertion(r.PostForm.Get("assertion"), aud, time.Now())
	if msg != "" {
		vertexTokenError(w, http.StatusBadRequest, "invalid_grant", msg)
		return
	}
	ttl := s.vertexTTL()
	s.vertex.mu.Lock()
	if s.vertex.grants == nil {
		s.vertex.grants = map[string]vertexGrant{}
	}
	s.vertex.issued++
	tok := "ya29.fake-vertex-" + strconv.Itoa(s.vertex.issued) + "-" + strconv.FormatUint(s.seq.Add(1), 36)
	s.vertex.grants[tok] = vertexGrant{email: email, expires: time.Now().Add(ttl)}
	s.vertex.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"access_token": tok, "expires_in": int(ttl.Seconds()), "token_type": "Bearer"})
	writeJSON(w, http.StatusOK, b)
}

// vertexAssertion verifies a signed JWT assertion and returns its service
// account, or why it is refused.
func (s *Server) vertexAssertion(assertion, aud string, now time.Time) (string, string) {
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return "", "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe."
	}
	var head struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	var claims struct {
		Iss   string `json:"iss"`
		Aud   string `json:"aud"`
		Scope string `json:"scope"`
		Iat   int64  `json:"iat"`
		Exp   int64  `json:"exp"`
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &head) != nil || json.Unmarshal(cb, &claims) != nil {
		return "", "Invalid JWT: malformed."
	}
	pub := s.opts.VertexAccounts[claims.Iss]
	if head.Alg != "RS256" || pub == nil {
		return "", "Invalid JWT Signature."
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) != nil {
		return "", "Invalid JWT Signature."
	}
	switch {
	case claims.Aud != aud:
		return "", "Invalid JWT: Failed audience check. The right audience is " + aud
	case !strings.Contains(" "+claims.Scope+" ", " "+vertexScope+" "):
		return "", "Invalid OAuth scope or ID token audience provided."
	case claims.Exp <= now.Unix() || claims.Iat > now.Add(5*time.Minute).Unix() || claims.Exp-claims.Iat > 3600:
		return "", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
	}
	return claims.Iss, ""
}

// vertexKey returns the service account of the request's bearer token, or
// writes Vertex's 401.
func (s *Server) vertexKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	tok := strings.TrimSpace(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	s.vertex.mu.Lock()
	g, ok := s.vertex.grants[tok]
	ok = ok && time.Now().Before(g.expires)
	if !ok {
		s.vertex.refused++
	}
	s.vertex.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusUnauthorized, geminiErrorBody(http.StatusUnauthorized, "", ""))
		return "", false
	}
	return g.email, true
}

// routeVertex serves a publisher model's method.
func (s *Server) routeVertex(w http.ResponseWriter, r *http.Request, path string) {
	// projects/P/locations/L/publishers/PUB/models/M:METHOD
	seg := strings.Split(strings.TrimPrefix(path, "/v1/"), "/")
	if r.Method != http.MethodPost || len(seg) != 8 || seg[0] != "projects" || seg[2] != "locations" || seg[4] != "publishers" || seg[6] != "models" ||
		seg[1] == "" || seg[3] == "" {
		writeJSON(w, http.StatusNotFound, geminiErrorBody(http.StatusNotFound, "fakeupstream: no route for "+path, ""))
		return
	}
	email, ok := s.vertexKey(w, r)
	if !ok {
		return
	}
	publisher := seg[5]
	model, method, _ := strings.Cut(seg[7], ":")
	body, err := readBody(w, r, s.opts.MaxBodyBytes)
	c := &call{s: s, w: w, r: r, model: model, key: email, body: body, bodyErr: err, seq: s.seq.Add(1), vertex: true}
	switch {
	case publisher == "google" && method == "generateContent":
		c.proto = protoGemini
		s.geminiGenerate(c)
	case publisher == "google" && method == "streamGenerateContent":
		c.proto = protoGemini
		s.geminiStreamGenerate(c)
	case publisher == "anthropic" && (method == "rawPredict" || method == "streamRawPredict"):
		var in struct {
			Version string           `json:"anthropic_version"`
			Model   *json.RawMessage `json:"model"`
			Stream  bool             `json:"stream"`
		}
		_ = json.Unmarshal(body, &in)
		c.proto = protoAnthropic
		switch {
		case in.Version != VertexAnthropicVersion:
			writeJSON(w, http.StatusBadRequest, geminiErrorBody(http.StatusBadRequest, "anthropic_version: must be "+VertexAnthropicVersion, ""))
		case in.Model != nil:
			writeJSON(w, http.StatusBadRequest, geminiErrorBody(http.StatusBadRequest, "model: Extra inputs are not permitted (the URL names the model)", ""))
		case in.Stream != (method == "streamRawPredict"):
			writeJSON(w, http.StatusBadRequest, geminiErrorBody(http.StatusBadRequest, "stream must be true on streamRawPredict and false on rawPredict", ""))
		default:
			s.anthropicMessages(c)
		}
	default:
		writeJSON(w, http.StatusNotFound, geminiErrorBody(http.StatusNotFound, "Publisher Model `"+publisher+"/"+model+"` or method "+method+" not found.", ""))
	}
}
