package handlers

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/views/pages/tenants"
)

// TenantStore is the storage the tenants pages and API need. *store.Store
// satisfies it.
type TenantStore interface {
	DraftReader
	CreateTenant(ctx context.Context, t config.Tenant) (int64, error)
	DeleteTenant(ctx context.Context, id int64) error
	UpdateTenant(ctx context.Context, id int64, t config.Tenant) error
}

// TenantsList shows every tenant with its dedicated route groups and callers.
func (h *Handler) TenantsList(c echo.Context) error {
	snap, _, err := h.Tenants.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	page := tenants.ListPage{Page: h.page(c, "Tenants", "tenants")}
	for _, t := range snap.Tenants {
		r := tenants.Row{Tenant: t}
		for _, g := range snap.RouteGroups {
			if g.Tenant == t.Name {
				r.Groups = append(r.Groups, g.Name)
			}
		}
		for _, cl := range snap.Callers {
			if cl.Tenant == t.Name {
				r.Callers = append(r.Callers, tenants.CallerRef{ID: cl.ID, Name: cl.Name})
			}
		}
		page.Rows = append(page.Rows, r)
	}
	return httpx.Render(c, http.StatusOK, tenants.List(page), nil)
}

// TenantNew shows an empty tenant form.
func (h *Handler) TenantNew(c echo.Context) error {
	f := tenants.Form{CSRF: httpx.CSRFToken(c)}
	return httpx.Render(c, http.StatusOK, tenants.FormPage(h.page(c, "Add tenant", "tenants"), f), nil)
}

// TenantEdit shows a tenant's form.
func (h *Handler) TenantEdit(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	snap, _, err := h.Tenants.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	for _, t := range snap.Tenants {
		if t.ID == id {
			f := tenants.Form{ID: id, V: t, CSRF: httpx.CSRFToken(c)}
			return httpx.Render(c, http.StatusOK, tenants.FormPage(h.page(c, "Edit "+t.Name, "tenants"), f), nil)
		}
	}
	return echo.NewHTTPError(http.StatusNotFound, "There is no such tenant.")
}

// TenantSave creates (no id) or updates a tenant.
func (h *Handler) TenantSave(c echo.Context) error {
	return saving[config.Tenant]{
		parse: func(c echo.Context, _ int64) (config.Tenant, config.FieldErrors, error) {
			t := config.Tenant{Name: strings.TrimSpace(c.FormValue("name")), Description: strings.TrimSpace(c.FormValue("description"))}
			return t, config.ValidateTenant(t), nil
		},
		create: h.Tenants.CreateTenant,
		update: h.Tenants.UpdateTenant,
		invalid: func(c echo.Context, id int64, t config.Tenant, errs config.FieldErrors) error {
			f := tenants.Form{ID: id, V: t, Errors: errs, CSRF: httpx.CSRFToken(c)}
			return httpx.Render(c, http.StatusUnprocessableEntity, tenants.FormPage(h.page(c, "Tenant", "tenants"), f), tenants.FormBody(f))
		},
		done: func(_ int64, t config.Tenant, _ bool) (string, string) {
			return "Tenant " + t.Name + " saved. Publish to make it live.", "/tenants"
		},
	}.run(h, c)
}

// TenantDelete deletes a tenant unless route groups or callers belong to it.
func (h *Handler) TenantDelete(c echo.Context) error {
	return deleting{
		del: h.Tenants.DeleteTenant,
		refused: func(why string) string {
			return "Not deleted: " + why + ". Move them to another tenant or delete them first."
		},
		deleted: "Tenant deleted. Publish to make the change live.",
		list:    "/tenants",
	}.run(h, c)
}
