package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/views/layout"
	"switchyard/views/pages/callers"
)

// callerKeysPanel loads a caller's keys into the key panel.
func (h *Handler) callerKeysPanel(c echo.Context, cl config.Caller, p callers.KeysPanel, canKeys bool) (callers.KeysPanel, error) {
	keys, err := h.Store.CallerKeys(c.Request().Context(), cl.ID)
	if err != nil {
		return p, err
	}
	p.CallerID, p.CallerName, p.Keys = cl.ID, cl.Name, callerKeyViews(keys)
	p.CSRF, p.CanEdit = httpx.CSRFToken(c), canKeys
	return p, nil
}

// callerKeyViews turns stored keys into the panel's rows.
func callerKeyViews(keys []store.CallerKeyInfo) []callers.Key {
	out := make([]callers.Key, 0, len(keys))
	for _, k := range keys {
		out = append(out, callers.Key{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt})
	}
	return out
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
	plain, k, err := h.Store.CreateCallerKey(c.Request().Context(), id, name)
	if err != nil {
		fe, ok := fieldErrors(err)
		if !ok {
			return notFoundOr(err)
		}
		return h.renderCallerKeys(c, id, callers.KeysPanel{Name: name, Errors: fe}, http.StatusUnprocessableEntity)
	}
	h.Log.Info("caller key created", "caller_id", id, "key_id", k.ID, "prefix", k.Prefix, "by", httpx.CurrentPrincipal(c).Name)
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
	callerID, err := h.Store.CallerKeyCaller(ctx, keyID)
	if err != nil {
		return notFoundOr(err)
	}
	// Not found here means it was already revoked: the outcome is the same.
	if err := h.Store.RevokeCallerKey(ctx, keyID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	h.Log.Info("caller key revoked", "caller_id", callerID, "key_id", keyID, "by", httpx.CurrentPrincipal(c).Name)
	msg := "Key revoked: requests using it are refused within seconds."
	if !httpx.IsPartial(c) {
		h.flash(c, msg)
		return httpx.Redirect(c, "/callers/"+strconv.FormatInt(callerID, 10))
	}
	return h.renderCallerKeys(c, callerID, callers.KeysPanel{Notice: msg}, http.StatusOK)
}
