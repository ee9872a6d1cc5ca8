package handlers

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/store/rows"
	"switchyard/views/pages/callers"
)

// CallerStore is the storage the callers pages and the callers API need:
// callers, their keys, and the live version (which keys it knows).
// *store.Store satisfies it.
type CallerStore interface {
	DraftReader
	CallerKeyCaller(ctx context.Context, keyID int64) (string, error)
	CallerKeys(ctx context.Context, callerNames ...string) ([]rows.CallerKeyInfo, error)
	CreateCaller(ctx context.Context, c config.Caller) (int64, error)
	CreateCallerKeyWith(ctx context.Context, callerName string, in rows.NewCallerKey, actor string) (plaintext string, k config.CallerKey, err error)
	RotateCallerKey(ctx context.Context, keyID int64, grace time.Duration, actor string) (rows.Rotation, error)
	CallerKeysExpiringWithin(ctx context.Context, d time.Duration) ([]rows.CallerKeyInfo, error)
	DeleteCaller(ctx context.Context, id int64) error
	LatestVersion(ctx context.Context) (rows.Version, error)
	RevokeCallerKey(ctx context.Context, keyID int64, actor string) error
	UnrevokedKeyCounts(ctx context.Context) (map[string]int, error)
	UpdateCaller(ctx context.Context, id int64, c config.Caller) error
}

// CallersList shows every caller with its quotas, budget and key count.
func (h *Handler) CallersList(c echo.Context) error {
	ctx := c.Request().Context()
	snap, _, err := h.Callers.Draft(ctx)
	if err != nil {
		return err
	}
	live, err := h.liveCallerSet(ctx)
	if err != nil {
		return err
	}
	counts, err := h.Callers.UnrevokedKeyCounts(ctx)
	if err != nil {
		return err
	}
	expiring, err := h.Callers.CallerKeysExpiringWithin(ctx, expiringWithin)
	if err != nil {
		return err
	}
	page := callers.ListPage{Page: h.page(c, "Callers", "callers"), HasGroups: len(snap.RouteGroups) > 0}
	ids := map[string]int64{}
	for _, cl := range snap.Callers {
		_, ok := live.callers[cl.ID]
		ids[cl.Name] = cl.ID
		page.Rows = append(page.Rows, callers.Row{Caller: cl, Live: ok, KeyCount: counts[cl.Name]})
	}
	for _, k := range expiring {
		page.Expiring = append(page.Expiring, callers.ExpiringKey{CallerID: ids[k.CallerName], Caller: k.CallerName, Prefix: k.Prefix, Name: k.Name, Owner: k.Owner, ExpiresAt: *k.ExpiresAt})
	}
	return httpx.Render(c, http.StatusOK, callers.List(page), nil)
}

// CallerShow shows a caller's settings and API keys.
func (h *Handler) CallerShow(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	page, err := h.callerDetail(c, id, callers.KeysPanel{})
	if err != nil {
		return err
	}
	return httpx.Render(c, http.StatusOK, callers.Detail(page), nil)
}

// callerDetail builds a caller's page; keys carries what the key panel
// shows besides the list (a new key, a notice, form errors).
func (h *Handler) callerDetail(c echo.Context, id int64, keys callers.KeysPanel) (callers.DetailPage, error) {
	ctx := c.Request().Context()
	snap, _, err := h.Callers.Draft(ctx)
	if err != nil {
		return callers.DetailPage{}, err
	}
	i := slices.IndexFunc(snap.Callers, func(cl config.Caller) bool { return cl.ID == id })
	if i < 0 {
		return callers.DetailPage{}, echo.NewHTTPError(http.StatusNotFound, "There is no such caller.")
	}
	cl := snap.Callers[i]
	live, err := h.liveCallerSet(ctx)
	if err != nil {
		return callers.DetailPage{}, err
	}
	status := callers.LiveStatus{Published: live.version > 0, LiveVersion: live.version}
	if lc, ok := live.callers[id]; ok {
		status.InLive = true
		status.Changed = !sameCallerSettings(lc, cl)
	}
	pg := h.page(c, "Caller "+cl.Name, "callers")
	keys.Status = status
	names := []string{cl.Name}
	if lc, ok := live.callers[id]; ok && lc.Name != cl.Name {
		names = append(names, lc.Name) // renamed in the draft: its keys follow at publish
	}
	panel, err := h.callerKeysPanel(c, cl, keys, pg.Can.CallerKeys, names)
	if err != nil {
		return callers.DetailPage{}, err
	}
	return callers.DetailPage{Page: pg, Caller: cl, Status: status, Keys: panel}, nil
}

// callerLive is what the live version says about callers.
type callerLive struct {
	version int64
	callers map[int64]config.Caller
}

// liveCallerSet reads the callers of the live version; before the first
// publish there are none.
func (h *Handler) liveCallerSet(ctx context.Context) (callerLive, error) {
	out := callerLive{callers: map[int64]config.Caller{}}
	v, err := h.Callers.LatestVersion(ctx)
	if errors.Is(err, rows.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	snap, err := config.Decode([]byte(v.Snapshot))
	if err != nil {
		return out, err
	}
	out.version = v.Number
	for _, cl := range snap.Callers {
		out.callers[cl.ID] = cl
	}
	return out, nil
}

// sameCallerSettings compares what publishing changes; keys take effect
// without a publish and are left out.
func sameCallerSettings(a, b config.Caller) bool {
	nonZero := func(ls []config.TierLimit) []config.TierLimit {
		var out []config.TierLimit
		for _, l := range ls {
			if l.RPM != 0 || l.TPM != 0 || l.DailyTokens != 0 {
				out = append(out, l)
			}
		}
		return out
	}
	cur := func(s string) string {
		if s == "" {
			return "USD"
		}
		return s
	}
	return a.Name == b.Name && a.BusinessLine == b.BusinessLine && a.Tenant == b.Tenant &&
		a.RouteGroup == b.RouteGroup && a.PriorityClass == b.PriorityClass && a.Enabled == b.Enabled &&
		a.MonthlyBudgetMicros == b.MonthlyBudgetMicros && cur(a.BudgetCurrency) == cur(b.BudgetCurrency) &&
		slices.Equal(nonZero(a.Limits), nonZero(b.Limits))
}

// CallerNew shows an empty caller form.
func (h *Handler) CallerNew(c echo.Context) error {
	f, err := h.callerForm(c, 0, config.Caller{PriorityClass: config.DefaultClass, Enabled: true, BudgetCurrency: "USD"})
	if err != nil {
		return err
	}
	if len(f.Groups) > 0 {
		f.V.RouteGroup = f.Groups[0]
	}
	return httpx.Render(c, http.StatusOK, callers.FormPage(h.page(c, "Add caller", "callers"), f), nil)
}

// CallerEdit shows a caller's form.
func (h *Handler) CallerEdit(c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	snap, _, err := h.Callers.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	for _, cl := range snap.Callers {
		if cl.ID == id {
			f := callerFormFrom(snap, id, cl, httpx.CSRFToken(c))
			return httpx.Render(c, http.StatusOK, callers.FormPage(h.page(c, "Edit "+cl.Name, "callers"), f), nil)
		}
	}
	return echo.NewHTTPError(http.StatusNotFound, "There is no such caller.")
}

// callerForm fills a form's choices (route groups, tenants) from the draft.
func (h *Handler) callerForm(c echo.Context, id int64, v config.Caller) (callers.Form, error) {
	snap, _, err := h.Callers.Draft(c.Request().Context())
	if err != nil {
		return callers.Form{}, err
	}
	return callerFormFrom(snap, id, v, httpx.CSRFToken(c)), nil
}

func callerFormFrom(snap config.Snapshot, id int64, v config.Caller, csrf string) callers.Form {
	f := callers.Form{ID: id, V: v, CSRF: csrf}
	for _, g := range snap.RouteGroups {
		f.Groups = append(f.Groups, g.Name)
	}
	for _, t := range snap.Tenants {
		f.Tenants = append(f.Tenants, t.Name)
	}
	return f
}

// callerFromForm reads a caller from the posted form. raw keeps the typed
// text of the numeric fields for re-display.
func callerFromForm(c echo.Context) (config.Caller, map[string]string, config.FieldErrors) {
	errs := config.FieldErrors{}
	raw := map[string]string{}
	cl := config.Caller{
		Name:           strings.TrimSpace(c.FormValue("name")),
		BusinessLine:   strings.TrimSpace(c.FormValue("business_line")),
		Tenant:         strings.TrimSpace(c.FormValue("tenant")),
		RouteGroup:     strings.TrimSpace(c.FormValue("route_group")),
		PriorityClass:  config.PriorityClass(c.FormValue("priority_class")),
		Enabled:        formBool(c, "enabled"),
		BudgetCurrency: strings.ToUpper(strings.TrimSpace(c.FormValue("budget_currency"))),
	}
	for _, t := range config.TierNames {
		l := config.TierLimit{Tier: t}
		for _, f := range callers.LimitFields {
			name := callers.LimitName(t, f.Key)
			raw[name] = c.FormValue(name)
			v := formInt64(c, name, errs)
			switch f.Key {
			case "rpm":
				l.RPM = v
			case "tpm":
				l.TPM = v
			case "daily_tokens":
				l.DailyTokens = v
			}
		}
		if l.RPM != 0 || l.TPM != 0 || l.DailyTokens != 0 {
			cl.Limits = append(cl.Limits, l)
		}
	}
	raw["monthly_budget"] = c.FormValue("monthly_budget")
	cl.MonthlyBudgetMicros = formMoney(c, "monthly_budget", errs)
	return cl, raw, merge(errs, config.ValidateCaller(cl))
}

// CallerSave creates (no id) or updates a caller.
func (h *Handler) CallerSave(c echo.Context) error {
	// postedCaller keeps the fields as typed, for the form shown again.
	type postedCaller struct {
		config.Caller
		raw map[string]string
	}
	return saving[postedCaller]{
		parse: func(c echo.Context, _ int64) (postedCaller, config.FieldErrors, error) {
			cl, raw, errs := callerFromForm(c)
			return postedCaller{cl, raw}, errs, nil
		},
		create: func(ctx context.Context, p postedCaller) (int64, error) { return h.Callers.CreateCaller(ctx, p.Caller) },
		update: func(ctx context.Context, id int64, p postedCaller) error {
			return h.Callers.UpdateCaller(ctx, id, p.Caller)
		},
		invalid: func(c echo.Context, id int64, p postedCaller, errs config.FieldErrors) error {
			f, err := h.callerForm(c, id, p.Caller)
			if err != nil {
				return err
			}
			f.Raw, f.Errors = p.raw, errs
			return httpx.Render(c, http.StatusUnprocessableEntity, callers.FormPage(h.page(c, "Caller", "callers"), f), callers.FormBody(f))
		},
		done: func(id int64, p postedCaller, _ bool) (string, string) {
			return "Caller " + p.Name + " saved. Create an API key below if it needs one, then publish to make the change live.", "/callers/" + strconv.FormatInt(id, 10)
		},
	}.run(h, c)
}

// CallerDelete deletes a caller; its keys stop working at once.
func (h *Handler) CallerDelete(c echo.Context) error {
	return deleting{
		del: func(ctx context.Context, id int64) error {
			if err := h.Callers.DeleteCaller(ctx, id); err != nil {
				return err
			}
			h.Log.Info("caller deleted", "caller_id", id, "by", httpx.CurrentPrincipal(c).Name)
			return nil
		},
		shown:   func(id int64) string { return "/callers/" + strconv.FormatInt(id, 10) },
		deleted: "Caller deleted; its API keys no longer work. Publish to remove it from the live version.",
		list:    "/callers",
	}.run(h, c)
}
