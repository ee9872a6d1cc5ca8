package adapter

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/jwt"
)

// GoogleTokenURL is Google's OAuth2 token endpoint; a provider's AuthURL
// replaces it (the fake vendor, a private endpoint).
const GoogleTokenURL = "https://oauth2.googleapis.com/token"

// vertexScope is the scope of a token for Vertex AI.
const vertexScope = "https://www.googleapis.com/auth/cloud-platform"

// GoogleRefreshBefore is how long before its expiry a cached token is
// replaced, so no request ever carries one that ends in flight.
const GoogleRefreshBefore = 5 * time.Minute

// googleFetchTimeout bounds one token request.
const googleFetchTimeout = 10 * time.Second

// ServiceAccount is the part of a Google service account's JSON key file
// a token needs.
type ServiceAccount struct {
	Email, PrivateKey, PrivateKeyID string
}

// ParseServiceAccount reads a service account's JSON key file.
func ParseServiceAccount(s string) (ServiceAccount, bool) {
	var f struct {
		Type         string `json:"type"`
		ClientEmail  string `json:"client_email"`
		PrivateKey   string `json:"private_key"`
		PrivateKeyID string `json:"private_key_id"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(s)), &f) != nil || f.Type != "service_account" || f.ClientEmail == "" || f.PrivateKey == "" {
		return ServiceAccount{}, false
	}
	return ServiceAccount{Email: f.ClientEmail, PrivateKey: f.PrivateKey, PrivateKeyID: f.PrivateKeyID}, true
}

// GoogleTokens caches one refreshing token source per service account and
// token endpoint: a JWT signed with the account's key (RS256) is exchanged
// for an access token (RFC 7523, golang.org/x/oauth2/jwt). Safe for
// concurrent use.
type GoogleTokens struct {
	// RefreshBefore overrides GoogleRefreshBefore (tests shorten it).
	RefreshBefore time.Duration

	mu      sync.Mutex
	sources map[[32]byte]oauth2.TokenSource
}

// NewGoogleTokens returns an empty cache.
func NewGoogleTokens() *GoogleTokens {
	return &GoogleTokens{sources: map[[32]byte]oauth2.TokenSource{}}
}

// googleTokenURL is the provider's token endpoint, else Google's.
func googleTokenURL(authURL string) string {
	if u := strings.TrimSpace(authURL); u != "" {
		return u
	}
	return GoogleTokenURL
}

// Token returns a valid access token for t's service account, fetching one
// when none is cached, when the cached one is within RefreshBefore of its
// expiry, or when fresh asks to drop it (Vertex refused it).
func (g *GoogleTokens) Token(ctx context.Context, t Target, fresh bool) (string, *Error) {
	sa, ok := ParseServiceAccount(t.APIKey)
	if !ok {
		return "", &Error{Class: ClassAuth, Code: "service_account", Message: "the key is not a service account's JSON key file"}
	}
	return fetchToken(ctx, g.source(t, sa, fresh), googleTokenFailure)
}

func (g *GoogleTokens) source(t Target, sa ServiceAccount, fresh bool) oauth2.TokenSource {
	url := googleTokenURL(t.AuthURL)
	id := sha256.Sum256([]byte(url + "\x00" + sa.Email + "\x00" + sa.PrivateKeyID + "\x00" + sa.PrivateKey))
	g.mu.Lock()
	defer g.mu.Unlock()
	if src, ok := g.sources[id]; ok && !fresh {
		return src
	}
	cfg := &jwt.Config{Email: sa.Email, PrivateKey: []byte(sa.PrivateKey), PrivateKeyID: sa.PrivateKeyID,
		Scopes: []string{vertexScope}, TokenURL: url}
	client := &http.Client{Timeout: googleFetchTimeout}
	if t.Client != nil {
		client.Transport = t.Client.Transport
	}
	before := g.RefreshBefore
	if before <= 0 {
		before = GoogleRefreshBefore
	}
	base := context.WithValue(context.Background(), oauth2.HTTPClient, client)
	src := oauth2.ReuseTokenSourceWithExpiry(nil, cfg.TokenSource(base), before)
	g.sources[id] = src
	return src
}

// googleTokenFailure classifies a failed token request: a refused account
// (invalid_grant: a deleted or disabled key, a bad signature) is an auth
// failure (the key is quarantined), an unreachable or failing token
// service a server one, a key that cannot sign an auth one. The message
// never carries the key.
func googleTokenFailure(err error) *Error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		status := re.Response.StatusCode
		if status >= 500 {
			return &Error{Class: ClassServer, Status: status, Code: "google_token", Message: "the Google token service failed"}
		}
		msg := "Google refused the service account"
		code := re.ErrorCode
		if code == "" { // the JWT flow leaves the body unparsed
			code = gjson.GetBytes(re.Body, "error").Str
		}
		if code != "" && len(code) <= 40 && !strings.ContainsAny(code, " \"'") {
			msg += " (" + code + ")"
		}
		class := ClassAuth
		if status == http.StatusTooManyRequests {
			class, msg = ClassRateLimited, "the Google token service is rate limiting"
		}
		return &Error{Class: class, Status: status, Code: "google_token", Message: msg}
	}
	if strings.Contains(err.Error(), "private key") {
		return &Error{Class: ClassAuth, Code: "service_account", Message: "the service account's private key cannot sign"}
	}
	return &Error{Class: ClassNetwork, Code: "google_token", Message: "cannot reach the Google token service"}
}
