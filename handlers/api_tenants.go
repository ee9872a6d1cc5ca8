package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"switchyard/routing/config"
)

// Admin API: tenants.

func apiFindTenant(snap config.Snapshot, id int64) (config.Tenant, bool) {
	for _, t := range snap.Tenants {
		if t.ID == id {
			return t, true
		}
	}
	return config.Tenant{}, false
}

func (h *Handler) apiTenant(c echo.Context, status int, id int64) error {
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	t, ok := apiFindTenant(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("tenant", id))
	}
	return c.JSON(status, t)
}

// APITenants lists the draft's tenants.
func (h *Handler) APITenants(c echo.Context) error {
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	return apiList(c, "tenants", snap.Tenants)
}

// APITenant returns one tenant.
func (h *Handler) APITenant(c echo.Context) error {
	id, err := apiID(c, "tenant")
	if err != nil {
		return apiFail(c, err)
	}
	return h.apiTenant(c, http.StatusOK, id)
}

// APITenantCreate adds a tenant.
func (h *Handler) APITenantCreate(c echo.Context) error {
	var in config.Tenant
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, in.ID, 0)
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	id, err := h.Store.CreateTenant(c.Request().Context(), in)
	if err != nil {
		return apiFail(c, err)
	}
	h.audit(c, "tenant created", id)
	return h.apiTenant(c, http.StatusCreated, id)
}

// APITenantUpdate changes a tenant; fields left out keep their values.
func (h *Handler) APITenantUpdate(c echo.Context) error {
	id, err := apiID(c, "tenant")
	if err != nil {
		return apiFail(c, err)
	}
	snap, _, err := h.Store.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	in, ok := apiFindTenant(snap, id)
	if !ok {
		return apiFail(c, apiNotFound("tenant", id))
	}
	in.ID = 0
	if err := readJSON(c, &in); err != nil {
		return apiFail(c, err)
	}
	f := config.FieldErrors{}
	checkID(f, in.ID, id)
	if len(f) > 0 {
		return apiFail(c, apiInvalid(f))
	}
	if err := h.Store.UpdateTenant(c.Request().Context(), id, in); err != nil {
		return apiFail(c, orNotFound(err, "tenant", id))
	}
	h.audit(c, "tenant updated", id)
	return h.apiTenant(c, http.StatusOK, id)
}

// APITenantDelete deletes a tenant; 409 while callers or route groups belong to it.
func (h *Handler) APITenantDelete(c echo.Context) error {
	return h.apiDelete(c, "tenant", h.Store.DeleteTenant)
}
