package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/labstack/echo/v4"

	"switchyard/handlers/audit"
	"switchyard/handlers/httpx"
	"switchyard/store/rows"
	"switchyard/views/pages/settings"
)

// signInPanel shows the stored single-sign-on settings.
func (h *Handler) signInPanel(c echo.Context, csrf string, canEdit bool) (settings.SignInPanel, error) {
	s, err := h.ssoSettings(c.Request().Context())
	if err != nil {
		return settings.SignInPanel{}, err
	}
	return settings.SignInPanel{Form: signInForm(s), SecretSet: s.SecretFingerprint, RedirectURL: h.ssoRedirectURL(c), CSRF: csrf, CanEdit: canEdit}, nil
}

func signInForm(s rows.OIDCSettings) settings.SignInForm {
	return settings.SignInForm{DisplayName: s.DisplayName, IssuerURL: s.IssuerURL, ClientID: s.ClientID, Scopes: strings.Join(s.Scopes, " "),
		GroupsClaim: s.GroupsClaim, AdminGroups: settings.JoinLines(s.AdminGroups), ViewerGroups: settings.JoinLines(s.ViewerGroups),
		DefaultRole: s.DefaultRole, LocalPasswords: s.LocalPasswords}
}

// signInUpdate reads the Sign-in form.
func signInUpdate(c echo.Context) rows.OIDCSettingsUpdate {
	s := rows.OIDCSettings{
		DisplayName: strings.TrimSpace(c.FormValue("display_name")), IssuerURL: strings.TrimRight(strings.TrimSpace(c.FormValue("issuer_url")), "/"),
		ClientID: strings.TrimSpace(c.FormValue("client_id")), Scopes: strings.Fields(c.FormValue("scopes")),
		GroupsClaim: strings.TrimSpace(c.FormValue("groups_claim")), AdminGroups: rows.SplitList(c.FormValue("admin_groups")),
		ViewerGroups: rows.SplitList(c.FormValue("viewer_groups")), DefaultRole: c.FormValue("default_role"), LocalPasswords: formBool(c, "local_passwords"),
	}
	if len(s.Scopes) == 0 {
		s.Scopes = rows.DefaultOIDCScopes
	}
	return rows.OIDCSettingsUpdate{OIDCSettings: s, ClientSecret: strings.TrimSpace(c.FormValue("client_secret"))}
}

// SettingsSignInSave stores the single-sign-on settings. The issuer must
// answer its discovery document before they are kept, so a typo is caught
// here rather than at the next sign-in.
func (h *Handler) SettingsSignInSave(c echo.Context) error {
	ctx := c.Request().Context()
	u := signInUpdate(c)
	errs := rows.ValidateOIDCSettings(u)
	if len(errs) == 0 && u.Configured() {
		if err := discover(ctx, u.IssuerURL); err != nil {
			errs.Add("issuer_url", "did not answer as an OpenID Connect provider: "+httpx.Clip(err.Error(), 200))
		}
	}
	before, err := h.SSO.OIDCSettings(ctx)
	if err != nil {
		return err
	}
	if len(errs) == 0 {
		if err := h.SSO.SaveOIDCSettings(ctx, u); err != nil {
			fe, ok := fieldErrors(err)
			if !ok {
				return err
			}
			errs = fe
		}
	}
	p, err := h.settingsPage(c)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		// The secret is never echoed back.
		p.SignIn.Form = signInForm(u.OIDCSettings)
		p.SignIn.Form.Errors = errs
		return httpx.Render(c, http.StatusUnprocessableEntity, settings.Show(p), settings.SignIn(p.SignIn))
	}
	h.Log.Info("sign-in settings saved", "issuer", u.IssuerURL, "client_id", u.ClientID, "local_passwords", u.LocalPasswords,
		"secret_changed", u.ClientSecret != "", "by", httpx.CurrentPrincipal(c).Name)
	audit.Change(c, signInAuditText(before, false), signInAuditText(u.OIDCSettings, u.ClientSecret != ""))
	p.SignIn.Notice = signInNotice(u.OIDCSettings)
	return httpx.Render(c, http.StatusOK, settings.Show(p), settings.SignIn(p.SignIn))
}

func signInNotice(s rows.OIDCSettings) string {
	switch {
	case !s.Configured():
		return "Single sign-on is off: users sign in with passwords."
	case !s.LocalPasswords:
		return "Sign-in settings saved. Password sign-in is off: everyone signs in with single sign-on (switchyard reset-password turns passwords back on)."
	}
	return "Sign-in settings saved."
}

// discover checks that issuer serves a discovery document for itself.
func discover(ctx context.Context, issuer string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := oidc.NewProvider(oidc.ClientContext(ctx, ssoHTTP), issuer)
	return err
}

// signInAuditText is the settings as the audit trail keeps them: the
// client secret is named as set or changed, never shown.
func signInAuditText(s rows.OIDCSettings, secretChanged bool) string {
	secret := "not set"
	switch {
	case secretChanged:
		secret = "changed"
	case s.SecretFingerprint != "":
		secret = "set"
	}
	return fmt.Sprintf("display name: %s\nissuer: %s\nclient id: %s\nclient secret: %s\nscopes: %s\ngroups claim: %s\nadmin groups: %s\nviewer groups: %s\ndefault role: %s\nlocal passwords: %t\n",
		s.DisplayName, s.IssuerURL, s.ClientID, secret, strings.Join(s.Scopes, " "), s.GroupsClaim,
		strings.Join(s.AdminGroups, ", "), strings.Join(s.ViewerGroups, ", "), s.DefaultRole, s.LocalPasswords)
}
