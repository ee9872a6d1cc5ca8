package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"switchyard/handlers/audit"
	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/store/rows"
	"switchyard/views/layout"
	"switchyard/views/pages/callers"
)

// callerKeysPanel loads the keys of a caller's names into the key panel.
func (h *Handler) callerKeysPanel(c echo.Context, cl config.Caller, p callers.KeysPanel, canKeys bool, names []string) (callers.KeysPanel, error) {
	keys, err := h.Callers.CallerKeys(c.Request().Context(), names...)
	if err != nil {
		return p, err
	}
	p.CallerID, p.CallerName, p.Keys = cl.ID, cl.Name, callerKeyViews(keys)
	p.CSRF, p.CanEdit = httpx.CSRFToken(c), canKeys
	return p, nil
}

// expiringWithin is how soon an expiry is flagged (amber on the key list,
// named on the Callers page).
const expiringWithin = 7 * 24 * time.Hour

// callerKeyViews turns stored keys into the panel's rows.
func callerKeyViews(keys []rows.CallerKeyInfo) []callers.Key {
	now := time.Now()
	out := make([]callers.Key, 0, len(keys))
	for _, k := range keys {
		v := callers.Key{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Fingerprint: k.Fingerprint(), CreatedAt: k.CreatedAt, CreatedBy: k.CreatedBy,
			RevokedAt: k.RevokedAt, RevokedBy: deref(k.RevokedBy), Owner: k.Owner, Scope: scopeText(k.Scope()), ExpiresAt: k.ExpiresAt,
			RevokeAt: k.RevokeAt, LastUsedAt: k.LastUsedAt, LastUsedAddr: deref(k.LastUsedAddr)}
		if k.RotatedFrom != nil {
			v.RotatedFrom = *k.RotatedFrom
		}
		if k.RevokedAt != nil {
			v.RevokeAt = nil // the rotation is over
		}
		v.ExpiryTone = expiryTone(k.ExpiresAt, now)
		out = append(out, v)
	}
	return out
}

// expiryTone is "bad" for an expired key, "warn" for one expiring within
// expiringWithin, else "".
func expiryTone(at *time.Time, now time.Time) string {
	switch {
	case at == nil:
		return ""
	case !now.Before(*at):
		return "bad"
	case at.Sub(now) <= expiringWithin:
		return "warn"
	}
	return ""
}

// scopeText lists a scope's names for the key list ("" : everything).
func scopeText(s config.KeyScope) string {
	var parts []string
	add := func(label string, names []string) {
		if len(names) > 0 {
			parts = append(parts, label+": "+strings.Join(names, ", "))
		}
	}
	add("tiers", names(s.Tiers))
	add("models", s.Models)
	add("doors", names(s.Doors))
	return strings.Join(parts, "; ")
}

func names[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// splitList splits a comma-separated form field, dropping blanks.
func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseExpiry reads an expiry: "" (never), a date (midnight UTC) or RFC 3339.
func parseExpiry(v string) (*time.Time, bool) {
	if v = strings.TrimSpace(v); v == "" {
		return nil, true
	}
	for _, layout := range []string{"2006-01-02", time.RFC3339, "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, v); err == nil {
			return &t, true
		}
	}
	return nil, false
}

// keyForm reads the create-key form into a new key and the panel that
// re-shows it.
func keyForm(c echo.Context) (rows.NewCallerKey, callers.KeysPanel, config.FieldErrors) {
	p := callers.KeysPanel{Name: strings.TrimSpace(c.FormValue("name")), Owner: strings.TrimSpace(c.FormValue("owner")),
		ExpiresAt: strings.TrimSpace(c.FormValue("expires_at")), ScopeTiers: c.FormValue("scope_tiers"), ScopeModels: c.FormValue("scope_models"), Doors: c.FormValue("scope_doors")}
	in := rows.NewCallerKey{Name: p.Name, Owner: p.Owner, Scope: config.KeyScope{Models: splitList(p.ScopeModels)}}
	for _, t := range splitList(p.ScopeTiers) {
		in.Scope.Tiers = append(in.Scope.Tiers, config.TierName(t))
	}
	for _, d := range splitList(p.Doors) {
		in.Scope.Doors = append(in.Scope.Doors, config.Door(d))
	}
	fe := config.FieldErrors{}
	var ok bool
	if in.ExpiresAt, ok = parseExpiry(p.ExpiresAt); !ok {
		fe.Add("expires_at", "must be a date (YYYY-MM-DD) or a time (RFC 3339)")
	}
	return in, p, fe
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// draftCallerID finds the draft caller of a name (0 when the draft has none).
func (h *Handler) draftCallerID(ctx context.Context, name string) (int64, error) {
	snap, _, err := h.Callers.Draft(ctx)
	if err != nil {
		return 0, err
	}
	for _, cl := range snap.Callers {
		if cl.Name == name {
			return cl.ID, nil
		}
	}
	return 0, nil
}

// draftCallerName finds the name of a draft caller.
func (h *Handler) draftCallerName(ctx context.Context, id int64) (string, error) {
	snap, _, err := h.Callers.Draft(ctx)
	if err != nil {
		return "", err
	}
	for _, cl := range snap.Callers {
		if cl.ID == id {
			return cl.Name, nil
		}
	}
	return "", fmt.Errorf("caller %d: %w", id, rows.ErrNotFound)
}

// renderCallerKeys answers a key post: the key panel for htmx, the whole
// caller page otherwise (never a redirect, so a new key is shown once and
// travels in no URL).
func (h *Handler) renderCallerKeys(c echo.Context, callerID int64, p callers.KeysPanel, status int) error {
	page, err := h.callerDetail(c, callerID, p)
	if err != nil {
		return err
	}
	return httpx.Render(c, status, callers.Detail(page), callers.Keys(page.Keys))
}

// publicBaseURL is this instance's public base URL for snippets, falling
// back to the address the request came to.
func (h *Handler) publicBaseURL(c echo.Context) string {
	if base := strings.TrimRight(h.BaseURL, "/"); base != "" {
		return base
	}
	return c.Scheme() + "://" + c.Request().Host
}

// CallerKeyCreate makes a new API key and shows its plaintext exactly once,
// in this response only.
func (h *Handler) CallerKeyCreate(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	in, form, fe := keyForm(c)
	callerName, err := h.draftCallerName(c.Request().Context(), id)
	if err != nil {
		return notFoundOr(err)
	}
	if len(fe) > 0 {
		form.Errors = fe
		return h.renderCallerKeys(c, id, form, http.StatusUnprocessableEntity)
	}
	plain, k, err := h.Callers.CreateCallerKeyWith(c.Request().Context(), callerName, in, httpx.CurrentPrincipal(c).Name)
	if err != nil {
		fe, ok := fieldErrors(err)
		if !ok {
			return notFoundOr(err)
		}
		form.Errors = fe
		return h.renderCallerKeys(c, id, form, http.StatusUnprocessableEntity)
	}
	h.Log.Info("caller key created", "caller", callerName, "key_id", k.ID, "prefix", k.Prefix, "by", httpx.CurrentPrincipal(c).Name)
	audit.Note(c, "key #"+strconv.FormatInt(k.ID, 10)+" "+k.Prefix+"…")
	nk := &callers.NewKey{Plaintext: plain, Prefix: k.Prefix, APIBase: h.publicBaseURL(c) + "/v1"}
	// "Caller saved. Create an API key below" is done: it goes.
	httpx.AddOOB(c, "flash", func(context.Context) templ.Component { return layout.FlashCleared() })
	return h.renderCallerKeys(c, id, callers.KeysPanel{NewKey: nk}, http.StatusOK)
}

// parseGrace reads a rotation's grace period: a custom duration when one
// is given, else the chosen one.
func parseGrace(choice, custom string) (time.Duration, bool) {
	v := strings.TrimSpace(custom)
	if v == "" {
		v = strings.TrimSpace(choice)
	}
	d, err := time.ParseDuration(v)
	return d, err == nil
}

// CallerKeyRotate replaces a key: the new key is shown once, and the old
// one keeps working for the grace period chosen, then every instance
// refuses it.
func (h *Handler) CallerKeyRotate(c echo.Context) error {
	keyID, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	callerName, err := h.Callers.CallerKeyCaller(ctx, keyID)
	if err != nil {
		return notFoundOr(err)
	}
	callerID, err := h.draftCallerID(ctx, callerName)
	if err != nil {
		return err
	}
	grace, ok := parseGrace(c.FormValue("grace"), c.FormValue("grace_custom"))
	if !ok {
		return h.renderCallerKeys(c, callerID, callers.KeysPanel{Problem: "Not rotated: a grace period is a duration such as 1h or 36h."}, http.StatusUnprocessableEntity)
	}
	r, err := h.Callers.RotateCallerKey(ctx, keyID, grace, httpx.CurrentPrincipal(c).Name)
	if err != nil {
		fe, ok := fieldErrors(err)
		if !ok {
			return notFoundOr(err)
		}
		return h.renderCallerKeys(c, callerID, callers.KeysPanel{Problem: "Not rotated: " + fe["grace"]}, http.StatusUnprocessableEntity)
	}
	h.Log.Info("caller key rotated", "caller", callerName, "old_key_id", keyID, "new_key_id", r.New.ID, "revoke_at", r.RevokeAt, "by", httpx.CurrentPrincipal(c).Name)
	nk := &callers.NewKey{Plaintext: r.Plaintext, Prefix: r.New.Prefix, APIBase: h.publicBaseURL(c) + "/v1"}
	var old string
	if keys, err := h.Callers.CallerKeys(ctx, callerName); err == nil {
		for _, k := range keys {
			if k.ID == keyID {
				old = k.Prefix
			}
		}
	}
	return h.renderCallerKeys(c, callerID, callers.KeysPanel{NewKey: nk, Rotated: &callers.Rotated{OldPrefix: old, RevokeAt: r.RevokeAt}}, http.StatusOK)
}

// CallerKeyRevoke revokes a key for good; every instance refuses it within
// the key reload bound.
func (h *Handler) CallerKeyRevoke(c echo.Context) error {
	keyID, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	callerName, err := h.Callers.CallerKeyCaller(ctx, keyID)
	if err != nil {
		return notFoundOr(err)
	}
	// Not found here means it was already revoked: the outcome is the same.
	if err := h.Callers.RevokeCallerKey(ctx, keyID, httpx.CurrentPrincipal(c).Name); err != nil && !errors.Is(err, rows.ErrNotFound) {
		return err
	}
	h.Log.Info("caller key revoked", "caller", callerName, "key_id", keyID, "by", httpx.CurrentPrincipal(c).Name)
	callerID, err := h.draftCallerID(ctx, callerName)
	if err != nil {
		return err
	}
	msg := "Key revoked: requests using it are refused within seconds."
	if !httpx.IsPartial(c) || callerID == 0 {
		h.flash(c, msg)
		if callerID == 0 {
			return httpx.Redirect(c, "/callers")
		}
		return httpx.Redirect(c, "/callers/"+strconv.FormatInt(callerID, 10))
	}
	return h.renderCallerKeys(c, callerID, callers.KeysPanel{Notice: msg}, http.StatusOK)
}
