package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/store/redis/loginguard"
	"switchyard/store/rows"
	"switchyard/views/pages/settings"
)

// AccountStore is the storage the Settings page needs: console users and admin
// API tokens. *store.Store satisfies it.
type AccountStore interface {
	AdminTokens(ctx context.Context) ([]rows.AdminToken, error)
	CreateAdminTokenUntil(ctx context.Context, name, role, createdBy string, expiresAt *time.Time) (string, rows.AdminToken, error)
	CreateUser(ctx context.Context, username, password, role string) (int64, error)
	DisableUser(ctx context.Context, id int64) (rows.Disabled, error)
	ResetPassword(ctx context.Context, id int64, password string) (rows.PasswordReset, error)
	RevokeAdminToken(ctx context.Context, id int64) error
	SetUserRole(ctx context.Context, id int64, role string) (rows.RoleChange, error)
	Users(ctx context.Context) ([]rows.User, error)
}

// settingsPage loads both panels of the Users & tokens page.
func (h *Handler) settingsPage(c echo.Context) (settings.Page, error) {
	ctx := c.Request().Context()
	users, err := h.Accounts.Users(ctx)
	if err != nil {
		return settings.Page{}, err
	}
	tokens, err := h.Accounts.AdminTokens(ctx)
	if err != nil {
		return settings.Page{}, err
	}
	pg := h.page(c, "Users & tokens", "settings")
	csrf, canEdit := httpx.CSRFToken(c), pg.Can.ManageUsers
	signIn, err := h.signInPanel(c, csrf, canEdit)
	if err != nil {
		return settings.Page{}, err
	}
	return settings.Page{
		SignIn:   signIn,
		Page:     pg,
		Users:    settings.UsersPanel{Users: userViews(users), Me: httpx.CurrentPrincipal(c).UserID, Form: settings.UserForm{Role: rows.RoleViewer}, CSRF: csrf, CanEdit: canEdit},
		Lockouts: h.lockoutsPanel(c, csrf, canEdit),
		Tokens:   settings.TokensPanel{Tokens: adminTokenViews(tokens), Form: settings.TokenForm{Role: rows.RoleAdmin}, CSRF: csrf, CanEdit: canEdit},
	}, nil
}

// lockoutsPanel lists current sign-in lockouts. Redis being unreachable is
// not an error of the page: the panel says the list is this instance's.
func (h *Handler) lockoutsPanel(c echo.Context, csrf string, canEdit bool) settings.LockoutsPanel {
	p := settings.LockoutsPanel{CSRF: csrf, CanEdit: canEdit}
	if h.SignIn == nil || h.SignIn.Guard == nil {
		return p
	}
	g := h.SignIn.Guard
	set := g.Settings()
	p.Enabled = true
	p.Policy = settings.LockoutPolicy{UserBackoffAfter: set.User.BackoffAfter, UserLockoutAfter: set.User.LockoutAfter,
		IPBackoffAfter: set.IP.BackoffAfter, IPLockoutAfter: set.IP.LockoutAfter, LockoutFor: set.LockoutFor}
	locks, err := g.Locks(c.Request().Context())
	if err != nil {
		h.Log.Warn("sign-in lockouts: shared list unavailable", "err", err)
		p.Unshared = true
	}
	for _, l := range locks {
		p.Locks = append(p.Locks, settings.Lockout{Kind: string(l.Kind), Subject: l.Subject, Until: l.Until, Local: l.Local})
	}
	return p
}

// renderLockouts answers a lockout post like renderUsers.
func (h *Handler) renderLockouts(c echo.Context, status int, edit func(*settings.LockoutsPanel)) error {
	p, err := h.settingsPage(c)
	if err != nil {
		return err
	}
	edit(&p.Lockouts)
	return httpx.Render(c, status, settings.Show(p), settings.Lockouts(p.Lockouts))
}

// SettingsLockoutClear lifts a sign-in lockout of a username or a client
// address, on every instance.
func (h *Handler) SettingsLockoutClear(c echo.Context) error {
	kind := loginguard.Kind(c.FormValue("kind"))
	subject := c.FormValue("subject")
	if h.SignIn == nil || h.SignIn.Guard == nil {
		return echo.NewHTTPError(http.StatusNotFound, "Sign-ins are not throttled on this instance: there is no lockout to clear.")
	}
	if !kind.Valid() || loginguard.Normalize(subject) == "" || len(subject) > 256 {
		return h.renderLockouts(c, http.StatusUnprocessableEntity, func(p *settings.LockoutsPanel) {
			p.Error = "Choose a locked user or address from the list."
		})
	}
	who := "user " + loginguard.Normalize(subject)
	if kind == loginguard.IP {
		who = "address " + loginguard.Normalize(subject)
	}
	if err := h.SignIn.Guard.Clear(c.Request().Context(), kind, subject); err != nil {
		h.Log.Warn("sign-in lockout cleared on this instance only", "kind", string(kind), "subject", loginguard.Normalize(subject), "err", err, "by", httpx.CurrentPrincipal(c).Name)
		return h.renderLockouts(c, http.StatusServiceUnavailable, func(p *settings.LockoutsPanel) {
			p.Error = "Cleared the lockout of " + who + " on this instance only: Redis is unreachable, so other instances may refuse it until the lockout ends."
		})
	}
	h.Log.Info("sign-in lockout cleared", "kind", string(kind), "subject", loginguard.Normalize(subject), "by", httpx.CurrentPrincipal(c).Name)
	msg := "Lockout of " + who + " cleared: sign-ins are checked again."
	if !httpx.IsPartial(c) {
		h.flash(c, msg)
		return httpx.Redirect(c, "/settings")
	}
	return h.renderLockouts(c, http.StatusOK, func(p *settings.LockoutsPanel) { p.Notice = msg })
}

// userViews turns stored users into the users panel's rows.
func userViews(us []rows.User) []settings.User {
	var out []settings.User
	for _, u := range us {
		out = append(out, settings.User{ID: u.ID, Username: u.Username, Role: u.Role, CreatedAt: u.CreatedAt, MustChangePassword: u.MustChangePassword})
	}
	return out
}

// adminTokenViews turns stored admin tokens into the tokens panel's rows.
func adminTokenViews(ts []rows.AdminToken) []settings.Token {
	var out []settings.Token
	now := time.Now()
	for _, t := range ts {
		out = append(out, settings.Token{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Role: t.Role, CreatedBy: t.CreatedBy,
			CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, LastUsedAddr: t.LastUsedAddr, RevokedAt: t.RevokedAt,
			ExpiresAt: t.ExpiresAt, Expired: t.ExpiresAt != nil && !now.Before(*t.ExpiresAt)})
	}
	return out
}

// Settings shows console users and admin API tokens.
func (h *Handler) Settings(c echo.Context) error {
	p, err := h.settingsPage(c)
	if err != nil {
		return err
	}
	return httpx.Render(c, http.StatusOK, settings.Show(p), nil)
}

// renderUsers answers a user post: the users panel for htmx, the page
// otherwise. edit adjusts the freshly loaded panel.
func (h *Handler) renderUsers(c echo.Context, status int, edit func(*settings.UsersPanel)) error {
	p, err := h.settingsPage(c)
	if err != nil {
		return err
	}
	edit(&p.Users)
	return httpx.Render(c, status, settings.Show(p), settings.Users(p.Users))
}

// renderTokens answers a token post like renderUsers.
func (h *Handler) renderTokens(c echo.Context, status int, edit func(*settings.TokensPanel)) error {
	p, err := h.settingsPage(c)
	if err != nil {
		return err
	}
	edit(&p.Tokens)
	return httpx.Render(c, status, settings.Show(p), settings.Tokens(p.Tokens))
}

// SettingsUserCreate adds a console user.
func (h *Handler) SettingsUserCreate(c echo.Context) error {
	username := strings.TrimSpace(c.FormValue("username"))
	password := c.FormValue("password")
	role := c.FormValue("role")
	errs := rows.ValidateUser(username, password, role)
	if len(errs) == 0 {
		if _, err := h.Accounts.CreateUser(c.Request().Context(), username, password, role); err != nil {
			fe, ok := fieldErrors(err)
			if !ok {
				return err
			}
			errs = fe
		}
	}
	if len(errs) > 0 {
		// The password is never echoed back.
		return h.renderUsers(c, http.StatusUnprocessableEntity, func(p *settings.UsersPanel) {
			p.Form = settings.UserForm{Username: username, Role: role, Errors: errs}
		})
	}
	h.Log.Info("console user created", "username", username, "role", role, "by", httpx.CurrentPrincipal(c).Name)
	msg := "User " + username + " created with the " + role + " role."
	return h.usersDone(c, msg)
}

// SettingsUserDisable disables a console user: their sessions end and the
// admin API tokens they created are revoked, in one transaction. Nobody can
// disable themselves, so an admin remains.
func (h *Handler) SettingsUserDisable(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	me := httpx.CurrentPrincipal(c)
	if id == me.UserID {
		return h.renderUsers(c, http.StatusUnprocessableEntity, func(p *settings.UsersPanel) {
			p.Error = "You cannot disable yourself. Ask another admin."
		})
	}
	d, err := h.Accounts.DisableUser(c.Request().Context(), id)
	if err != nil {
		return notFoundOr(err)
	}
	h.Log.Info("console user disabled", "user_id", id, "username", d.Username, "sessions_ended", d.SessionsEnded, "tokens_revoked", d.TokensRevoked, "by", me.Name)
	msg := "User " + d.Username + " disabled: they are signed out and cannot log in"
	switch d.TokensRevoked {
	case 0:
		msg += "."
	case 1:
		msg += "; the admin API token they created is revoked."
	default:
		msg += "; the " + strconv.FormatInt(d.TokensRevoked, 10) + " admin API tokens they created are revoked."
	}
	return h.usersDone(c, msg)
}

// SettingsTokenCreate makes an admin API token and shows its plaintext
// exactly once, in this response only (never a redirect).
func (h *Handler) SettingsTokenCreate(c echo.Context) error {
	name := strings.TrimSpace(c.FormValue("token_name"))
	role := c.FormValue("token_role")
	by := httpx.CurrentPrincipal(c).Name
	expiresText := strings.TrimSpace(c.FormValue("token_expires_at"))
	expires, ok := parseExpiry(expiresText)
	var plain string
	var t rows.AdminToken
	err := (config.FieldErrors{"expires_at": "must be a date (YYYY-MM-DD) or a time (RFC 3339)"}).Err()
	if ok {
		plain, t, err = h.Accounts.CreateAdminTokenUntil(c.Request().Context(), name, role, by, expires)
	}
	if err != nil {
		fe, ok := fieldErrors(err)
		if !ok {
			return err
		}
		errs := config.FieldErrors{}
		for k, v := range fe {
			switch k {
			case "name", "role", "expires_at":
				k = "token_" + k
			}
			errs.Add(k, v)
		}
		return h.renderTokens(c, http.StatusUnprocessableEntity, func(p *settings.TokensPanel) {
			p.Form = settings.TokenForm{Name: name, Role: role, ExpiresAt: expiresText, Errors: errs}
		})
	}
	h.Log.Info("admin token created", "token_id", t.ID, "name", t.Name, "prefix", t.Prefix, "role", t.Role, "by", by)
	example := "curl -H \"Authorization: Bearer " + plain + "\" " + h.publicBaseURL(c) + "/admin/api/config/draft"
	return h.renderTokens(c, http.StatusOK, func(p *settings.TokensPanel) {
		p.Created = &settings.CreatedToken{Plaintext: plain, Name: t.Name, Example: example}
	})
}

// SettingsTokenRevoke revokes an admin API token at once.
func (h *Handler) SettingsTokenRevoke(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := h.Accounts.RevokeAdminToken(ctx, id); err != nil {
		if !errors.Is(err, rows.ErrNotFound) {
			return err
		}
		// Unknown, or already revoked: only the first is an error.
		tokens, lerr := h.Accounts.AdminTokens(ctx)
		if lerr != nil {
			return lerr
		}
		known := false
		for _, t := range tokens {
			known = known || t.ID == id
		}
		if !known {
			return notFoundOr(err)
		}
	}
	h.Log.Info("admin token revoked", "token_id", id, "by", httpx.CurrentPrincipal(c).Name)
	msg := "Token revoked: requests using it are refused."
	if !httpx.IsPartial(c) {
		h.flash(c, msg)
		return httpx.Redirect(c, "/settings")
	}
	return h.renderTokens(c, http.StatusOK, func(p *settings.TokensPanel) { p.Notice = msg })
}

// SettingsUserRole makes another user an admin or a viewer. Nobody changes
// their own role, so an admin remains; a user whose role is lowered is
// signed out and loses the admin API tokens they created
// (rows.AccessEndDemoted).
func (h *Handler) SettingsUserRole(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	me := httpx.CurrentPrincipal(c)
	if id == me.UserID {
		return h.renderUsers(c, http.StatusUnprocessableEntity, func(p *settings.UsersPanel) {
			p.Error = "You cannot change your own role. Ask another admin."
		})
	}
	role := c.FormValue("role")
	ch, err := h.Accounts.SetUserRole(c.Request().Context(), id, role)
	if err != nil {
		if fe, ok := fieldErrors(err); ok {
			return h.renderUsers(c, http.StatusUnprocessableEntity, func(p *settings.UsersPanel) {
				p.Error = "Role " + fe["role"] + "."
			})
		}
		return notFoundOr(err)
	}
	h.Log.Info("console user role changed", "user_id", id, "username", ch.Username, "from", ch.From, "to", ch.To, "sessions_ended", ch.SessionsEnded, "tokens_revoked", ch.TokensRevoked, "by", me.Name)
	msg := "User " + ch.Username + " is now " + article(ch.To) + " " + ch.To + "."
	if ch.From == ch.To {
		msg = "User " + ch.Username + " already was " + article(ch.To) + " " + ch.To + "."
	}
	if rows.RoleLowered(ch.From, ch.To) {
		msg += " They are signed out of every session"
		switch ch.TokensRevoked {
		case 0:
			msg += "."
		case 1:
			msg += ", and the admin API token they created is revoked."
		default:
			msg += ", and the " + strconv.FormatInt(ch.TokensRevoked, 10) + " admin API tokens they created are revoked."
		}
	}
	return h.usersDone(c, msg)
}

// SettingsUserPassword resets another user's password: to the one the
// admin typed, or to a generated one shown exactly once in this answer
// (never a redirect, never a log line). The user's sessions end, the
// admin API tokens they created are revoked (rows.AccessEndPasswordReset),
// and they choose their own password at their next sign-in. An admin
// who lost their own password asks another admin, or runs
// `switchyard reset-password <user>` on the server.
func (h *Handler) SettingsUserPassword(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	me := httpx.CurrentPrincipal(c)
	if id == me.UserID {
		return h.renderUsers(c, http.StatusUnprocessableEntity, func(p *settings.UsersPanel) {
			p.Error = "You cannot reset your own password here. Ask another admin, or run switchyard reset-password " + me.Name + " on the server."
		})
	}
	password, generated := c.FormValue("password"), false
	if password == "" {
		password, generated = rows.RandomPassword(), true
	}
	if fe := rows.ValidatePassword(password); len(fe) > 0 {
		return h.renderUsers(c, http.StatusUnprocessableEntity, func(p *settings.UsersPanel) {
			p.Error = "The new password " + fe["password"] + "; nothing was changed."
		})
	}
	r, err := h.Accounts.ResetPassword(c.Request().Context(), id, password)
	if err != nil {
		return notFoundOr(err)
	}
	h.Log.Info("console user password reset", "user_id", id, "username", r.Username, "generated", generated, "sessions_ended", r.SessionsEnded, "tokens_revoked", r.TokensRevoked, "by", me.Name)
	done := &settings.PasswordReset{Username: r.Username, SessionsEnded: r.SessionsEnded, TokensRevoked: r.TokensRevoked}
	if generated {
		done.Password = password
	}
	return h.renderUsers(c, http.StatusOK, func(p *settings.UsersPanel) { p.Reset = done })
}

func article(role string) string {
	if role == rows.RoleAdmin {
		return "an"
	}
	return "a"
}

// usersDone answers a successful change to a console user: the users panel
// with the notice for htmx, a flash and a redirect for a plain form post.
func (h *Handler) usersDone(c echo.Context, msg string) error {
	if !httpx.IsPartial(c) {
		h.flash(c, msg)
		return httpx.Redirect(c, "/settings")
	}
	return h.renderUsers(c, http.StatusOK, func(p *settings.UsersPanel) { p.Notice = msg })
}
