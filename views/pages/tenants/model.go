// Package tenants renders the Tenants pages: tenants with their dedicated
// route groups and callers (multi-tenancy).
//
// data-testid: tenants-table, tenant-new, tenant-<name> (row) with
// tenant-groups, tenant-callers, tenant-edit, tenant-delete; form
// tenant-form, tenant-name, tenant-description, tenant-save,
// field-<name>/error-<name>.
package tenants

import (
	"switchyard/routing/config"
	"switchyard/views/components"
	"switchyard/views/layout"
)

// Row is one tenant on the list page.
type Row struct {
	config.Tenant
	// Groups are the route groups dedicated to the tenant.
	Groups []string
	// Callers are the callers that belong to the tenant, by id and name.
	Callers []CallerRef
}

// CallerRef links to a caller.
type CallerRef struct {
	ID   int64
	Name string
}

// ListPage is the Tenants page.
type ListPage struct {
	Page layout.Page
	Rows []Row
}

// Form is the create/edit form of a tenant.
type Form struct {
	ID     int64
	V      config.Tenant
	Errors config.FieldErrors
	CSRF   string
}

// Action is where the form posts.
func (f Form) Action() string {
	if f.ID == 0 {
		return "/tenants"
	}
	return "/tenants/" + components.I64(f.ID)
}
