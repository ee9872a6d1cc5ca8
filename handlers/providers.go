package handlers

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/store/redis/keypool"
	"switchyard/views/components"
	"switchyard/views/pages/providers"
)

// ProviderStore is the storage the providers pages and API need: providers and
// their key pools. *store.Store satisfies it.
type ProviderStore interface {
	DraftReader
	AddProviderKey(ctx context.Context, providerID int64, label, secret string) (config.ProviderKey, error)
	CreateProvider(ctx context.Context, p config.Provider) (int64, error)
	DeleteProvider(ctx context.Context, id int64) error
	ProviderKeyProvider(ctx context.Context, keyID int64) (int64, error)
	RemoveProviderKey(ctx context.Context, keyID int64) error
	SetProviderKeyStatus(ctx context.Context, keyID int64, status string) error
	UpdateProvider(ctx context.Context, id int64, p config.Provider) error
}

// KeyStates is the live state of provider keys (cooling, quarantined, last
// used), shared by every instance.
type KeyStates interface {
	States(ctx context.Context) (map[int64]keypool.KeyState, error)
	Reenable(ctx context.Context, keyID int64) error
}

// keyRuntime is the key states as the provider pages show them.
func (h *Handler) keyRuntime(ctx context.Context) map[int64]providers.KeyRuntime {
	if h.Keys == nil {
		return nil
	}
	states, err := h.Keys.States(ctx)
	if err != nil {
		h.Log.Warn("key states unavailable", "err", err)
	}
	out := make(map[int64]providers.KeyRuntime, len(states))
	for id, s := range states {
		out[id] = providers.KeyRuntime{Status: string(s.Status), Reason: components.KeyStateWords(string(s.Status), s.Fault, s.Reason),
			Since: s.Since, Until: s.Until, LastUsed: s.LastUsed}
	}
	return out
}

// ProvidersList shows every provider with its key pool.
func (h *Handler) ProvidersList(c echo.Context) error {
	ctx := c.Request().Context()
	snap, _, err := h.Providers.Draft(ctx)
	if err != nil {
		return err
	}
	used := map[string][]string{}
	for _, m := range snap.LogicModels {
		for _, d := range m.Deployments {
			used[d.Provider] = append(used[d.Provider], m.Code+" ("+d.UpstreamModel+")")
		}
	}
	keys := h.keyRuntime(ctx)
	page := providers.ListPage{Page: h.page(c, "Providers", "providers")}
	for _, p := range snap.Providers {
		page.Rows = append(page.Rows, providers.Row{Provider: p, Deployments: used[p.Name], Keys: keys})
	}
	return httpx.Render(c, http.StatusOK, providers.List(page), nil)
}

// ProviderNew shows an empty provider form.
func (h *Handler) ProviderNew(c echo.Context) error {
	f := providers.Form{V: config.Provider{Protocol: config.ProtocolOpenAI, Enabled: true, TimeoutMS: 60000}, CSRF: httpx.CSRFToken(c)}
	return httpx.Render(c, http.StatusOK, providers.FormPage(h.page(c, "Add provider", "providers"), f), nil)
}

// ProviderEdit shows a provider's form.
func (h *Handler) ProviderEdit(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	snap, _, err := h.Providers.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	for _, p := range snap.Providers {
		if p.ID == id {
			f := providers.Form{ID: id, V: p, CSRF: httpx.CSRFToken(c)}
			return httpx.Render(c, http.StatusOK, providers.FormPage(h.page(c, "Edit "+p.Name, "providers"), f), nil)
		}
	}
	return echo.NewHTTPError(http.StatusNotFound, "no such provider")
}

func providerFromForm(c echo.Context) (config.Provider, config.FieldErrors) {
	errs := config.FieldErrors{}
	p := config.Provider{
		Name:     strings.TrimSpace(c.FormValue("name")),
		Protocol: config.Protocol(c.FormValue("protocol")),
		BaseURL:  strings.TrimSpace(c.FormValue("base_url")),
		Enabled:  formBool(c, "enabled"),
		Notes:    c.FormValue("notes"),
	}
	switch p.Protocol { // only the settings of the provider's kind are kept
	case config.ProtocolAzure:
		p.APIVersion, p.AuthURL = strings.TrimSpace(c.FormValue("api_version")), strings.TrimSpace(c.FormValue("auth_url"))
	case config.ProtocolBedrock:
		p.Region = strings.TrimSpace(c.FormValue("region"))
	case config.ProtocolVertex: // location and token endpoint have fields of their own
		p.Project, p.Region, p.AuthURL = strings.TrimSpace(c.FormValue("project")), strings.TrimSpace(c.FormValue("location")), strings.TrimSpace(c.FormValue("token_url"))
	case config.ProtocolOpenAI: // the wire quirks, one checkbox each
		for _, q := range config.ProviderQuirks {
			if formBool(c, "quirk_"+string(q)) {
				p.Quirks = append(p.Quirks, q)
			}
		}
	}
	p.TimeoutMS = formInt(c, "timeout_ms", errs)
	p.Headers, p.PassHeaders = headersFromForm(c)
	verrs := config.ValidateProvider(p)
	if p.Protocol == config.ProtocolVertex {
		for from, to := range map[string]string{"region": "location", "auth_url": "token_url"} {
			if msg, ok := verrs[from]; ok {
				delete(verrs, from)
				verrs[to] = msg
			}
		}
	}
	return p, merge(errs, verrs)
}

// headersFromForm reads the header rows (header_name_N, header_value_N,
// header_secret_N for N below header_rows; rows without a name are left
// out) and the comma-separated passthrough list.
func headersFromForm(c echo.Context) ([]config.ProviderHeader, []string) {
	var headers []config.ProviderHeader
	n, _ := strconv.Atoi(c.FormValue("header_rows"))
	for i := range min(n, 2*config.MaxProviderHeaders) {
		idx := strconv.Itoa(i)
		name := strings.TrimSpace(c.FormValue("header_name_" + idx))
		if name == "" {
			continue
		}
		headers = append(headers, config.ProviderHeader{Name: name, Value: strings.TrimSpace(c.FormValue("header_value_" + idx)), Secret: formBool(c, "header_secret_"+idx)})
	}
	var pass []string
	for _, f := range strings.FieldsFunc(c.FormValue("pass_headers"), func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' }) {
		pass = append(pass, f)
	}
	return headers, pass
}

// keepStoredSecrets marks the secret headers sent without a value whose
// value provider id already stores: they keep it, and the form shows it set.
func keepStoredSecrets(snap config.Snapshot, id int64, p *config.Provider) {
	for _, cur := range snap.Providers {
		if cur.ID != id {
			continue
		}
		for i := range p.Headers {
			h := &p.Headers[i]
			if !h.Secret || h.Value != "" {
				continue
			}
			for _, ch := range cur.Headers {
				if ch.Secret && strings.EqualFold(ch.Name, h.Name) {
					h.Value = config.SecretSet
				}
			}
		}
	}
}

// ProviderSave creates (no id) or updates a provider.
func (h *Handler) ProviderSave(c echo.Context) error {
	return saving[config.Provider]{
		parse: func(c echo.Context, id int64) (config.Provider, config.FieldErrors, error) {
			p, errs := providerFromForm(c)
			if id != 0 {
				snap, _, err := h.Providers.Draft(c.Request().Context())
				if err != nil {
					return p, nil, err
				}
				keepStoredSecrets(snap, id, &p)
			}
			return p, errs, nil
		},
		create: h.Providers.CreateProvider,
		update: h.Providers.UpdateProvider,
		invalid: func(c echo.Context, id int64, p config.Provider, errs config.FieldErrors) error {
			f := providers.Form{ID: id, V: p, Errors: errs, CSRF: httpx.CSRFToken(c)}
			return httpx.Render(c, http.StatusUnprocessableEntity, providers.FormPage(h.page(c, "Provider", "providers"), f), providers.FormBody(f))
		},
		done: func(_ int64, p config.Provider, _ bool) (string, string) {
			return "Provider " + p.Name + " saved. Publish to make it live.", "/providers"
		},
	}.run(h, c)
}

// ProviderDelete deletes a provider unless deployments still use it.
func (h *Handler) ProviderDelete(c echo.Context) error {
	return deleting{del: h.Providers.DeleteProvider, deleted: "Provider deleted.", list: "/providers"}.run(h, c)
}

// renderPool re-renders one provider's key pool fragment.
func (h *Handler) renderPool(c echo.Context, providerID int64, form providers.KeyForm, status int) error {
	ctx := c.Request().Context()
	snap, _, err := h.Providers.Draft(ctx)
	if err != nil {
		return err
	}
	for _, p := range snap.Providers {
		if p.ID == providerID {
			pool := providers.Pool{Provider: p, Keys: h.keyRuntime(ctx), Form: form, CSRF: httpx.CSRFToken(c), CanEdit: true}
			if !httpx.IsPartial(c) {
				if status != http.StatusOK {
					h.flashError(c, "Key not added: "+strings.Join(flatten(form.Errors), "; "))
				}
				return httpx.Redirect(c, "/providers")
			}
			return httpx.Render(c, status, providers.KeyPool(pool), nil)
		}
	}
	return echo.NewHTTPError(http.StatusNotFound, "no such provider")
}

// ProviderKeyAdd adds a key to a provider's pool.
func (h *Handler) ProviderKeyAdd(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	label := strings.TrimSpace(c.FormValue("label"))
	_, err = h.Providers.AddProviderKey(c.Request().Context(), id, label, strings.TrimSpace(c.FormValue("secret")))
	if err != nil {
		fe, ok := fieldErrors(err)
		if !ok {
			return notFoundOr(err)
		}
		return h.renderPool(c, id, providers.KeyForm{Label: label, Errors: fe}, http.StatusUnprocessableEntity)
	}
	return h.renderPool(c, id, providers.KeyForm{}, http.StatusOK)
}

// ProviderKeyStatus enables or disables a key in the draft.
func (h *Handler) ProviderKeyStatus(c echo.Context) error {
	return h.keyAction(c, func(ctx context.Context, keyID int64) error {
		return h.Providers.SetProviderKeyStatus(ctx, keyID, c.FormValue("status"))
	})
}

// ProviderKeyRemove removes a key from the draft.
func (h *Handler) ProviderKeyRemove(c echo.Context) error {
	return h.keyAction(c, h.Providers.RemoveProviderKey)
}

// ProviderKeyReenable clears a key's quarantine or cooling on every instance
// at once (an operator action, not a config change).
func (h *Handler) ProviderKeyReenable(c echo.Context) error {
	return h.keyAction(c, func(ctx context.Context, keyID int64) error {
		if h.Keys == nil {
			return nil
		}
		h.Log.Info("provider key re-enabled by operator", "key_id", keyID, "by", httpx.CurrentPrincipal(c).Name)
		return h.Keys.Reenable(ctx, keyID)
	})
}

func (h *Handler) keyAction(c echo.Context, fn func(context.Context, int64) error) error {
	keyID, err := idParam(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	pid, err := h.Providers.ProviderKeyProvider(ctx, keyID)
	if err != nil {
		return notFoundOr(err)
	}
	if err := fn(ctx, keyID); err != nil {
		if fe, ok := fieldErrors(err); ok {
			return h.renderPool(c, pid, providers.KeyForm{Errors: fe}, http.StatusUnprocessableEntity)
		}
		return notFoundOr(err)
	}
	return h.renderPool(c, pid, providers.KeyForm{}, http.StatusOK)
}

func flatten(f config.FieldErrors) []string {
	var out []string
	for k, v := range f {
		out = append(out, k+" "+v)
	}
	return out
}
