package oidcprovider

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.URL,
		"authorization_endpoint":                p.URL + "/authorize",
		"token_endpoint":                        p.URL + "/token",
		"jwks_uri":                              p.URL + "/keys",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"scopes_supported":                      []string{"openid", "profile", "email", "groups", "offline_access"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	})
}

func (p *Provider) keys(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, p.jwks)
}

// authorize signs in the chosen user at once and sends the browser back
// with a code. It insists on PKCE (S256).
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || back.Scheme == "" || q.Get("client_id") != p.ClientID {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	out := back.Query()
	out.Set("state", q.Get("state"))
	switch {
	case q.Get("response_type") != "code":
		out.Set("error", "unsupported_response_type")
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		out.Set("error", "invalid_request")
		out.Set("error_description", "PKCE (S256) is required")
	case !strings.Contains(" "+q.Get("scope")+" ", " openid "):
		out.Set("error", "invalid_scope")
	default:
		code := randomText()
		p.mu.Lock()
		p.codes[code] = grant{user: p.user, nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri")}
		p.mu.Unlock()
		out.Set("code", code)
	}
	back.RawQuery = out.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// clientOK checks the client's credentials, sent in the Authorization
// header or in the form.
func (p *Provider) clientOK(r *http.Request) bool {
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	return id == p.ClientID && secret == p.ClientSecret
}

func oauthError(w http.ResponseWriter, code, desc string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": desc})
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, "invalid_request", "bad form")
		return
	}
	if !p.clientOK(r) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		p.codeGrant(w, r)
	case "refresh_token":
		p.refreshGrant(w, r)
	default:
		oauthError(w, "unsupported_grant_type", "")
	}
}

func (p *Provider) codeGrant(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	g, ok := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code"))
	fault := p.fault
	p.exchange++
	p.mu.Unlock()
	switch {
	case !ok:
		oauthError(w, "invalid_grant", "unknown or used code")
	case g.redirectURI != r.PostForm.Get("redirect_uri"):
		oauthError(w, "invalid_grant", "redirect_uri differs")
	case s256(r.PostForm.Get("code_verifier")) != g.challenge:
		oauthError(w, "invalid_grant", "PKCE verifier does not match")
	default:
		p.issue(w, g.user, g.nonce, fault)
	}
}

func (p *Provider) refreshGrant(w http.ResponseWriter, r *http.Request) {
	old := r.PostForm.Get("refresh_token")
	p.mu.Lock()
	u, ok := p.refresh[old]
	delete(p.refresh, old)
	p.mu.Unlock()
	if !ok {
		oauthError(w, "invalid_grant", "refresh token revoked or unknown")
		return
	}
	p.issue(w, u, "", NoFault)
}

// issue answers a token request with an ID token (spoiled by f), an access
// token and a new refresh token.
func (p *Provider) issue(w http.ResponseWriter, u User, nonce string, f Fault) {
	idToken, err := p.sign(p.idTokenClaims(u, nonce, f))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if f == Tampered {
		idToken = tamper(idToken)
	}
	rt := randomText()
	p.mu.Lock()
	p.refresh[rt] = u
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": randomText(), "token_type": "Bearer", "expires_in": 600,
		"refresh_token": rt, "id_token": idToken,
	})
}

func (p *Provider) sign(claims map[string]any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := p.signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// tamper makes the signed user an admin after signing: the payload changes,
// the signature stays.
func tamper(token string) string {
	parts := strings.Split(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return token
	}
	var claims map[string]any
	if json.Unmarshal(raw, &claims) != nil {
		return token
	}
	claims["groups"] = []string{"switchyard-admins"}
	b, _ := json.Marshal(claims)
	parts[1] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}
