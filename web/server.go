// Package web wires the echo server: middleware, sessions, CSRF, role checks,
// error pages and the route table (routes.go). It holds no business logic.
package web

import (
	"context"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/alexedwards/scs/postgresstore"
	"github.com/alexedwards/scs/v2"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"switchyard/handlers"
	"switchyard/handlers/access"
	"switchyard/handlers/httpx"
	"switchyard/routing/config/onboarding"
	"switchyard/static"
	"switchyard/store"
)

// Options configure the server.
type Options struct {
	// CookieSecure marks session and CSRF cookies Secure (serve over HTTPS).
	CookieSecure bool
	// ConsoleBodyLimit bounds console and admin-API request bodies.
	ConsoleBodyLimit string
	// Metrics, when set, is served on /metrics (Prometheus).
	Metrics http.Handler
	// Onboarding is the wizard with its catalogue; nil uses the built-in
	// catalogue.
	Onboarding *handlers.Onboarding
	// Health, when set, adds the instance's state to /healthz (PostgreSQL,
	// where the configuration came from, draining).
	Health func(ctx context.Context) HealthDetail
	// Offline, when it returns a sentence, closes the console and the
	// admin API with that sentence (PostgreSQL is unreachable; the data
	// plane goes on from the last-known-good version).
	Offline func() string
	// Uses records the last use of admin API tokens (nil: not recorded).
	Uses *store.UseLog
}

// Server is the HTTP server of one Switchyard instance.
type Server struct {
	Echo     *echo.Echo
	h        *handlers.Handler
	dp       *handlers.DataPlane
	store    *store.Store
	sessions *scs.SessionManager
	log      *slog.Logger
	ready    func() bool
	health   func(ctx context.Context) HealthDetail
	offline  func() string
	uses     *store.UseLog
}

// NewSessions returns the console session manager, stored in PostgreSQL so
// every instance shares sessions.
func NewSessions(st *store.Store, secure bool) *scs.SessionManager {
	sm := scs.New()
	sm.Store = postgresstore.NewWithCleanupInterval(st.DB(), 10*time.Minute)
	sm.Lifetime = 12 * time.Hour
	sm.IdleTimeout = 2 * time.Hour
	sm.Cookie.Name = "switchyard_session"
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Secure = secure
	sm.Cookie.Path = "/"
	return sm
}

// New builds the server. dp may be nil (console only). ready reports
// whether the instance finished starting (live config loaded).
func New(h *handlers.Handler, dp *handlers.DataPlane, st *store.Store, sm *scs.SessionManager, log *slog.Logger, ready func() bool, opts Options) *Server {
	if opts.ConsoleBodyLimit == "" {
		opts.ConsoleBodyLimit = "12M"
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	s := &Server{Echo: e, h: h, dp: dp, store: st, sessions: sm, log: log, ready: ready}
	e.HTTPErrorHandler = s.errorHandler
	// The offline gate runs first in the console's and the admin API's
	// chains (before sessions, which need PostgreSQL), not before routing:
	// a middleware there would cost every data-plane request a closure.
	s.offline = opts.Offline
	s.health = opts.Health
	s.uses = opts.Uses
	if opts.Onboarding == nil {
		opts.Onboarding = defaultOnboarding(h)
	}
	s.routes(opts)
	return s
}

// defaultOnboarding is the wizard with the built-in catalogue, for servers
// assembled without one (tests); a catalogue that fails to load is named on
// the wizard's first page.
func defaultOnboarding(h *handlers.Handler) *handlers.Onboarding {
	cat, err := onboarding.Load(onboarding.LoadOptions{Env: h.Env})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	return handlers.NewOnboarding(h, cat, msg, nil)
}

// recovering wraps h once, when its route is added, so that a panic in it
// is logged with its stack and answered 500 instead of breaking the
// connection. (echo's Recover middleware does the same, but as a
// middleware of every route it costs each request a closure.)
func (s *Server) recovering(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				err = fmt.Errorf("panic: %v", r)
				s.log.Error("panic recovered", "err", err, "path", c.Path(), "stack", string(debug.Stack()))
			}
		}()
		return h(c)
	}
}

// recover is recovering as a middleware, for route groups.
func (s *Server) recover(next echo.HandlerFunc) echo.HandlerFunc { return s.recovering(next) }

// console is the middleware chain of console pages: body limit, security
// headers, session, CSRF, and a signed-in user.
func (s *Server) consoleChain(opts Options) []echo.MiddlewareFunc {
	return []echo.MiddlewareFunc{
		s.recover,
		s.offlineGate(),
		middleware.BodyLimit(opts.ConsoleBodyLimit),
		middleware.SecureWithConfig(middleware.SecureConfig{
			XSSProtection: "0", ContentTypeNosniff: "nosniff", XFrameOptions: "DENY",
			ReferrerPolicy:        "same-origin",
			ContentSecurityPolicy: "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'",
		}),
		echo.WrapMiddleware(s.sessions.LoadAndSave),
		middleware.CSRFWithConfig(middleware.CSRFConfig{
			TokenLookup:    "header:X-CSRF-Token,form:_csrf",
			CookieName:     "switchyard_csrf",
			CookiePath:     "/",
			CookieHTTPOnly: true,
			CookieSecure:   opts.CookieSecure,
			CookieSameSite: http.SameSiteStrictMode,
			ErrorHandler: func(err error, c echo.Context) error {
				return echo.NewHTTPError(http.StatusForbidden, "The form expired or did not come from this console (CSRF check failed). Reload the page and try again.")
			},
		}),
	}
}

// requireUser loads the signed-in user; anonymous visitors, and sessions
// from before the user's access was last ended, go to the login page. A
// user who must change their password reaches only the change-password
// page (toPasswordChange). A route whose action (access.ForRoute) the user's role lacks
// answers 403 with a sentence naming what the role cannot do, GET pages
// included (the onboarding wizard, New and Edit forms).
func (s *Server) requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		uid := s.sessions.GetInt64(ctx, handlers.SessionUserKey)
		if uid == 0 {
			return s.toLogin(c)
		}
		u, err := s.store.UserByID(ctx, uid)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				_ = s.sessions.Destroy(ctx)
				return s.toLogin(c)
			}
			return err
		}
		// A session signed in before the user's access was last ended
		// (disabled, demoted, password reset, removed by the identity
		// provider) is over, even one a request in flight wrote back.
		if s.sessions.GetInt64(ctx, handlers.SessionEpochKey) != u.AccessEpoch {
			_ = s.sessions.Destroy(ctx)
			return s.toLogin(c)
		}
		httpx.SetPrincipal(c, httpx.Principal{UserID: u.ID, Name: u.Username, Role: u.Role, MustChangePassword: u.MustChangePassword})
		if u.MustChangePassword && c.Path() != handlers.PasswordChangePath {
			return toPasswordChange(c)
		}
		if a, ok := allowed(u.Role, c); !ok {
			return echo.NewHTTPError(http.StatusForbidden, access.Refusal(u.Role, a))
		}
		return next(c)
	}
}

// toPasswordChange answers any console route but the change-password page
// for a user who must change their password: pages redirect there (and
// back afterwards), htmx requests are told to go there, other changes are
// refused.
func toPasswordChange(c echo.Context) error {
	r := c.Request()
	if r.Header.Get("HX-Request") == "true" {
		// Back to the page the fragment was asked from, not the fragment.
		back := "/"
		if u, err := url.Parse(r.Header.Get("HX-Current-URL")); err == nil && u.Path != "" {
			back = u.RequestURI()
		}
		c.Response().Header().Set("HX-Redirect", handlers.PasswordChangeURL(back))
		return c.NoContent(http.StatusForbidden)
	}
	if mutating(c.Request().Method) {
		return echo.NewHTTPError(http.StatusForbidden, "Choose your own password first, at "+handlers.PasswordChangePath+".")
	}
	return c.Redirect(http.StatusSeeOther, handlers.PasswordChangeURL(r.URL.RequestURI()))
}

func (s *Server) toLogin(c echo.Context) error {
	if c.Request().Header.Get("HX-Request") == "true" {
		c.Response().Header().Set("HX-Redirect", "/login")
		return c.NoContent(http.StatusUnauthorized)
	}
	if mutating(c.Request().Method) {
		return echo.NewHTTPError(http.StatusUnauthorized, "Log in first.")
	}
	return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
}

// requireToken authenticates the admin API by bearer token. Bad tokens are
// throttled per client address like failed console logins (h.SignIn): while
// the address must wait, requests are answered 429 before any token is
// looked up.
func (s *Server) requireToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		auth := c.Request().Header.Get("Authorization")
		tok, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || tok == "" {
			return httpx.JSONError(c, http.StatusUnauthorized, "unauthorized", "send an admin API token as 'Authorization: Bearer sya-…' (create one under Users & tokens)", nil)
		}
		ip := s.h.SignIn.ClientIP(c.Request())
		if v := s.h.SignIn.Check(ctx, "", ip); v.Blocked {
			handlers.SetRetryAfter(c, v)
			return httpx.JSONError(c, http.StatusTooManyRequests, "too_many_failures", "too many failed sign-ins from this address; retry after "+strconv.FormatInt(v.RetryAfterSeconds(), 10)+" s", nil)
		}
		t, err := s.store.AuthenticateAdminToken(ctx, strings.TrimSpace(tok))
		if errors.Is(err, store.ErrTokenExpired) {
			return httpx.JSONError(c, http.StatusUnauthorized, "token_expired", "admin API token "+t.Prefix+"… expired at "+t.ExpiresAt.UTC().Format(time.RFC3339)+"; create a new one under Users & tokens", nil)
		}
		if err != nil {
			s.h.SignIn.Fail(ctx, "", ip)
			return httpx.JSONError(c, http.StatusUnauthorized, "unauthorized", "invalid or revoked admin API token", nil)
		}
		if s.uses != nil {
			s.uses.AdminTokenUsed(t.ID, time.Now(), ip)
		}
		httpx.SetPrincipal(c, httpx.Principal{Name: "token:" + t.Name, Role: t.Role})
		if a, ok := allowed(t.Role, c); !ok {
			return httpx.JSONError(c, http.StatusForbidden, "forbidden", "admin API token: "+access.Refusal(t.Role, a), nil)
		}
		return next(c)
	}
}

// allowed looks up the action of the request's route in the role table
// and reports whether role may do it. Both guards decide only here.
func allowed(role string, c echo.Context) (access.Action, bool) {
	a := access.ForRoute(c.Request().Method, c.Path())
	return a, access.Allows(role, a)
}

func mutating(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// errorHandler renders errors as JSON for APIs and as a page for the console.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, msg := http.StatusInternalServerError, "Something went wrong on our side; the error is in the server log."
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code = he.Code
		if m, ok := he.Message.(string); ok {
			msg = m
		} else {
			msg = http.StatusText(code)
		}
	}
	if code >= 500 {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	path := c.Request().URL.Path
	switch {
	case strings.HasPrefix(path, "/v1/"):
		_ = handlers.WriteOpenAIError(c, code, "invalid_request", msg)
	case strings.HasPrefix(path, "/admin/api/"):
		_ = httpx.JSONError(c, code, strings.ReplaceAll(strings.ToLower(http.StatusText(code)), " ", "_"), msg, nil)
	case c.Request().Header.Get("HX-Request") == "true":
		_ = c.String(code, msg)
	default:
		_ = c.HTML(code, `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Error · Switchyard</title><link rel="icon" href="/favicon.ico"><link rel="stylesheet" href="/static/app.css"></head><body><main style="max-width:640px;margin:10vh auto;padding:0 12px"><div class="panel"><h1>`+
			http.StatusText(code)+`</h1><p>`+html.EscapeString(msg)+`</p><p><a href="/">Back to the console</a></p></div></main></body></html>`)
	}
}

// favicon serves the console's icon at /favicon.ico, where browsers ask
// for it before any page names it.
func favicon(c echo.Context) error {
	b, err := static.FS.ReadFile("favicon.ico")
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=86400")
	return c.Blob(http.StatusOK, "image/x-icon", b)
}

func staticHandler() echo.HandlerFunc {
	fs := http.StripPrefix("/static/", http.FileServer(http.FS(static.FS)))
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=3600")
		fs.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}
