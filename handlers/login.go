package handlers

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/store"
	"switchyard/views/pages/auth"
)

// SessionUserKey is the session entry holding the signed-in user id.
const SessionUserKey = "user_id"

// LoginPage shows the login form.
func (h *Handler) LoginPage(c echo.Context) error {
	return httpx.Render(c, http.StatusOK, auth.Login(auth.LoginForm{CSRF: httpx.CSRFToken(c), Next: safeNext(c.QueryParam("next"))}), nil)
}

// Login checks credentials and starts a session.
func (h *Handler) Login(c echo.Context) error {
	ctx := c.Request().Context()
	username := strings.TrimSpace(c.FormValue("username"))
	u, err := h.Store.Login(ctx, username, c.FormValue("password"))
	if errors.Is(err, store.ErrBadLogin) {
		// The username and a forwarded address are the caller's strings,
		// logged and echoed: bounded.
		shown := httpx.Clip(username, httpx.ShownLen)
		h.Log.Info("console login refused", "username", shown, "remote", httpx.Clip(c.RealIP(), 64))
		return httpx.Render(c, http.StatusUnauthorized, auth.Login(auth.LoginForm{CSRF: httpx.CSRFToken(c), Username: shown, Error: "Wrong username or password.", Next: safeNext(c.FormValue("next"))}), nil)
	}
	if err != nil {
		return err
	}
	// A new session token on login prevents session fixation.
	if err := h.Sessions.RenewToken(ctx); err != nil {
		return err
	}
	h.Sessions.Put(ctx, SessionUserKey, u.ID)
	h.Log.Info("console login", "user", u.Username, "role", u.Role)
	return c.Redirect(http.StatusSeeOther, safeNext(c.FormValue("next")))
}

// Logout ends the session.
func (h *Handler) Logout(c echo.Context) error {
	if err := h.Sessions.Destroy(c.Request().Context()); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}

// safeNext keeps post-login redirects on this site, and drops one too long
// to be a console page (the caller's string is echoed in the form).
func safeNext(next string) string {
	if next == "" || len(next) > 2048 || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}
