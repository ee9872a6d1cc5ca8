package adapter

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// EntraCredential is an Azure key pool entry that is Entra ID client
// credentials rather than an API key.
type EntraCredential struct {
	Tenant, ClientID, Secret string
}

// entraPrefix starts a key secret that holds Entra ID client credentials.
const entraPrefix = "entra:"

// ParseEntraSecret reads "entra:TENANT_ID:CLIENT_ID:CLIENT_SECRET".
func ParseEntraSecret(s string) (EntraCredential, bool) {
	if !strings.HasPrefix(s, entraPrefix) {
		return EntraCredential{}, false
	}
	parts := strings.SplitN(strings.TrimPrefix(s, entraPrefix), ":", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return EntraCredential{}, false
	}
	return EntraCredential{Tenant: parts[0], ClientID: parts[1], Secret: parts[2]}, true
}

// EntraAuthority is Microsoft's public-cloud token authority; a provider's
// AuthURL replaces it (sovereign clouds, the fake vendor).
const EntraAuthority = "https://login.microsoftonline.com"

// entraScope is the scope of a token for Azure OpenAI (Cognitive Services).
const entraScope = "https://cognitiveservices.azure.com/.default"

// EntraRefreshBefore is how long before its expiry a cached token is
// replaced, so no request ever carries one that ends in flight.
const EntraRefreshBefore = 5 * time.Minute

// entraFetchTimeout bounds one token request.
const entraFetchTimeout = 10 * time.Second

// EntraTokens caches one refreshing token source per credential and token
// endpoint. Safe for concurrent use.
type EntraTokens struct {
	// RefreshBefore overrides EntraRefreshBefore (tests shorten it).
	RefreshBefore time.Duration

	mu      sync.Mutex
	sources map[[32]byte]oauth2.TokenSource
}

// NewEntraTokens returns an empty cache.
func NewEntraTokens() *EntraTokens {
	return &EntraTokens{sources: map[[32]byte]oauth2.TokenSource{}}
}

// entraTokenURL is the v2.0 token endpoint of the tenant at authority (a
// full token URL, one that ends in /token, is taken as it is).
func entraTokenURL(authority, tenant string) string {
	authority = strings.TrimRight(strings.TrimSpace(authority), "/")
	if authority == "" {
		authority = EntraAuthority
	}
	if strings.HasSuffix(authority, "/token") {
		return authority
	}
	return authority + "/" + tenant + "/oauth2/v2.0/token"
}

// Token returns a valid access token for c, fetching one when none is
// cached, when the cached one is within RefreshBefore of its expiry, or
// when fresh asks to drop it (the service refused it).
func (e *EntraTokens) Token(ctx context.Context, t Target, c EntraCredential, fresh bool) (string, *Error) {
	return fetchToken(ctx, e.source(t, c, fresh), func(err error) *Error { return entraFailure(err, c) })
}

func (e *EntraTokens) source(t Target, c EntraCredential, fresh bool) oauth2.TokenSource {
	url := entraTokenURL(t.AuthURL, c.Tenant)
	id := sha256.Sum256([]byte(url + "\x00" + c.Tenant + "\x00" + c.ClientID + "\x00" + c.Secret))
	e.mu.Lock()
	defer e.mu.Unlock()
	if src, ok := e.sources[id]; ok && !fresh {
		return src
	}
	cfg := clientcredentials.Config{ClientID: c.ClientID, ClientSecret: c.Secret, TokenURL: url,
		Scopes: []string{entraScope}, AuthStyle: oauth2.AuthStyleInParams}
	client := &http.Client{Timeout: entraFetchTimeout}
	if t.Client != nil {
		client.Transport = t.Client.Transport
	}
	before := e.RefreshBefore
	if before <= 0 {
		before = EntraRefreshBefore
	}
	base := context.WithValue(context.Background(), oauth2.HTTPClient, client)
	src := oauth2.ReuseTokenSourceWithExpiry(nil, cfg.TokenSource(base), before)
	e.sources[id] = src
	return src
}

// entraFailure classifies a failed token request: a refused credential is
// an auth failure (the key is quarantined), an unreachable or failing
// token service a server one. The message never carries the secret.
func entraFailure(err error, c EntraCredential) *Error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		status := re.Response.StatusCode
		class := ClassServer
		if status == http.StatusBadRequest || status == http.StatusUnauthorized || status == http.StatusForbidden {
			class = ClassAuth
		}
		msg := "Entra ID refused the client credentials"
		if re.ErrorCode != "" {
			msg += " (" + re.ErrorCode + ")"
		}
		if class == ClassServer {
			msg = "the Entra ID token service failed"
		}
		return scrubKey(&Error{Class: class, Status: status, Code: "entra_token", Message: msg}, c.Secret)
	}
	return &Error{Class: ClassNetwork, Code: "entra_token", Message: "cannot reach the Entra ID token service"}
}
