package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"switchyard/routing/config"
)

// Admin API: providers and their key pools. Secrets are write-only: a key
// is answered with its id, label, fingerprint and status, never its secret,
// and a secret header's value reads "••• set" (config.SecretSet).
//
// A provider's "headers" ([{name, value, secret}]) are sent to its vendor
// with every request; "pass_headers" names the caller headers passed
// through. A secret header given a value has it sealed; given "" or
// "••• set" it keeps the value stored under its name.

// APIProviders lists the draft's providers with their keys.
func (h *Handler) APIProviders(c echo.Context) error {
	snap, _, err := h.Providers.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	return apiList(c, "providers", snap.Providers)
}

// APIProvider returns one provider.
func (h *Handler) APIProvider(c echo.Context) error { return apiProviders.get(h, c) }

// APIProviderCreate adds a provider (enabled, 60 s timeout unless the body
// says otherwise). Keys are added with POST /providers/:id/keys.
func (h *Handler) APIProviderCreate(c echo.Context) error {
	in := config.Provider{Enabled: true, TimeoutMS: 60000}
	return apiProviders.create(h, c, in, func(f config.FieldErrors, in config.Provider) {
		readOnly(f, "keys", in.Keys, nil, "add keys with POST /admin/api/providers/{id}/keys")
	}, h.Providers.CreateProvider)
}

// APIProviderUpdate changes a provider's own fields; fields left out keep
// their values.
func (h *Handler) APIProviderUpdate(c echo.Context) error {
	return apiProviders.update(h, c, apiUpdate[config.Provider]{
		blank: func(in *config.Provider) { in.Keys, in.Headers, in.PassHeaders, in.Quirks = nil, nil, nil, nil },
		check: func(f config.FieldErrors, in *config.Provider, cur config.Provider) {
			readOnly(f, "keys", in.Keys, cur.Keys, "change keys with /admin/api/providers/{id}/keys and /admin/api/provider-keys/{id}")
			// Lists left out keep their values; [] empties them.
			if in.Headers == nil {
				in.Headers = cur.Headers
			}
			if in.PassHeaders == nil {
				in.PassHeaders = cur.PassHeaders
			}
			if in.Quirks == nil {
				in.Quirks = cur.Quirks
			}
		},
		save: h.Providers.UpdateProvider,
	})
}

// APIProviderDelete deletes a provider and its keys; 409 while deployments use it.
func (h *Handler) APIProviderDelete(c echo.Context) error {
	return h.apiDelete(c, "provider", h.Providers.DeleteProvider)
}

type apiKeyIn struct {
	Label  string `json:"label"`
	Secret string `json:"secret"`
}

// APIProviderKeyAdd adds a key to a provider's pool. The secret is sealed
// and never answered.
func (h *Handler) APIProviderKeyAdd(c echo.Context) error {
	pid, err := apiID(c, "provider")
	if err != nil {
		return apiFail(c, err)
	}
	snap, _, err := h.Providers.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	if _, ok := apiProviders.find(snap, pid); !ok {
		return apiFail(c, apiNotFound("provider", pid))
	}
	var in apiKeyIn
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	k, err := h.Providers.AddProviderKey(c.Request().Context(), pid, in.Label, in.Secret)
	if err != nil {
		return apiFail(c, orNotFound(err, "provider", pid))
	}
	h.audit(c, "provider key added", k.ID)
	return apiProviderKeys.answer(h, c, http.StatusCreated, k.ID)
}

// APIProviderKeyStatus enables or disables a key in the draft:
// {"status":"active|disabled"}. Label and fingerprint are read-only.
func (h *Handler) APIProviderKeyStatus(c echo.Context) error {
	id, err := apiID(c, "provider key")
	if err != nil {
		return apiFail(c, err)
	}
	snap, _, err := h.Providers.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	cur, ok := apiProviderKeys.find(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("provider key", id))
	}
	var in config.ProviderKey
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, in.ID, id)
	readOnly(f, "label", in.Label, cur.Label, "a key's label cannot change; add the key again with the new label")
	readOnly(f, "fingerprint", in.Fingerprint, cur.Fingerprint, "is derived from the secret")
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	if err := h.Providers.SetProviderKeyStatus(c.Request().Context(), id, in.Status); err != nil {
		return apiFail(c, orNotFound(err, "provider key", id))
	}
	h.audit(c, "provider key status changed", id)
	return apiProviderKeys.answer(h, c, http.StatusOK, id)
}

// APIProviderKeyRemove removes a key from the draft.
func (h *Handler) APIProviderKeyRemove(c echo.Context) error {
	id, err := apiID(c, "provider key")
	if err != nil {
		return apiFail(c, err)
	}
	if err := h.Providers.RemoveProviderKey(c.Request().Context(), id); err != nil {
		return apiFail(c, orNotFound(err, "provider key", id))
	}
	h.audit(c, "provider key removed", id)
	return c.NoContent(http.StatusNoContent)
}
