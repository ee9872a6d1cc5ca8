// Package oidcprovider is a small OpenID Connect provider for tests: a
// discovery document, a JWKS with one RSA key, an authorization endpoint
// that signs in the user the test chose (no form), and a token endpoint
// that checks the client's secret and PKCE and issues RS256 ID tokens and
// refresh tokens. A test makes it misbehave (a tampered, expired or
// wrongly-nonced ID token) and revokes refresh tokens, to check that
// Switchyard's validation (go-oidc) refuses what it must.
//
// Test support only: imported by tests.
package oidcprovider

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// User is the account the provider signs in.
type User struct {
	Subject string
	Name    string // preferred_username
	Email   string
	Groups  []string
}

// Fault is how the next ID tokens are spoiled.
type Fault int

// The faults.
const (
	NoFault Fault = iota
	// Tampered: the payload is changed after signing (the signature no
	// longer matches).
	Tampered
	// WrongNonce: the token carries a nonce the client did not send.
	WrongNonce
	// Expired: the token expired ten minutes ago.
	Expired
)

// grant is an issued authorization code.
type grant struct {
	user        User
	nonce       string
	challenge   string
	redirectURI string
}

// Provider is a running test identity provider.
type Provider struct {
	URL          string
	ClientID     string
	ClientSecret string

	signer jose.Signer
	jwks   jose.JSONWebKeySet

	mu       sync.Mutex
	user     User
	fault    Fault
	codes    map[string]grant
	refresh  map[string]User // refresh token → its user
	exchange int
}

// Start runs a provider for the test; it stops when the test ends.
func Start(t testing.TB, clientID, clientSecret string) *Provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "test-key"))
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{ClientID: clientID, ClientSecret: clientSecret, signer: signer,
		jwks:  jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "test-key", Algorithm: "RS256", Use: "sig"}}},
		codes: map[string]grant{}, refresh: map[string]User{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /keys", p.keys)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// SetUser chooses who the next sign-in is.
func (p *Provider) SetUser(u User) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.user = u
}

// SetFault spoils the ID tokens issued from now on (NoFault mends them).
func (p *Provider) SetFault(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

// RevokeRefreshTokens makes every refresh token of subject invalid, as an
// identity provider does when the account is disabled or signed out.
func (p *Provider) RevokeRefreshTokens(subject string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for tok, u := range p.refresh {
		if u.Subject == subject {
			delete(p.refresh, tok)
		}
	}
}

// Exchanges counts the codes exchanged for tokens.
func (p *Provider) Exchanges() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exchange
}

func randomText() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// s256 is PKCE's S256 challenge of a verifier.
func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// idTokenClaims are the claims of an ID token for u, spoiled by f.
func (p *Provider) idTokenClaims(u User, nonce string, f Fault) map[string]any {
	now := time.Now()
	claims := map[string]any{
		"iss": p.URL, "sub": u.Subject, "aud": p.ClientID,
		"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(),
		"preferred_username": u.Name, "email": u.Email, "groups": u.Groups,
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	switch f {
	case WrongNonce:
		claims["nonce"] = "not-the-nonce-that-was-sent"
	case Expired:
		claims["iat"], claims["exp"] = now.Add(-20*time.Minute).Unix(), now.Add(-10*time.Minute).Unix()
	}
	return claims
}
