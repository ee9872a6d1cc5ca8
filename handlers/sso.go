package handlers

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"switchyard/handlers/audit"
	"switchyard/handlers/httpx"
	"switchyard/store/rows"
	"switchyard/views/pages/auth"
)

// SSOStore is the storage single sign-on needs. *store.Store satisfies it.
type SSOStore interface {
	OIDCSettings(ctx context.Context) (rows.OIDCSettings, error)
	OIDCClientSecret(ctx context.Context) (string, error)
	SaveOIDCSettings(ctx context.Context, u rows.OIDCSettingsUpdate) error
	UserByIdentity(ctx context.Context, issuer, subject string) (rows.User, error)
	SaveSSOUser(ctx context.Context, a rows.SSOAccount) (rows.User, bool, error)
	// EndUserAccess ends the user's console sessions and revokes their
	// admin API tokens.
	EndUserAccess(ctx context.Context, userID int64, cause rows.AccessEndCause) error
	RecordSSOSession(ctx context.Context, userID int64, token string, expiry time.Time, refreshToken string) error
	ClaimSSOSessionsDue(ctx context.Context, every time.Duration, limit int) ([]rows.SSOSession, error)
	SSOSessionRefreshed(ctx context.Context, token, refreshToken string) error
}

// ssoFlowKey is the session entry holding a sign-in in progress: state,
// nonce, PKCE verifier, the page to return to and when it started.
const ssoFlowKey = "oidc_flow"

// ssoFlowTTL bounds the time between leaving for the provider and coming
// back.
const ssoFlowTTL = 10 * time.Minute

// ssoHTTP is the client for the identity provider (discovery, keys,
// tokens): bounded, so a provider that hangs cannot hold a sign-in.
var ssoHTTP = &http.Client{Timeout: 10 * time.Second}

// ssoClient is the provider as discovered, with the OAuth2 client.
type ssoClient struct {
	provider *oidc.Provider
	oauth    oauth2.Config
	settings rows.OIDCSettings
}

// newSSOClient discovers the provider (go-oidc reads its discovery
// document and keeps its keys).
func (h *Handler) newSSOClient(ctx context.Context, s rows.OIDCSettings, redirectURL string) (*ssoClient, error) {
	secret, err := h.SSO.OIDCClientSecret(ctx)
	if err != nil {
		return nil, err
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, ssoHTTP), s.IssuerURL)
	if err != nil {
		return nil, err
	}
	return &ssoClient{provider: p, settings: s, oauth: oauth2.Config{ClientID: s.ClientID, ClientSecret: secret,
		Endpoint: p.Endpoint(), RedirectURL: redirectURL, Scopes: s.Scopes}}, nil
}

// ssoRedirectURL is the callback registered at the provider.
func (h *Handler) ssoRedirectURL(c echo.Context) string {
	return h.publicBaseURL(c) + "/auth/oidc/callback"
}

// ssoFlow is a sign-in in progress.
type ssoFlow struct{ state, nonce, verifier, next string }

// ssoConfigured is the single-sign-on settings, or 404 when single
// sign-on is not set up.
func (h *Handler) ssoConfigured(ctx context.Context) (rows.OIDCSettings, error) {
	s, err := h.SSO.OIDCSettings(ctx)
	if err == nil && !s.Configured() {
		err = echo.NewHTTPError(http.StatusNotFound, "Single sign-on is not set up on this console.")
	}
	return s, err
}

// SSOStart sends the browser to the identity provider with a fresh state,
// nonce and PKCE challenge, remembered in the (server-side) session.
func (h *Handler) SSOStart(c echo.Context) error {
	ctx := c.Request().Context()
	s, err := h.ssoConfigured(ctx)
	if err != nil {
		return err
	}
	cl, err := h.newSSOClient(ctx, s, h.ssoRedirectURL(c))
	if err != nil {
		h.Log.Warn("single sign-on: provider unavailable", "issuer", s.IssuerURL, "err", err)
		return h.ssoRefuse(c, s, auth.SSOUnavailable, http.StatusBadGateway)
	}
	f := ssoFlow{state: oauth2.GenerateVerifier(), nonce: oauth2.GenerateVerifier(), verifier: oauth2.GenerateVerifier(), next: safeNext(c.QueryParam("next"))}
	h.Sessions.Put(ctx, ssoFlowKey, strings.Join([]string{f.state, f.nonce, f.verifier, f.next, strconv.FormatInt(time.Now().Unix(), 10)}, "\n"))
	return c.Redirect(http.StatusFound, cl.oauth.AuthCodeURL(f.state, oidc.Nonce(f.nonce), oauth2.S256ChallengeOption(f.verifier)))
}

// popSSOFlow takes the sign-in in progress out of the session (it is used
// once, whatever the outcome).
func (h *Handler) popSSOFlow(ctx context.Context) (ssoFlow, bool) {
	parts := strings.Split(h.Sessions.PopString(ctx, ssoFlowKey), "\n")
	if len(parts) != 5 {
		return ssoFlow{}, false
	}
	at, err := strconv.ParseInt(parts[4], 10, 64)
	if err != nil || time.Since(time.Unix(at, 0)) > ssoFlowTTL {
		return ssoFlow{}, false
	}
	return ssoFlow{state: parts[0], nonce: parts[1], verifier: parts[2], next: parts[3]}, true
}

// SSOCallback finishes a sign-in: the state must be this browser's, the
// code is exchanged with the PKCE verifier, the ID token is verified by
// go-oidc (signature, issuer, audience, expiry) and must carry this
// sign-in's nonce; the groups claim gives the role, the user is created or
// updated, and a session starts.
func (h *Handler) SSOCallback(c echo.Context) error {
	ctx := c.Request().Context()
	s, err := h.ssoConfigured(ctx)
	if err != nil {
		return err
	}
	f, ok := h.popSSOFlow(ctx)
	if !ok || subtle.ConstantTimeCompare([]byte(c.QueryParam("state")), []byte(f.state)) != 1 {
		return h.ssoRefuse(c, s, auth.SSOState, http.StatusForbidden)
	}
	if e := c.QueryParam("error"); e != "" {
		h.Log.Info("single sign-on refused by the provider", "error", httpx.Clip(e, 64), "description", httpx.Clip(c.QueryParam("error_description"), 200))
		return h.ssoRefuse(c, s, auth.SSOProvider, http.StatusForbidden)
	}
	cl, err := h.newSSOClient(ctx, s, h.ssoRedirectURL(c))
	if err != nil {
		h.Log.Warn("single sign-on: provider unavailable", "issuer", s.IssuerURL, "err", err)
		return h.ssoRefuse(c, s, auth.SSOUnavailable, http.StatusBadGateway)
	}
	a, refreshToken, why := h.ssoVerify(ctx, cl, c.QueryParam("code"), f)
	if why != "" {
		return h.ssoRefuse(c, s, why, http.StatusForbidden)
	}
	audit.SetActor(c, httpx.Clip(a.Username, httpx.ShownLen))
	u, why, err := h.ssoAdmit(ctx, a)
	if err != nil {
		return err
	}
	if why != "" {
		return h.ssoRefuse(c, s, why, http.StatusForbidden)
	}
	if err := h.Sessions.RenewToken(ctx); err != nil {
		return err
	}
	h.Sessions.Put(ctx, SessionUserKey, u.ID)
	h.Sessions.Put(ctx, SessionEpochKey, u.AccessEpoch)
	if err := h.SSO.RecordSSOSession(ctx, u.ID, h.Sessions.Token(ctx), time.Now().Add(h.Sessions.Lifetime), refreshToken); err != nil {
		return err
	}
	h.Log.Info("console login", "user", u.Username, "role", u.Role, "via", "sso")
	return c.Redirect(http.StatusSeeOther, f.next)
}

// ssoVerify exchanges the code and checks the ID token; it returns the
// account it vouches for (with the role its groups map to), the refresh
// token, or why it is refused.
func (h *Handler) ssoVerify(ctx context.Context, cl *ssoClient, code string, f ssoFlow) (rows.SSOAccount, string, auth.SSORefusal) {
	ctx = oidc.ClientContext(ctx, ssoHTTP)
	tok, err := cl.oauth.Exchange(ctx, code, oauth2.VerifierOption(f.verifier))
	if err != nil {
		h.Log.Info("single sign-on: code exchange refused", "err", err)
		return rows.SSOAccount{}, "", auth.SSOExchange
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := cl.provider.Verifier(&oidc.Config{ClientID: cl.settings.ClientID}).Verify(ctx, raw)
	var expired *oidc.TokenExpiredError
	switch {
	case errors.As(err, &expired):
		h.Log.Info("single sign-on: ID token expired", "expiry", expired.Expiry)
		return rows.SSOAccount{}, "", auth.SSOExpired
	case err != nil:
		h.Log.Info("single sign-on: ID token refused", "err", err)
		return rows.SSOAccount{}, "", auth.SSOBadToken
	case subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.nonce)) != 1:
		h.Log.Info("single sign-on: ID token nonce mismatch", "subject", idt.Subject)
		return rows.SSOAccount{}, "", auth.SSONonce
	}
	a, err := accountOf(idt, cl.settings)
	if err != nil {
		h.Log.Info("single sign-on: unreadable claims", "err", err)
		return rows.SSOAccount{}, "", auth.SSOBadToken
	}
	return a, tok.RefreshToken, ""
}

// accountOf reads the account, its console name and its groups' role from
// a verified ID token.
func accountOf(idt *oidc.IDToken, s rows.OIDCSettings) (rows.SSOAccount, error) {
	var claims map[string]json.RawMessage
	if err := idt.Claims(&claims); err != nil {
		return rows.SSOAccount{}, err
	}
	a := rows.SSOAccount{Issuer: idt.Issuer, Subject: idt.Subject, Role: s.RoleFor(stringsClaim(claims[s.GroupsClaim]))}
	for _, k := range []string{"preferred_username", "email"} {
		if n := strings.TrimSpace(stringsClaim(claims[k]).first()); n != "" && len(n) <= 64 && !strings.ContainsAny(n, " \t\r\n") {
			a.Username = n
			break
		}
	}
	if a.Username == "" {
		a.Username = "sso-" + httpx.Clip(idt.Subject, 40)
	}
	return a, nil
}

// claimList is a claim read as a list of strings.
type claimList []string

func (l claimList) first() string {
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

// stringsClaim reads a claim that is a string or a list of strings
// (providers differ for groups).
func stringsClaim(raw json.RawMessage) claimList {
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	var one string
	if json.Unmarshal(raw, &one) == nil && one != "" {
		return claimList{one}
	}
	return nil
}

// ssoAdmit applies the role the groups give now: a lowered or removed role
// ends the user's sessions and tokens first; no role refuses the sign-in.
func (h *Handler) ssoAdmit(ctx context.Context, a rows.SSOAccount) (rows.User, auth.SSORefusal, error) {
	cur, err := h.SSO.UserByIdentity(ctx, a.Issuer, a.Subject)
	switch {
	case errors.Is(err, rows.ErrUserDisabled):
		return rows.User{}, auth.SSODisabled, nil
	case err == nil && rows.RoleRank(a.Role) < rows.RoleRank(cur.Role):
		cause := rows.AccessEndDemoted
		if a.Role == "" {
			cause = rows.AccessEndRemovedByIdentityProvider
		}
		if err := h.SSO.EndUserAccess(ctx, cur.ID, cause); err != nil {
			return rows.User{}, "", err
		}
		h.Log.Info("single sign-on: role lowered at sign-in; sessions and tokens ended", "user", cur.Username, "from", cur.Role, "to", a.Role)
	case err != nil && !errors.Is(err, rows.ErrNotFound):
		return rows.User{}, "", err
	}
	if a.Role == "" {
		h.Log.Info("single sign-on refused: no group maps to a role", "subject", a.Subject, "username", a.Username)
		return rows.User{}, auth.SSONoRole, nil
	}
	u, created, err := h.SSO.SaveSSOUser(ctx, a)
	if errors.Is(err, rows.ErrNameTaken) {
		h.Log.Info("single sign-on refused: a local user has the name", "username", a.Username)
		return rows.User{}, auth.SSONameTaken, nil
	}
	if err != nil {
		return rows.User{}, "", err
	}
	if created {
		h.Log.Info("single sign-on: user created", "user", u.Username, "role", u.Role)
	}
	return u, "", nil
}

// ssoRefuse shows the login page with why the sign-in was refused; no
// session is started.
func (h *Handler) ssoRefuse(c echo.Context, s rows.OIDCSettings, why auth.SSORefusal, status int) error {
	f := h.loginForm(c, s)
	f.Refusal = why
	return httpx.Render(c, status, auth.Login(f), nil)
}

// loginForm is the login page's form, offering single sign-on when it is
// set up.
func (h *Handler) loginForm(c echo.Context, s rows.OIDCSettings) auth.LoginForm {
	f := auth.LoginForm{CSRF: httpx.CSRFToken(c), Next: safeNext(c.QueryParam("next"))}
	if s.Configured() {
		f.SSO = &auth.SSOOffer{Name: s.DisplayName, LocalOff: !s.LocalPasswords}
	}
	return f
}

// ssoSettings loads the sign-in settings; without single-sign-on storage
// (console-only tests) there is none.
func (h *Handler) ssoSettings(ctx context.Context) (rows.OIDCSettings, error) {
	if h.SSO == nil {
		return rows.NoOIDC(), nil
	}
	return h.SSO.OIDCSettings(ctx)
}
