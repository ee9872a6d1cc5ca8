package fakevendor

// Azure OpenAI's wire (the OpenAI handlers under Azure's addressing) and an
// Entra ID token endpoint:
//
//	POST /openai/deployments/DEPLOYMENT/chat/completions?api-version=V
//	POST /openai/deployments/DEPLOYMENT/embeddings?api-version=V
//	POST /openai/responses?api-version=V   GET /openai/models?api-version=V
//	POST /TENANT/oauth2/v2.0/token          (client credentials grant)
//
// A request carries the api-key header or an Entra bearer token this server
// issued. A missing api-version is Azure's 404 "Resource not found"; an
// unknown or expired token is Azure's 401. Tokens live Options.EntraTokenTTL
// (default one hour); a client secret starting with "bad" is refused with
// Entra's invalid_client. The request's key, for counters, rules and the
// "bad"/"broke" prefixes, is the api-key or "entra:" + the token's client id.
// A 429 carries retry-after-ms beside Retry-After, as Azure sends it.

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// entraGrant is one issued token.
type entraGrant struct {
	clientID string
	expires  time.Time
}

type entraIssuer struct {
	mu     sync.Mutex
	grants map[string]entraGrant
	issued int
}

// EntraTokensIssued is how many Entra tokens the server has issued.
func (s *Server) EntraTokensIssued() int {
	s.entra.mu.Lock()
	defer s.entra.mu.Unlock()
	return s.entra.issued
}

func (s *Server) entraTTL() time.Duration {
	if s.opts.EntraTokenTTL > 0 {
		return s.opts.EntraTokenTTL
	}
	return time.Hour
}

// entraToken answers a client-credentials token request.
func (s *Server) entraToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		writeJSON(w, http.StatusBadRequest, []byte(`{"error":"unsupported_grant_type","error_description":"AADSTS70003: The app requested an unsupported grant type."}`))
		return
	}
	id, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	if id == "" || secret == "" || strings.HasPrefix(secret, "bad") {
		writeJSON(w, http.StatusUnauthorized, []byte(`{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided.","error_codes":[7000215]}`))
		return
	}
	ttl := s.entraTTL()
	s.entra.mu.Lock()
	if s.entra.grants == nil {
		s.entra.grants = map[string]entraGrant{}
	}
	s.entra.issued++
	tok := "fake-entra-" + strconv.Itoa(s.entra.issued) + "-" + strconv.FormatUint(s.seq.Add(1), 36)
	s.entra.grants[tok] = entraGrant{clientID: id, expires: time.Now().Add(ttl)}
	s.entra.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"token_type": "Bearer", "expires_in": int(ttl.Seconds()), "ext_expires_in": int(ttl.Seconds()), "access_token": tok})
	writeJSON(w, http.StatusOK, b)
}

// azureKey returns the request's credential as a key, or writes Azure's 401.
func (s *Server) azureKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	if k := r.Header.Get("Api-Key"); k != "" {
		return k, true
	}
	a := r.Header.Get("Authorization")
	tok := strings.TrimSpace(strings.TrimPrefix(a, "Bearer "))
	s.entra.mu.Lock()
	g, ok := s.entra.grants[tok]
	s.entra.mu.Unlock()
	switch {
	case !ok:
		writeJSON(w, http.StatusUnauthorized, []byte(`{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}`))
		return "", false
	case time.Now().After(g.expires):
		writeJSON(w, http.StatusUnauthorized, []byte(`{"error":{"code":"401","message":"Unauthorized. Access token has expired."}}`))
		return "", false
	}
	return "entra:" + g.clientID, true
}

// routeAzure serves Azure OpenAI's paths with the OpenAI handlers.
func (s *Server) routeAzure(w http.ResponseWriter, r *http.Request, path string) {
	if r.URL.Query().Get("api-version") == "" {
		writeJSON(w, http.StatusNotFound, []byte(`{"error":{"code":"404","message":"Resource not found"}}`))
		return
	}
	key, ok := s.azureKey(w, r)
	if !ok {
		return
	}
	r.Header.Set("Authorization", "Bearer "+key) // the OpenAI handlers' key
	w = &azureWriter{ResponseWriter: w, retryAfter: r.Header.Get(HeaderRetryAfter)}
	rest, _ := strings.CutPrefix(path, "/openai/deployments/")
	switch {
	case path == "/openai/responses":
		s.serve(w, r, protoOpenAI, http.MethodPost, "", s.openaiResponses)
	case path == "/openai/models":
		s.serve(w, r, protoOpenAI, http.MethodGet, "", s.openaiModels)
	case strings.HasSuffix(rest, "/chat/completions"):
		s.serve(w, r, protoOpenAI, http.MethodPost, "", s.openaiChat)
	case strings.HasSuffix(rest, "/embeddings"):
		s.serve(w, r, protoOpenAI, http.MethodPost, "", s.openaiEmbeddings)
	default:
		writeJSON(w, http.StatusNotFound, []byte(`{"error":{"code":"404","message":"Resource not found"}}`))
	}
}

// azureWriter adds retry-after-ms to a 429, as Azure does.
type azureWriter struct {
	http.ResponseWriter
	retryAfter string // the X-Fake-Retry-After duration, if any
}

func (a *azureWriter) WriteHeader(status int) {
	if status == http.StatusTooManyRequests {
		h := a.Header()
		if d, err := time.ParseDuration(a.retryAfter); err == nil {
			h.Set("Retry-After-Ms", strconv.FormatInt(d.Milliseconds(), 10))
		} else if sec, err := strconv.Atoi(h.Get("Retry-After")); err == nil {
			h.Set("Retry-After-Ms", strconv.Itoa(sec*1000))
		}
	}
	a.ResponseWriter.WriteHeader(status)
}

func (a *azureWriter) Flush() {
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (a *azureWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }
