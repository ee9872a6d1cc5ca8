package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/audit"
	"switchyard/handlers/httpx"
	"switchyard/store/redis/loginguard"
	"switchyard/store/rows"
	"switchyard/views/pages/auth"
)

// LoginStore is the storage signing in and out needs. *store.Store satisfies
// it.
type LoginStore interface {
	ForgetSession(ctx context.Context, token string) error
	Login(ctx context.Context, username, password string) (rows.User, error)
	RecordSession(ctx context.Context, userID int64, token string, expiry time.Time) error
	ChangePassword(ctx context.Context, id int64, password, again string) error
}

// SessionUserKey is the session entry holding the signed-in user id.
const SessionUserKey = "user_id"

// SessionEpochKey is the session entry holding the user's access epoch at
// sign-in (rows.User.AccessEpoch): once the user's access is ended, the
// epoch moves on and the session is refused.
const SessionEpochKey = "access_epoch"

// LoginPage shows the login form.
func (h *Handler) LoginPage(c echo.Context) error {
	s, err := h.ssoSettings(c.Request().Context())
	if err != nil {
		return err
	}
	return httpx.Render(c, http.StatusOK, auth.Login(h.loginForm(c, s)), nil)
}

// Login checks credentials and starts a session. Failed attempts are
// throttled per username and per client address (h.SignIn): while either
// must wait, the attempt is answered 429 with Retry-After before the
// password is even checked. While local passwords are switched off (single
// sign-on), every password sign-in is refused before any check.
func (h *Handler) Login(c echo.Context) error {
	ctx := c.Request().Context()
	username := strings.TrimSpace(c.FormValue("username"))
	ip := h.SignIn.ClientIP(c.Request())
	audit.SetActor(c, httpx.Clip(username, httpx.ShownLen))
	sso, err := h.ssoSettings(ctx)
	if err != nil {
		return err
	}
	// The username is the caller's string, echoed in the form: bounded.
	form := h.loginForm(c, sso)
	form.Username, form.Next = httpx.Clip(username, httpx.ShownLen), safeNext(c.FormValue("next"))
	if sso.Configured() && !sso.LocalPasswords {
		h.Log.Info("console login refused: local passwords are off", "username", loginguard.Normalize(username), "remote", ip)
		form.Refusal = auth.LocalPasswordsOff
		return httpx.Render(c, http.StatusForbidden, auth.Login(form), nil)
	}
	if v := h.SignIn.Check(ctx, username, ip); v.Blocked {
		SetRetryAfter(c, v)
		form.Throttle = throttleView(v)
		return httpx.Render(c, http.StatusTooManyRequests, auth.Login(form), nil)
	}
	u, err := h.Logins.Login(ctx, username, c.FormValue("password"))
	if errors.Is(err, rows.ErrBadLogin) {
		v := h.SignIn.Fail(ctx, username, ip)
		h.Log.Info("console login refused", "username", loginguard.Normalize(username), "remote", ip, "throttled", v.Blocked)
		form.Error = "Wrong username or password."
		if v.Blocked {
			SetRetryAfter(c, v)
			form.Throttle = throttleView(v)
		}
		return httpx.Render(c, http.StatusUnauthorized, auth.Login(form), nil)
	}
	if err != nil {
		return err
	}
	h.SignIn.Succeed(ctx, u.Username)
	// A new session token on login prevents session fixation.
	if err := h.Sessions.RenewToken(ctx); err != nil {
		return err
	}
	h.Sessions.Put(ctx, SessionUserKey, u.ID)
	h.Sessions.Put(ctx, SessionEpochKey, u.AccessEpoch)
	// Remember whose session this is, and under which access epoch, so
	// ending the user's access (store.EndUserAccess) ends it.
	if err := h.Logins.RecordSession(ctx, u.ID, h.Sessions.Token(ctx), time.Now().Add(h.Sessions.Lifetime)); err != nil {
		return err
	}
	h.Log.Info("console login", "user", u.Username, "role", u.Role, "must_change_password", u.MustChangePassword)
	if u.MustChangePassword {
		return c.Redirect(http.StatusSeeOther, PasswordChangeURL(c.FormValue("next")))
	}
	return c.Redirect(http.StatusSeeOther, safeNext(c.FormValue("next")))
}

// throttleView is a throttle verdict as the login page shows it.
func throttleView(v loginguard.Verdict) *auth.Throttle {
	return &auth.Throttle{ForAddress: v.Kind == loginguard.IP, Locked: v.Locked, RetrySeconds: v.RetryAfterSeconds()}
}

// Logout ends the session.
func (h *Handler) Logout(c echo.Context) error {
	ctx := c.Request().Context()
	if uid := h.Sessions.GetInt64(ctx, SessionUserKey); uid != 0 {
		audit.Set(c, audit.Object{ID: strconv.FormatInt(uid, 10)})
	}
	if tok := h.Sessions.Token(ctx); tok != "" {
		if err := h.Logins.ForgetSession(ctx, tok); err != nil {
			h.Log.Warn("forget session", "err", err)
		}
	}
	if err := h.Sessions.Destroy(ctx); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}

// maxNext bounds a post-login path.
const maxNext = 2048

// safeNext keeps post-login redirects on this site: next must be a path on
// this origin — one leading '/', then no second '/' or '\' (browsers read
// "//x" and "/\x" as another host), no backslash or control character
// anywhere (browsers drop tab, CR and LF, so "/\t/x" becomes "//x"), and
// nothing url.Parse reads a scheme, host or user from. Anything else lands
// on "/".
func safeNext(next string) string {
	if next == "" || len(next) > maxNext || next[0] != '/' || !utf8.ValidString(next) {
		return "/"
	}
	if len(next) > 1 && (next[1] == '/' || next[1] == '\\') {
		return "/"
	}
	for _, r := range next {
		if unicode.IsControl(r) || r == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return "/"
	}
	// The path as the browser will resolve it must not start with "//"
	// either ("/%2F/x" stays a path, but be strict: nothing needs it).
	if strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}
