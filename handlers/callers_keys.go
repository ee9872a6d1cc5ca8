package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

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

// callerKeyViews turns stored keys into the panel's rows.
func callerKeyViews(keys []rows.CallerKeyInfo) []callers.Key {
	out := make([]callers.Key, 0, len(keys))
	for _, k := range keys {
		out = append(out, callers.Key{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Fingerprint: k.Fingerprint(), CreatedAt: k.CreatedAt, CreatedBy: k.CreatedBy,
			RevokedAt: k.RevokedAt, RevokedBy: deref(k.RevokedBy)})
	}
	return out
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
	name := strings.TrimSpace(c.FormValue("name"))
	callerName, err := h.draftCallerName(c.Request().Context(), id)
	if err != nil {
		return notFoundOr(err)
	}
	plain, k, err := h.Callers.CreateCallerKey(c.Request().Context(), callerName, name, httpx.CurrentPrincipal(c).Name)
	if err != nil {
		fe, ok := fieldErrors(err)
		if !ok {
			return notFoundOr(err)
		}
		return h.renderCallerKeys(c, id, callers.KeysPanel{Name: name, Errors: fe}, http.StatusUnprocessableEntity)
	}
	h.Log.Info("caller key created", "caller", callerName, "key_id", k.ID, "prefix", k.Prefix, "by", httpx.CurrentPrincipal(c).Name)
	audit.Note(c, "key #"+strconv.FormatInt(k.ID, 10)+" "+k.Prefix+"…")
	nk := &callers.NewKey{Plaintext: plain, Prefix: k.Prefix, APIBase: h.publicBaseURL(c) + "/v1"}
	// "Caller saved. Create an API key below" is done: it goes.
	httpx.AddOOB(c, "flash", func(context.Context) templ.Component { return layout.FlashCleared() })
	return h.renderCallerKeys(c, id, callers.KeysPanel{NewKey: nk}, http.StatusOK)
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
