package handlers

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/views/pages/auth"
)

// PasswordChangePath is the change-password page. A user who must change
// their password (rows.User.MustChangePassword: it was generated, or an
// admin reset it) is sent here after signing in, and every other console
// route sends them back here until they have.
const PasswordChangePath = "/account/password"

// PasswordChangeURL is the change-password page that returns to next (a
// path on this site; anything else returns to "/").
func PasswordChangeURL(next string) string {
	return PasswordChangePath + "?next=" + url.QueryEscape(safeNext(next))
}

// PasswordPage shows the change-password form to a user who must change
// their password; anyone else goes on to next.
func (h *Handler) PasswordPage(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	p := httpx.CurrentPrincipal(c)
	if !p.MustChangePassword {
		return c.Redirect(http.StatusSeeOther, next)
	}
	return httpx.Render(c, http.StatusOK, auth.ChangePassword(auth.PasswordForm{CSRF: httpx.CSRFToken(c), Username: p.Name, Next: next}), nil)
}

// PasswordChange sets the password the user chose (typed twice, the
// password rules, not the current one), clears the must-change mark and
// goes on to where the user was going. The user's sessions and tokens
// stay: changing one's own password is not a reset.
func (h *Handler) PasswordChange(c echo.Context) error {
	next := safeNext(c.FormValue("next"))
	p := httpx.CurrentPrincipal(c)
	if !p.MustChangePassword {
		return c.Redirect(http.StatusSeeOther, next)
	}
	err := h.Logins.ChangePassword(c.Request().Context(), p.UserID, c.FormValue("password"), c.FormValue("password_again"))
	if fe, ok := fieldErrors(err); ok {
		// The passwords are never echoed back.
		form := auth.PasswordForm{CSRF: httpx.CSRFToken(c), Username: p.Name, Next: next, Errors: fe}
		return httpx.Render(c, http.StatusUnprocessableEntity, auth.ChangePassword(form), nil)
	}
	if err != nil {
		return notFoundOr(err)
	}
	h.Log.Info("console user changed their password", "user_id", p.UserID, "username", p.Name)
	h.flash(c, "Your password is changed.")
	return c.Redirect(http.StatusSeeOther, next)
}
