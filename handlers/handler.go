// Package handlers holds the console pages, the admin JSON API and the data
// plane's HTTP endpoints. Handlers are thin: parse, validate, call, render.
// Every route is listed in web/routes.go.
package handlers

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/store/rows"
	"switchyard/views/components"
	"switchyard/views/layout"
)

// DraftReader reads the draft configuration with its revision; most areas
// render from it.
type DraftReader interface {
	Draft(ctx context.Context) (config.Snapshot, int64, error)
}

// DraftStore is what every console page's frame needs: the draft and
// whether it differs from the live version.
type DraftStore interface {
	DraftReader
	DraftState(ctx context.Context) (live int64, differs bool, err error)
}

// Storage is every area's storage at once: *store.Store satisfies it, and
// UseStorage hands it to each area.
type Storage interface {
	DraftStore
	ProviderStore
	LogicModelStore
	RouteGroupStore
	CallerStore
	TenantStore
	VersionStore
	ProbeStore
	JobRunStore
	LoginStore
	AccountStore
	WizardStore
	SSOStore
	AuditStore
	AlertStore
}

// Handler holds the dependencies of every console and API handler. Each
// console area reaches storage only through the small interface it declares
// (ProviderStore in providers.go, and so on), so a handler's dependencies are
// visible and a test can replace one area's storage with a fake.
type Handler struct {
	Drafts      DraftStore
	Providers   ProviderStore
	LogicModels LogicModelStore
	RouteGroups RouteGroupStore
	Callers     CallerStore
	Tenants     TenantStore
	Versions    VersionStore
	ProbeLog    ProbeStore
	JobLog      JobRunStore
	Logins      LoginStore
	Accounts    AccountStore
	Wizard      WizardStore
	// SSO is single sign-on's storage (settings, provider accounts).
	SSO SSOStore
	// Audit reads the audit trail.
	Audit AuditStore
	// Alerts backs Settings → Alerts, the alert API and the overview's firing alerts.
	Alerts AlertStore
	// PostAlert sends a channel's test message; nil hides the button.
	PostAlert AlertPoster
	// CallLogs reads the call logs (search, detail, dashboard series).
	CallLogs CallLogReader

	Sessions *scs.SessionManager
	Log      *slog.Logger
	// Env tells the dry-run which protocols this binary implements.
	Env config.Env
	// Notices returns instance-wide warnings for the banner (e.g. Redis down).
	Notices func() []string
	// Keys reports and clears provider keys' runtime states; nil hides them.
	Keys KeyStates
	// Location is the limiter's time zone (SWITCHYARD_TIMEZONE): the month
	// of the budgets and the days of the Usage page; nil is UTC.
	Location *time.Location
	// BaseURL is the public base URL of this instance, for snippets.
	BaseURL string
	// Ops reads the live data plane (Test route, dashboard states); nil
	// when the console runs without a data plane.
	Ops Ops
	// Health and Jobs back the Health and Jobs pages (worker role data).
	Health HealthOps
	Jobs   JobsOps
	// SignIn throttles failed logins and admin API tokens; nil throttles
	// nothing.
	SignIn *SignIn
}

// UseStorage points every area at s, and the call-log reads at logs.
func (h *Handler) UseStorage(s Storage, logs CallLogReader) {
	h.Drafts, h.Providers, h.LogicModels, h.RouteGroups = s, s, s, s
	h.Callers, h.Tenants, h.Versions = s, s, s
	h.ProbeLog, h.JobLog, h.Logins, h.Accounts, h.Wizard = s, s, s, s, s
	h.SSO = s
	h.Audit = s
	h.ProbeLog, h.JobLog, h.Logins, h.Accounts, h.Wizard, h.Alerts = s, s, s, s, s, s
	h.CallLogs = logs
}

// page builds the frame of a console page.
func (h *Handler) page(c echo.Context, title, active string) layout.Page {
	p := httpx.CurrentPrincipal(c)
	pg := layout.Page{Title: title, Active: active, User: p.Name, Role: p.Role, Can: p.Can(), CSRF: httpx.CSRFToken(c)}
	live, differs, err := h.Drafts.DraftState(c.Request().Context())
	if err != nil {
		h.Log.Warn("draft state", "err", err)
	}
	pg.LiveVersion, pg.DraftDiffers = live, differs
	pg.Unservable = components.UnservableCount(h.verdicts())
	if h.Notices != nil {
		pg.Notices = h.Notices()
	}
	if h.Sessions != nil {
		pg.Flash = h.Sessions.PopString(c.Request().Context(), "flash")
		pg.FlashError = h.Sessions.PopString(c.Request().Context(), "flash_error")
	}
	return pg
}

// flash shows msg on the next page the user sees.
func (h *Handler) flash(c echo.Context, msg string) {
	if h.Sessions != nil {
		h.Sessions.Put(c.Request().Context(), "flash", msg)
	}
}

// flashError shows a refusal on the next page, in red.
func (h *Handler) flashError(c echo.Context, msg string) {
	if h.Sessions != nil {
		h.Sessions.Put(c.Request().Context(), "flash_error", msg)
	}
}

func (h *Handler) dryRun(s config.Snapshot) config.Result { return config.DryRun(s, h.Env) }

// idParam parses a positive integer path parameter.
func idParam(c echo.Context, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, echo.NewHTTPError(http.StatusNotFound, "no such "+name)
	}
	return id, nil
}

// fieldErrors extracts per-field messages from a store or validation error.
// ok is false when err is something else (a real failure).
func fieldErrors(err error) (config.FieldErrors, bool) {
	var ve *config.ValidationError
	if errors.As(err, &ve) {
		return ve.Fields, true
	}
	var re *rows.ReferencedError
	if errors.As(err, &re) {
		return config.FieldErrors{"_": re.Message}, true
	}
	return nil, false
}

// notFoundOr turns rows.ErrNotFound into a 404.
func notFoundOr(err error) error {
	if errors.Is(err, rows.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "not found")
	}
	return err
}

// formInt reads an integer form value; blank is 0. Malformed input is
// reported on the field rather than silently read as 0.
func formInt(c echo.Context, name string, errs config.FieldErrors) int {
	v := c.FormValue(name)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		errs.Add(name, "must be a whole number")
	}
	return n
}

func formInt64(c echo.Context, name string, errs config.FieldErrors) int64 {
	v := c.FormValue(name)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		errs.Add(name, "must be a whole number")
	}
	return n
}

// formMoney reads an amount field exactly (decimal text to micro-units, no
// float on the way); empty is 0. Signs are left to the validators.
func formMoney(c echo.Context, name string, errs config.FieldErrors) config.Micros {
	v := strings.TrimSpace(c.FormValue(name))
	if v == "" {
		return 0
	}
	m, err := config.ParseMicros(v)
	switch {
	case err == nil:
		return m
	case errors.Is(err, config.ErrMoneyPrecision):
		errs.Add(name, "has more than 6 decimal places (the smallest amount is 0.000001)")
	case errors.Is(err, config.ErrMoneyRange):
		errs.Add(name, "is too large")
	default:
		errs.Add(name, "must be a number such as 2.5")
	}
	return 0
}

func formBool(c echo.Context, name string) bool {
	v := c.FormValue(name)
	return v == "on" || v == "true" || v == "1"
}

// merge adds b's messages to a (a's win).
func merge(a, b config.FieldErrors) config.FieldErrors {
	for k, v := range b {
		a.Add(k, v)
	}
	return a
}
