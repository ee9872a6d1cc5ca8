// Package httpx holds the request helpers shared by web (the server) and
// handlers: the render helper, the signed-in user, and JSON errors.
package httpx

import (
	"bytes"
	"context"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"switchyard/handlers/access"
	"switchyard/views/layout"
)

// Principal is who is making a console or admin-API request.
type Principal struct {
	UserID int64
	Name   string // username, or "token:<name>" for an admin token
	Role   string // admin | viewer
	// MustChangePassword: a console user who sees only the change-password
	// page until they choose their own password.
	MustChangePassword bool
}

// CanEdit reports whether the principal may change the draft
// configuration (access.EditConfig).
func (p Principal) CanEdit() bool { return access.Allows(p.Role, access.EditConfig) }

// Can is the principal's capabilities for views (the role table).
func (p Principal) Can() layout.Can { return layout.Can(access.For(p.Role)) }

const principalKey = "switchyard.principal"

// SetPrincipal records the authenticated principal on the request.
func SetPrincipal(c echo.Context, p Principal) { c.Set(principalKey, p) }

// CurrentPrincipal returns the authenticated principal (zero if none).
func CurrentPrincipal(c echo.Context) Principal {
	p, _ := c.Get(principalKey).(Principal)
	return p
}

// CSRFToken returns the request's CSRF token for forms.
func CSRFToken(c echo.Context) string {
	s, _ := c.Get("csrf").(string)
	return s
}

// IsPartial reports whether htmx asked for a fragment: an htmx request that
// is neither boosted nor a history restore.
func IsPartial(c echo.Context) bool {
	h := c.Request().Header
	return h.Get("HX-Request") == "true" && h.Get("HX-Boosted") != "true" && h.Get("HX-History-Restore-Request") != "true"
}

const oobKey = "switchyard.oob"

type oob struct {
	id string
	f  func(ctx context.Context) templ.Component
}

// AddOOB asks for one more fragment beside this request's htmx answer: the
// element with that id, swapped by htmx out of band (hx-swap-oob). f runs
// when the answer is rendered, after the handler made its change. An answer
// that already holds the element (a full page) gets none. Middleware uses
// it for what every answer to a change must refresh, such as the draft
// banner.
func AddOOB(c echo.Context, id string, f func(ctx context.Context) templ.Component) {
	list, _ := c.Get(oobKey).([]oob)
	c.Set(oobKey, append(list, oob{id: id, f: f}))
}

// Render writes fragment for htmx partial requests and full otherwise,
// rendering into a buffer first so a template error becomes a clean 500
// rather than half a page. A nil fragment always renders full. An htmx
// answer carries the out-of-band fragments AddOOB asked for.
func Render(c echo.Context, status int, full, fragment templ.Component) error {
	comp := full
	if fragment != nil && IsPartial(c) {
		comp = fragment
	}
	var buf bytes.Buffer
	ctx := c.Request().Context()
	if err := comp.Render(ctx, &buf); err != nil {
		return err
	}
	if IsPartial(c) {
		list, _ := c.Get(oobKey).([]oob)
		for _, o := range list {
			if bytes.Contains(buf.Bytes(), []byte(`id="`+o.id+`"`)) {
				continue
			}
			if comp := o.f(ctx); comp != nil {
				if err := comp.Render(ctx, &buf); err != nil {
					return err
				}
			}
		}
	}
	h := c.Response().Header()
	h.Add("Vary", "HX-Request")
	h.Set("Cache-Control", "no-store")
	return c.HTMLBlob(status, buf.Bytes())
}

// Redirect sends a plain form post to url with 303, and an htmx request
// with HX-Redirect so the whole page navigates.
func Redirect(c echo.Context, url string) error {
	if c.Request().Header.Get("HX-Request") == "true" {
		c.Response().Header().Set("HX-Redirect", url)
		return c.NoContent(http.StatusOK)
	}
	return c.Redirect(http.StatusSeeOther, url)
}

// APIError is the admin API's error body:
// {"error":{"message","type","code","fields"}}.
type APIError struct {
	Message string            `json:"message"`
	Type    string            `json:"type"`
	Code    string            `json:"code"`
	Fields  map[string]string `json:"fields,omitempty"`
	Details any               `json:"details,omitempty"`
}

// JSONError writes an admin-API error.
func JSONError(c echo.Context, status int, code, msg string, fields map[string]string) error {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status == http.StatusConflict:
		typ = "conflict_error"
	case status >= 500:
		typ = "server_error"
	}
	return c.JSON(status, map[string]APIError{"error": {Message: msg, Type: typ, Code: code, Fields: fields}})
}
