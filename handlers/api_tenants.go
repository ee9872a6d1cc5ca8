package handlers

import (
	"github.com/labstack/echo/v4"

	"switchyard/routing/config"
)

// Admin API: tenants.

// APITenants lists the draft's tenants.
func (h *Handler) APITenants(c echo.Context) error {
	snap, _, err := h.Tenants.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	return apiList(c, "tenants", snap.Tenants)
}

// APITenant returns one tenant.
func (h *Handler) APITenant(c echo.Context) error { return apiTenants.get(h, c) }

// APITenantCreate adds a tenant.
func (h *Handler) APITenantCreate(c echo.Context) error {
	return apiTenants.create(h, c, config.Tenant{}, nil, h.Tenants.CreateTenant)
}

// APITenantUpdate changes a tenant; fields left out keep their values.
func (h *Handler) APITenantUpdate(c echo.Context) error {
	return apiTenants.update(h, c, apiUpdate[config.Tenant]{save: h.Tenants.UpdateTenant})
}

// APITenantDelete deletes a tenant; 409 while callers or route groups belong to it.
func (h *Handler) APITenantDelete(c echo.Context) error {
	return h.apiDelete(c, "tenant", h.Tenants.DeleteTenant)
}
