package handlers

import (
	"cmp"
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
	"switchyard/store/calllog"
	"switchyard/store/rows"
	"switchyard/views/pages/usage"
)

// Usage per caller and per tenant: spend this month against the budget
// with its projection, tokens per day by logic model, requests per minute
// against the RPM limits, and the month's top logic models. The console's
// Usage page draws it; GET /admin/api/usage answers it as JSON.

// usageSubject names whose usage: a caller, or a tenant (its callers).
type usageSubject struct {
	Kind string // "caller" or "tenant"
	Name string
}

const (
	usageCaller = "caller"
	usageTenant = "tenant"
)

// usageReport is one subject's usage. Money is in micro-units of its
// currency; times are UTC, days the limiter's local dates.
type usageReport struct {
	Kind    string   `json:"kind"`
	Name    string   `json:"name"`
	Callers []string `json:"callers"`
	// ConfigVersion is the live version the budgets and limits come from;
	// 0 before the first publish (the draft's are used).
	ConfigVersion int64        `json:"config_version"`
	Now           time.Time    `json:"now"`
	TimeZone      string       `json:"time_zone"`
	MonthStart    time.Time    `json:"month_start"`
	MonthEnd      time.Time    `json:"month_end"`
	Spend         []usageSpend `json:"spend"`
	// CallersWithoutBudget counts the tenant's callers with no monthly
	// budget, whose spend nothing bounds (always 0 or 1 for a caller).
	CallersWithoutBudget int           `json:"callers_without_budget"`
	TokensPerDay         []usageDay    `json:"tokens_per_day"`
	RequestsPerMinute    []usageMinute `json:"requests_per_minute"`
	RPMLimits            []usageLimit  `json:"rpm_limits"`
	TopLogicModels       []usageModel  `json:"top_logic_models"`
}

// usageModel is one logic model's month; cost by currency, in micro-units.
type usageModel struct {
	LogicModel       string           `json:"logic_model"`
	Requests         int64            `json:"requests"`
	Errors           int64            `json:"errors"`
	PromptTokens     int64            `json:"prompt_tokens"`
	CompletionTokens int64            `json:"completion_tokens"`
	CostMicros       map[string]int64 `json:"cost_micros"`
}

// usageSpend is the month in one currency: spent so far, the budget (0:
// none) and the projection at the month-to-date rate (calllog.Projection).
type usageSpend struct {
	Currency          string `json:"currency"`
	MonthToDateMicros int64  `json:"month_to_date_micros"`
	BudgetMicros      int64  `json:"budget_micros"`
	ProjectedMicros   int64  `json:"projected_micros"`
}

type usageDay struct {
	Day              string `json:"day"` // YYYY-MM-DD in TimeZone
	LogicModel       string `json:"logic_model"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
}

type usageMinute struct {
	Minute   time.Time `json:"minute"`
	Tier     string    `json:"tier"`
	Requests int64     `json:"requests"`
	Rejected int64     `json:"rejected"`
}

// usageLimit is a tier's requests-per-minute limit: the caller's, or for a
// tenant the sum of its callers' (a tier where one of them is unlimited
// is left out).
type usageLimit struct {
	Tier string `json:"tier"`
	RPM  int64  `json:"rpm"`
}

// errNoSubject: the request names neither a caller nor a tenant, or both.
var errNoSubject = errors.New("name one caller (caller=NAME) or one tenant (tenant=NAME)")

// usageSubjectOf reads caller=NAME or tenant=NAME, or the picker's
// subject=caller:NAME / subject=tenant:NAME.
func usageSubjectOf(c echo.Context) (usageSubject, error) {
	caller, tenant := c.QueryParam("caller"), c.QueryParam("tenant")
	if s := c.QueryParam("subject"); s != "" && caller == "" && tenant == "" {
		kind, name, _ := strings.Cut(s, ":")
		switch kind {
		case usageCaller:
			caller = name
		case usageTenant:
			tenant = name
		}
	}
	switch {
	case caller != "" && tenant == "":
		return usageSubject{Kind: usageCaller, Name: caller}, nil
	case tenant != "" && caller == "":
		return usageSubject{Kind: usageTenant, Name: tenant}, nil
	}
	return usageSubject{}, errNoSubject
}

// usageConfig is the configuration whose budgets and limits apply: the
// live version's, or the draft's before the first publish.
func (h *Handler) usageConfig(ctx context.Context) (config.Snapshot, int64, error) {
	v, err := h.Callers.LatestVersion(ctx)
	if errors.Is(err, rows.ErrNotFound) {
		snap, _, err := h.Callers.Draft(ctx)
		return snap, 0, err
	}
	if err != nil {
		return config.Snapshot{}, 0, err
	}
	snap, err := config.Decode([]byte(v.Snapshot))
	return snap, v.Number, err
}

// usageMembers are the subject's callers; ok is false for an unknown
// caller or tenant.
func usageMembers(snap config.Snapshot, s usageSubject) ([]config.Caller, bool) {
	var out []config.Caller
	for _, cl := range snap.Callers {
		if (s.Kind == usageCaller && cl.Name == s.Name) || (s.Kind == usageTenant && cl.Tenant == s.Name) {
			out = append(out, cl)
		}
	}
	if s.Kind == usageTenant {
		return out, slices.ContainsFunc(snap.Tenants, func(t config.Tenant) bool { return t.Name == s.Name })
	}
	return out, len(out) == 1
}

func (h *Handler) usageLocation() *time.Location {
	if h.Location != nil {
		return h.Location
	}
	return time.UTC
}

// usageReportOf reads a subject's usage at now; ok is false when the
// subject is unknown.
func (h *Handler) usageReportOf(ctx context.Context, snap config.Snapshot, version int64, s usageSubject, now time.Time) (usageReport, bool, error) {
	members, ok := usageMembers(snap, s)
	if !ok {
		return usageReport{}, false, nil
	}
	loc := h.usageLocation()
	r := usageReport{Kind: s.Kind, Name: s.Name, Callers: []string{}, ConfigVersion: version, Now: now.UTC(), TimeZone: loc.String()}
	for _, cl := range members {
		r.Callers = append(r.Callers, cl.Name)
	}
	u, err := h.CallLogs.Usage(ctx, calllog.UsageQuery{Callers: r.Callers, Now: now, Location: loc, Days: usageDays})
	if err != nil {
		return usageReport{}, false, err
	}
	r.MonthStart, r.MonthEnd = u.MonthStart.UTC(), u.MonthEnd.UTC()
	r.Spend, r.CallersWithoutBudget = usageSpendOf(members, u, now)
	r.RPMLimits = usageLimitsOf(members)
	r.TopLogicModels = []usageModel{}
	for _, m := range u.Models {
		r.TopLogicModels = append(r.TopLogicModels, usageModel{LogicModel: m.LogicModel, Requests: m.Requests, Errors: m.Errors,
			PromptTokens: m.PromptTokens, CompletionTokens: m.CompletionTokens, CostMicros: m.CostMicros})
	}
	r.TokensPerDay = []usageDay{}
	for _, d := range u.Days {
		r.TokensPerDay = append(r.TokensPerDay, usageDay{Day: d.Day.In(loc).Format(time.DateOnly), LogicModel: d.LogicModel,
			PromptTokens: d.PromptTokens, CompletionTokens: d.CompletionTokens})
	}
	r.RequestsPerMinute = []usageMinute{}
	for _, m := range u.Minutes {
		r.RequestsPerMinute = append(r.RequestsPerMinute, usageMinute{Minute: m.Minute.UTC(), Tier: m.Tier, Requests: m.Requests, Rejected: m.Rejected})
	}
	return r, true, nil
}

// usageSpendOf sets the month's spend beside the budgets: one entry per
// currency spent or budgeted, the budgets' currencies first.
func usageSpendOf(members []config.Caller, u calllog.UsageSummary, now time.Time) ([]usageSpend, int) {
	budgets, without := map[string]int64{}, 0
	for _, cl := range members {
		if cl.MonthlyBudgetMicros <= 0 {
			without++
			continue
		}
		cur := cmp.Or(cl.BudgetCurrency, "USD")
		budgets[cur] += int64(cl.MonthlyBudgetMicros)
	}
	curs := make([]string, 0, len(budgets)+len(u.MonthSpend))
	for cur := range budgets {
		curs = append(curs, cur)
	}
	for cur := range u.MonthSpend {
		if _, ok := budgets[cur]; !ok {
			curs = append(curs, cur)
		}
	}
	slices.SortFunc(curs, func(a, b string) int {
		_, ba := budgets[a]
		_, bb := budgets[b]
		if ba != bb {
			if ba {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	out := make([]usageSpend, 0, len(curs))
	for _, cur := range curs {
		spent := u.MonthSpend[cur]
		out = append(out, usageSpend{Currency: cur, MonthToDateMicros: spent, BudgetMicros: budgets[cur],
			ProjectedMicros: calllog.Projection(spent, u.MonthStart, u.MonthEnd, now)})
	}
	return out, without
}

// usageLimitsOf is each tier's RPM limit of the members, summed.
func usageLimitsOf(members []config.Caller) []usageLimit {
	out := []usageLimit{}
	if len(members) == 0 {
		return out
	}
	for _, tier := range []config.TierName{"fast", "standard", "deep"} {
		var sum int64
		for _, cl := range members {
			rpm := cl.Limit(tier).RPM
			if rpm <= 0 {
				sum = 0
				break
			}
			sum += rpm
		}
		if sum > 0 {
			out = append(out, usageLimit{Tier: string(tier), RPM: sum})
		}
	}
	return out
}

// APIUsage answers GET /admin/api/usage?caller=NAME or ?tenant=NAME: 400
// without exactly one of them, 404 for an unknown name.
func (h *Handler) APIUsage(c echo.Context) error {
	s, err := usageSubjectOf(c)
	if err != nil {
		return apiFail(c, &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: err.Error()})
	}
	ctx := c.Request().Context()
	snap, version, err := h.usageConfig(ctx)
	if err != nil {
		return err
	}
	r, ok, err := h.usageReportOf(ctx, snap, version, s, time.Now())
	if err != nil {
		return err
	}
	if !ok {
		return apiFail(c, &apiError{status: http.StatusNotFound, code: "not_found", msg: "there is no " + s.Kind + " " + strconv.Quote(s.Name)})
	}
	return c.JSON(http.StatusOK, r)
}

// UsagePage shows the Usage page: the picker and, for the caller or tenant
// picked, its usage; 404 for an unknown one. An htmx request gets the body
// below the picker.
func (h *Handler) UsagePage(c echo.Context) error {
	ctx := c.Request().Context()
	snap, version, err := h.usageConfig(ctx)
	if err != nil {
		return err
	}
	p := usage.Page{}
	for _, cl := range snap.Callers {
		p.Callers = append(p.Callers, cl.Name)
	}
	for _, t := range snap.Tenants {
		p.Tenants = append(p.Tenants, t.Name)
	}
	slices.Sort(p.Callers)
	slices.Sort(p.Tenants)
	status := http.StatusOK
	if s, err := usageSubjectOf(c); err == nil {
		p.Kind, p.Name = s.Kind, s.Name
		r, ok, err := h.usageReportOf(ctx, snap, version, s, time.Now())
		switch {
		case err != nil:
			return err
		case !ok:
			p.NotFound, status = true, http.StatusNotFound
		default:
			p.Report = usageView(r, h.usageLocation())
		}
	}
	if httpx.IsPartial(c) {
		return httpx.Render(c, status, usage.Body(p), nil)
	}
	p.Page = h.page(c, "Usage", "usage")
	return httpx.Render(c, status, usage.View(p), nil)
}

// usageDays is how many days of tokens the page and the API show.
const usageDays = 30

// usageView is the report as the page's view model.
func usageView(r usageReport, loc *time.Location) usage.Report {
	v := usage.Report{Members: r.Callers, ConfigVersion: r.ConfigVersion, Now: r.Now, TimeZone: r.TimeZone,
		MonthStart: r.MonthStart, MonthEnd: r.MonthEnd, CallersWithoutBudget: r.CallersWithoutBudget, NumDays: usageDays}
	y, m, d := r.Now.In(loc).Date()
	v.DaysFrom = time.Date(y, m, d-usageDays+1, 0, 0, 0, 0, loc)
	v.MinutesFrom = r.Now.Truncate(time.Minute).Add(-59 * time.Minute)
	for _, s := range r.Spend {
		v.Spend = append(v.Spend, usage.Spend{Currency: s.Currency, SpentMicros: s.MonthToDateMicros, BudgetMicros: s.BudgetMicros, ProjectedMicros: s.ProjectedMicros})
	}
	for _, d := range r.TokensPerDay {
		day, err := time.ParseInLocation(time.DateOnly, d.Day, loc)
		if err == nil {
			v.Days = append(v.Days, usage.DayTokens{Day: day, LogicModel: d.LogicModel, PromptTokens: d.PromptTokens, CompletionTokens: d.CompletionTokens})
		}
	}
	for _, mi := range r.RequestsPerMinute {
		v.Minutes = append(v.Minutes, usage.Minute{Minute: mi.Minute, Tier: mi.Tier, Requests: mi.Requests, Rejected: mi.Rejected})
	}
	for _, l := range r.RPMLimits {
		v.RPMLimits = append(v.RPMLimits, usage.Limit{Tier: l.Tier, RPM: l.RPM})
	}
	for _, mo := range r.TopLogicModels {
		v.Models = append(v.Models, usage.Model{LogicModel: mo.LogicModel, Requests: mo.Requests, Errors: mo.Errors,
			PromptTokens: mo.PromptTokens, CompletionTokens: mo.CompletionTokens, CostMicros: mo.CostMicros})
	}
	return v
}
