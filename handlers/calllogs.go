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
	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/store/calllog"
	"switchyard/views/components"
	"switchyard/views/pages/calllogs"
)

// CallLogReader is what the console reads of the call logs: the search and
// one request's detail, the dashboard's series and costs, the traffic
// shapes the impact preview replays, and the usage per caller and tenant.
// The assembly hands it calllog.Reader over the database; handlers never
// hold the database themselves.
type CallLogReader interface {
	Search(ctx context.Context, f calllog.Filter) (calllog.Page, error)
	Get(ctx context.Context, requestID string, at time.Time) (calllog.Record, error)
	Costs(ctx context.Context, from, to time.Time) ([]calllog.CostRow, error)
	Series(ctx context.Context, q calllog.SeriesQuery) ([]calllog.Point, error)
	QueueSeries(ctx context.Context, from, to time.Time, step time.Duration) ([]calllog.QueuePoint, error)
	OutcomeSeries(ctx context.Context, q calllog.OutcomeQuery) ([]calllog.OutcomePoint, error)
	LadderSeries(ctx context.Context, q calllog.LadderQuery) ([]calllog.LadderPoint, error)
	Shapes(ctx context.Context, from, to time.Time) (shapes []routing.TrafficShape, truncated bool, err error)
	// Usage is a caller's or a tenant's callers' month, days and last hour.
	Usage(ctx context.Context, q calllog.UsageQuery) (calllog.UsageSummary, error)
}

// CallLogsSearch shows the call-log search; an htmx request gets only the
// results fragment. Input that cannot be read (control characters, invalid
// UTF-8, absurd lengths, times out of range, a mangled cursor) is answered
// 400, a readable filter that makes no sense (an unknown status, from after
// to) 422; both with the message in the results, never a 500.
func (h *Handler) CallLogsSearch(c echo.Context) error {
	ctx := c.Request().Context()
	f, cf, ferr := callLogFilter(c, time.Now())
	res := calllogs.Results{Filter: f}
	status := http.StatusOK
	if ferr != nil {
		res.Err, status = ferr.Error(), http.StatusUnprocessableEntity
		var bad badInput
		if errors.As(ferr, &bad) {
			status = http.StatusBadRequest
		}
	} else {
		res.Window = describeWindow(cf)
		page, err := h.CallLogs.Search(ctx, cf)
		var refused *calllog.FilterError
		switch {
		case errors.As(err, &refused):
			// What the store refuses is input it cannot read.
			res.Err, status = refused.Reason, http.StatusBadRequest
		case err != nil:
			return err
		default:
			res.Rows, res.Next = page.Rows, page.Next
		}
	}
	if httpx.IsPartial(c) {
		return httpx.Render(c, status, calllogs.ResultsTable(res), nil)
	}
	p := calllogs.SearchPage{Page: h.page(c, "Call logs", "calllogs"), Filter: f, Choices: h.callLogChoices(c), Results: res}
	return httpx.Render(c, status, calllogs.Search(p), nil)
}

// badInput is query input that cannot be read at all (answered 400), as
// opposed to a readable filter that makes no sense (422).
type badInput struct{ msg string }

func (b badInput) Error() string { return b.msg }

// callLogFilter reads the search parameters. The form's strings are kept
// as typed; the calllog.Filter is what runs. A preset range is pinned to
// the anchor (set on pagination links) so later pages see the same window.
func callLogFilter(c echo.Context, now time.Time) (calllogs.Filter, calllog.Filter, error) {
	f := readCallLogForm(c)
	if err := checkCallLogText(&f); err != nil {
		return f, calllog.Filter{}, err
	}
	if f.Range == "" {
		f.Range = calllogs.DefaultRange
		if f.From != "" || f.To != "" {
			f.Range = "custom"
		}
	}
	cf := calllog.Filter{Tier: f.Tier, Provider: f.Provider, Key: f.Key,
		Status: f.Status, ErrorClass: f.ErrorClass, RequestIDPart: f.RequestID, Cursor: f.Cursor, Endpoint: f.Endpoint, DroppedField: f.DroppedField,
		ErrorCode: f.ErrorCode, PresentedKey: f.CallerKey}
	cf.Caller, cf.CallerPart = nameFilter(f.Caller)
	cf.LogicModel, cf.LogicModelPart = nameFilter(f.LogicModel)
	if f.Deployment != "" {
		id, err := strconv.ParseInt(f.Deployment, 10, 64)
		if err != nil || id <= 0 {
			f.Deployment = ""
			return f, calllog.Filter{}, badInput{"deployment must be a deployment id (a positive number)"}
		}
		cf.Deployment = id
	}
	if f.HTTPStatus != "" {
		n, err := strconv.Atoi(f.HTTPStatus)
		if err != nil || !calllog.ValidHTTPStatus(n) {
			return f, cf, errors.New("HTTP status must be a number from 100 to 599, e.g. 503")
		}
		cf.HTTPStatus = n
	}
	if f.ErrorCode != "" && !validCode(f.ErrorCode) {
		return f, cf, errors.New("error code must be one code of lower-case letters, digits and underscores, e.g. no_available_model")
	}
	if f.Status != "" && !calllog.ValidStatus(f.Status) {
		return f, cf, errors.New("status must be ok, upstream_error, rejected, client_cancelled or interrupted")
	}
	if f.RequestID != "" {
		return f, cf, nil // a request id is exact: search all time
	}
	err := callLogWindow(&f, &cf, now)
	return f, cf, err
}

// readCallLogForm reads the search parameters as typed, trimmed.
func readCallLogForm(c echo.Context) calllogs.Filter {
	q := func(k string) string { return strings.TrimSpace(c.QueryParam(k)) }
	return calllogs.Filter{
		Range: q("range"), From: q("from"), To: q("to"), Anchor: q("anchor"),
		Caller: q("caller"), Tier: q("tier"), LogicModel: q("logic_model"), Provider: q("provider"),
		Status: q("status"), ErrorClass: q("error_class"), RequestID: q("request_id"), Cursor: q("cursor"),
		Endpoint: q("endpoint"), Deployment: q("deployment"), Key: q("key"), DroppedField: q("dropped_field"),
		HTTPStatus: q("http_status"), ErrorCode: q("error_code"), CallerKey: q("caller_key"),
		Tail: q("tail") == "1",
	}
}

// checkCallLogText rejects a field that is not plain text of bounded length,
// or a damaged page cursor. The offending value is cleared so it is not
// echoed back into the form.
func checkCallLogText(f *calllogs.Filter) error {
	for _, v := range []struct {
		name string
		v    *string
	}{
		{"range", &f.Range}, {"from", &f.From}, {"to", &f.To}, {"anchor", &f.Anchor}, {"caller", &f.Caller},
		{"tier", &f.Tier}, {"logic model", &f.LogicModel}, {"provider", &f.Provider}, {"status", &f.Status},
		{"error class", &f.ErrorClass}, {"request id", &f.RequestID}, {"front door", &f.Endpoint},
		{"deployment", &f.Deployment}, {"key", &f.Key}, {"dropped field", &f.DroppedField},
		{"HTTP status", &f.HTTPStatus}, {"error code", &f.ErrorCode}, {"caller key", &f.CallerKey},
	} {
		if !calllog.ValidText(*v.v) {
			*v.v = "" // not echoed into the form: it is what could not be read
			if f.Range == "" {
				f.Range = calllogs.DefaultRange
			}
			return badInput{v.name + " must be at most " + strconv.Itoa(calllog.MaxTextLen) + " characters of text, without control characters"}
		}
	}
	if !validCursor(f.Cursor) {
		f.Cursor = ""
		return badInput{"the page cursor is damaged: start the search again"}
	}
	return nil
}

// callLogWindow sets the time window of cf from the form's range: a preset
// range ends at the anchor (pinned on the first page), a custom range at
// the typed from/to.
func callLogWindow(f *calllogs.Filter, cf *calllog.Filter, now time.Time) error {
	if d, ok := calllogs.RangeDuration(f.Range); ok {
		end := now
		if f.Anchor != "" {
			sec, err := strconv.ParseInt(f.Anchor, 10, 64)
			if err != nil || sec <= 0 {
				return badInput{"anchor must be a unix time in seconds"}
			}
			end = time.Unix(sec, 0).UTC()
			if !calllog.ValidTime(end) || !calllog.ValidTime(end.Add(-d)) {
				return badInput{"anchor must be a unix time in seconds between the years 1 and 9999"}
			}
		} else if f.Cursor == "" {
			f.Anchor = strconv.FormatInt(now.Unix()+1, 10)
			end = time.Unix(now.Unix()+1, 0)
		}
		cf.From, cf.To = end.Add(-d), end
		return nil
	}
	if f.Range != "custom" {
		return errors.New("range must be 15m, 1h, 24h, 7d or custom")
	}
	var err error
	if cf.From, err = parseFormTime(f.From); err != nil {
		return badInput{"from: " + err.Error()}
	}
	if cf.To, err = parseFormTime(f.To); err != nil {
		return badInput{"to: " + err.Error()}
	}
	if !cf.From.IsZero() && !cf.To.IsZero() && !cf.From.Before(cf.To) {
		return errors.New("from must be before to")
	}
	return nil
}

// validCode: an error code is snake_case text (no_available_model).
func validCode(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; !('a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '_') {
			return false
		}
	}
	return s != ""
}

// nameFilter reads a caller or logic-model field: part of a name, or a
// whole name in double quotes.
func nameFilter(s string) (exact, part string) {
	if len(s) >= 2 && strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`) {
		return strings.TrimSpace(s[1 : len(s)-1]), ""
	}
	return "", s
}

// validCursor: a page cursor is base64url text of bounded length.
func validCursor(c string) bool {
	if len(c) > 4*calllog.MaxTextLen {
		return false
	}
	for i := 0; i < len(c); i++ {
		b := c[i]
		if !('A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '_') {
			return false
		}
	}
	return true
}

// parseFormTime reads a datetime-local value (UTC) or RFC 3339; blank is zero.
func parseFormTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{calllogs.TimeLayout, "2006-01-02T15:04:05", time.RFC3339Nano, time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			if t = t.UTC(); !calllog.ValidTime(t) {
				return time.Time{}, errors.New("must be between the years 1 and 9999")
			}
			return t, nil
		}
	}
	return time.Time{}, errors.New("use YYYY-MM-DDTHH:MM (UTC)")
}

func describeWindow(f calllog.Filter) string {
	const layout = "2006-01-02 15:04"
	switch {
	case f.RequestID != "":
		return "Request id " + f.RequestID + ", any time."
	case f.RequestIDPart != "":
		return "Request ids that are, begin with or end with " + f.RequestIDPart + ", any time."
	case f.From.IsZero() && f.To.IsZero():
		return "Any time."
	case f.From.IsZero():
		return "Before " + f.To.UTC().Format(layout) + " UTC."
	case f.To.IsZero():
		return "Since " + f.From.UTC().Format(layout) + " UTC."
	}
	return "From " + f.From.UTC().Format(layout) + " to " + f.To.UTC().Format(layout) + " UTC."
}

// callLogChoices suggests callers, logic models and providers: the draft's
// and the live version's (a deleted caller's logs are still searchable by
// typing its name).
func (h *Handler) callLogChoices(c echo.Context) calllogs.Choices {
	var ch calllogs.Choices
	deployments := map[int64]string{}
	addDeployment := func(id int64, label string) {
		if _, ok := deployments[id]; !ok && id > 0 {
			deployments[id] = label
		}
	}
	add := func(list *[]string, v string) {
		if v != "" && !slices.Contains(*list, v) {
			*list = append(*list, v)
		}
	}
	if snap, _, err := h.Drafts.Draft(c.Request().Context()); err == nil {
		for _, x := range snap.Callers {
			add(&ch.Callers, x.Name)
		}
		for _, m := range snap.LogicModels {
			add(&ch.LogicModels, m.Code)
		}
		for _, p := range snap.Providers {
			add(&ch.Providers, p.Name)
			for _, k := range p.Keys {
				add(&ch.Keys, k.Fingerprint)
			}
		}
		for _, m := range snap.LogicModels {
			for _, d := range m.Deployments {
				addDeployment(d.ID, m.Code+" on "+d.Provider+" ("+d.UpstreamModel+")")
			}
		}
	}
	if h.Ops != nil {
		if rt := h.Ops.Runtime(); rt != nil {
			for _, x := range rt.Callers {
				add(&ch.Callers, x.Name)
			}
			for code := range rt.Models {
				add(&ch.LogicModels, code)
			}
			for name := range rt.Providers {
				add(&ch.Providers, name)
			}
			for id, d := range rt.Deployments {
				addDeployment(id, d.Label())
			}
		}
	}
	slices.Sort(ch.Callers)
	slices.Sort(ch.LogicModels)
	slices.Sort(ch.Providers)
	slices.Sort(ch.Keys)
	for id, label := range deployments {
		ch.Deployments = append(ch.Deployments, components.Option{Value: strconv.FormatInt(id, 10), Label: label + " · #" + strconv.FormatInt(id, 10)})
	}
	slices.SortFunc(ch.Deployments, func(a, b components.Option) int { return strings.Compare(a.Label, b.Label) })
	return ch
}

// CallLogShow shows one call with its attempt trail in plain words.
func (h *Handler) CallLogShow(c echo.Context) error {
	id := strings.TrimSpace(c.Param("request_id"))
	if id == "" || !calllog.ValidText(id) {
		return echo.NewHTTPError(http.StatusNotFound, "no such call")
	}
	// at only narrows the lookup: an unusable one is ignored.
	var at time.Time
	if v := c.QueryParam("at"); v != "" {
		if us, err := strconv.ParseInt(v, 10, 64); err == nil && us > 0 {
			if t := time.UnixMicro(us); calllog.ValidTime(t) {
				at = t
			}
		}
	}
	rec, err := h.CallLogs.Get(c.Request().Context(), id, at)
	if errors.Is(err, calllog.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "No call log with request id "+id+". Rows are written a moment after a request ends: if it just ran, reload in a second.")
	}
	if err != nil {
		return err
	}
	p := calllogs.DetailPage{Page: h.page(c, "Call "+id, "calllogs"), Rec: rec, Back: calllogs.Back(c.QueryParam("back"))}
	if rec.ModelAlias != "" {
		p.Alias = h.aliasTarget(c.Request().Context(), rec)
	}
	if tr, ok := calllogs.ParseTrail(rec.Attempts); ok {
		p.Steps = calllogs.Steps(tr)
		p.Degraded = calllogs.DegradedWords(tr)
		if rec.Fallback == "" {
			rec.Fallback = tr.Fallback
			p.Rec.Fallback = tr.Fallback
		}
	}
	if rec.Status == calllog.StatusRejected || (rec.Status != calllog.StatusOK && countRuns(p.Steps) == 0) {
		p.Rejection = calllogs.ExplainRejection(rec.ErrorCode, string(rec.ErrorClass), rec.Caller, string(rec.Tier))
		if countRuns(p.Steps) == 0 {
			// The concrete skips lead; the generic words would only repeat them.
			if p.Skipped = calllogs.Skips(p.Steps); len(p.Skipped) > 0 {
				p.Rejection = ""
			}
		}
		if w := calllogs.ExplainLimit(rec); w != "" {
			p.Rejection = w
		}
	}
	return httpx.Render(c, http.StatusOK, calllogs.Detail(p), nil)
}

// aliasTarget is what the alias a call resolved through named in the
// version that served it: read from the live version when that is the
// one, else from the stored version's text; zero when neither has it.
func (h *Handler) aliasTarget(ctx context.Context, rec calllog.Record) calllogs.AliasTarget {
	if rec.ConfigVersion == nil {
		return calllogs.AliasTarget{}
	}
	var snap *config.Snapshot
	if h.Ops != nil {
		if rt := h.Ops.Runtime(); rt != nil && rt.Version == *rec.ConfigVersion {
			snap = rt.Snapshot
		}
	}
	if snap == nil {
		v, err := h.Versions.Version(ctx, *rec.ConfigVersion)
		if err != nil {
			return calllogs.AliasTarget{}
		}
		s, err := config.Decode([]byte(v.Snapshot))
		if err != nil {
			return calllogs.AliasTarget{}
		}
		snap = &s
	}
	for _, g := range snap.RouteGroups {
		for _, a := range g.Aliases {
			if g.Name == rec.RouteGroup && a.Pattern == rec.ModelAlias {
				return calllogs.AliasTarget{Tier: string(a.Tier), LogicModel: a.LogicModel}
			}
		}
	}
	return calllogs.AliasTarget{}
}

func countRuns(steps []calllogs.Step) int {
	n := 0
	for _, s := range steps {
		if s.Outcome != "skipped" {
			n++
		}
	}
	return n
}
