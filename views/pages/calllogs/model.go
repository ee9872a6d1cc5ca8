// Package calllogs renders the Call logs pages: the search with its
// results fragment, and one call's detail with its attempt trail. The trail
// timeline and the plain-words explanations are shared with Test route.
package calllogs

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"switchyard/routing"
	"switchyard/routing/record"
	"switchyard/views/components"
	"switchyard/views/layout"
)

// Ranges are the time-range presets of the search, in display order.
var Ranges = []components.Option{
	{Value: "15m", Label: "Last 15 minutes"},
	{Value: "1h", Label: "Last hour"},
	{Value: "24h", Label: "Last 24 hours"},
	{Value: "7d", Label: "Last 7 days"},
	{Value: "custom", Label: "Custom (UTC)"},
}

// RangeDuration returns a preset's length; ok is false for custom or unknown.
func RangeDuration(r string) (time.Duration, bool) {
	switch r {
	case "15m":
		return 15 * time.Minute, true
	case "1h":
		return time.Hour, true
	case "24h":
		return 24 * time.Hour, true
	case "7d":
		return 7 * 24 * time.Hour, true
	}
	return 0, false
}

// DefaultRange is the preset of a search without one.
const DefaultRange = "24h"

// TimeLayout is the datetime-local format of the custom range (UTC).
const TimeLayout = "2006-01-02T15:04"

// Filter is the search form as the user filled it in (strings, so an
// invalid value is shown back as typed).
type Filter struct {
	Range      string
	From, To   string // custom range, TimeLayout, UTC
	Anchor     string // unix seconds a preset is relative to while paging
	Caller     string
	Tier       string
	LogicModel string
	Provider   string
	Deployment string // a deployment id
	Key        string // a key fingerprint
	Status     string
	ErrorClass string
	RequestID  string
	Cursor     string
	// Endpoint is the front door (chat_completions, messages, …).
	Endpoint string
	// DroppedField finds calls whose vendor did not get that request field.
	DroppedField string
	// HTTPStatus is the HTTP status answered (e.g. 503), as typed.
	HTTPStatus string
	// ErrorCode is the error code the caller got (e.g. no_available_model).
	ErrorCode string
	// CallerKey is the fingerprint of the caller key a request presented.
	CallerKey string
	// Tail: the first page refreshes itself every TailSeconds (live tail).
	Tail bool
}

// TailSeconds is how often a live tail polls for new rows.
const TailSeconds = 3

// ExportCap is the most rows one CSV export holds (newest first).
const ExportCap = 10000

// ExportURL downloads this search as CSV (the whole search, not a page).
func (f Filter) ExportURL() string {
	v := f.Query()
	v.Del("tail")
	return "/call-logs/export.csv?" + v.Encode()
}

// TailURL is what a live tail polls: the first page, with a preset range
// sliding to the time of each poll.
func (f Filter) TailURL() string {
	f.Anchor = ""
	return f.URL("")
}

// Tailing reports whether these results refresh themselves: a live tail
// shows the newest rows, so not on an older page.
func (r Results) Tailing() bool { return r.Filter.Tail && r.Filter.Cursor == "" && r.Err == "" }

// Query encodes the filter as URL parameters (without the cursor).
func (f Filter) Query() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("range", f.Range)
	if f.Range == "custom" {
		set("from", f.From)
		set("to", f.To)
	} else {
		set("anchor", f.Anchor)
	}
	set("caller", f.Caller)
	set("tier", f.Tier)
	set("logic_model", f.LogicModel)
	set("provider", f.Provider)
	set("deployment", f.Deployment)
	set("key", f.Key)
	set("status", f.Status)
	set("error_class", f.ErrorClass)
	set("request_id", f.RequestID)
	set("endpoint", f.Endpoint)
	set("dropped_field", f.DroppedField)
	set("http_status", f.HTTPStatus)
	set("error_code", f.ErrorCode)
	set("caller_key", f.CallerKey)
	if f.Tail {
		v.Set("tail", "1")
	}
	return v
}

// URL is the search page for this filter, optionally at a cursor.
func (f Filter) URL(cursor string) string {
	v := f.Query()
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	if len(v) == 0 {
		return "/call-logs"
	}
	return "/call-logs?" + v.Encode()
}

// Widened is the same filter over the last 7 days, for the empty state.
func (f Filter) Widened() string {
	f.Range, f.From, f.To, f.Anchor = "7d", "", "", ""
	return f.URL("")
}

// Choices fill the datalists and selects of the filter form.
type Choices struct {
	Callers     []string
	LogicModels []string
	Providers   []string
	// Deployments are the deployment select's options (value: the id).
	Deployments []components.Option
	// Keys are the key fingerprints of the providers' pools.
	Keys []string
}

// Statuses are the call statuses with their labels.
var Statuses = []components.Option{
	{Value: "", Label: "Any status"},
	{Value: string(record.StatusOK), Label: "ok"},
	{Value: string(record.StatusUpstreamError), Label: "upstream error"},
	{Value: string(record.StatusRejected), Label: "rejected by us"},
	{Value: string(record.StatusClientCancelled), Label: "client cancelled"},
	{Value: string(record.StatusInterrupted), Label: "interrupted by shutdown"},
}

// Endpoints are the front doors a call may have come through.
var Endpoints = []components.Option{
	{Value: "", Label: "Any front door"},
	{Value: "chat_completions", Label: "chat completions"},
	{Value: "messages", Label: "messages (Anthropic)"},
	{Value: "responses", Label: "responses"},
	{Value: "count_tokens", Label: "count_tokens"},
	{Value: "embeddings", Label: "embeddings"},
	{Value: "models", Label: "models"},
}

// EndpointLabel names a call's front door; rows from before front doors
// were recorded have none.
func EndpointLabel(ep string) string {
	if ep == "" {
		return "—"
	}
	for _, o := range Endpoints {
		if o.Value == ep {
			return o.Label
		}
	}
	return ep
}

// Tiers are the tier choices of the filter.
var Tiers = []components.Option{
	{Value: "", Label: "Any tier"}, {Value: "fast", Label: "fast"}, {Value: "standard", Label: "standard"}, {Value: "deep", Label: "deep"},
}

// ErrorClasses are the error classes a call log may carry: the failure
// table's classes and our own rejection reasons.
var ErrorClasses = []components.Option{
	{Value: "", Label: "Any error class"},
	{Value: "rate_limited", Label: "rate_limited"},
	{Value: "quota_exceeded", Label: "quota_exceeded"},
	{Value: "budget_exceeded", Label: "budget_exceeded"},
	{Value: "auth", Label: "auth"},
	{Value: "billing", Label: "billing"},
	{Value: "server", Label: "server"},
	{Value: "timeout", Label: "timeout"},
	{Value: "network", Label: "network"},
	{Value: "content_filter", Label: "content_filter"},
	{Value: "bad_request", Label: "bad_request"},
	{Value: "client_cancelled", Label: "client_cancelled"},
}

// SearchPage is the Call logs page.
type SearchPage struct {
	Page    layout.Page
	Filter  Filter
	Choices Choices
	Results Results
}

// Results is the results fragment (the htmx target).
type Results struct {
	Filter Filter
	Rows   []record.Call
	// Next is the cursor of the following page, "" on the last page.
	Next string
	// Window describes the searched time range.
	Window string
	// Err is a filter the search could not run, shown instead of rows.
	Err string
}

// DetailPage is one call's detail.
type DetailPage struct {
	Page  layout.Page
	Rec   record.Call
	Steps []Step
	// Rejection explains a call we answered ourselves, "" otherwise.
	Rejection string
	// Skipped are the trail's skips when no vendor answered: the concrete
	// reasons the call got no model, shown first.
	Skipped []Step
	// Degraded explains the rungs of the degradation ladder the call took.
	Degraded []string
	// Back is the search to return to.
	Back string
	// Alias is what the model alias the call resolved through named in
	// the version that served it (zero when it had none, or the version
	// is not at hand).
	Alias AliasTarget
}

// StatusBadge returns the badge kind and label of a call status.
func StatusBadge(s record.Status) (kind, text string) {
	switch s {
	case record.StatusOK:
		return "ok", "ok"
	case record.StatusUpstreamError:
		return "bad", "upstream error"
	case record.StatusRejected:
		return "warn", "rejected"
	case record.StatusClientCancelled:
		return "", "client cancelled"
	case record.StatusInterrupted:
		return "warn", "interrupted"
	}
	return "", string(s)
}

// DetailURL links a call's detail; at (the row's time) makes the lookup exact.
func DetailURL(r record.Call) string {
	return "/call-logs/" + url.PathEscape(r.RequestID) + "?at=" + strconv.FormatInt(r.At.UnixMicro(), 10)
}

// When formats a call's time (UTC).
func When(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }

// Datetime is a call's time for a <time datetime> attribute: UTC, to the
// millisecond, which static/calllogs.js renders in the operator's zone.
func Datetime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// NothingSpent reports whether a call cost nothing: no vendor was called
// (we refused it, or every candidate was skipped) and no usage or price
// was recorded. Its tokens and cost are zero, not unknown.
func NothingSpent(r record.Call) bool {
	return r.PromptTokens == nil && r.CompletionTokens == nil && r.CostMicros == nil &&
		r.Status != record.StatusOK && Summarize(r).Calls == 0
}

// ErrorCodes are the error codes a caller may get from Switchyard: the
// error code filter's suggestions (any code can be typed).
var ErrorCodes = []string{
	"invalid_api_key", "caller_disabled", "caller_not_live", "model_not_found", "invalid_request",
	"rate_limited", "quota_exceeded", "budget_exceeded", "no_available_model", "retry_budget_exhausted",
	"idempotency_conflict", "idempotency_unavailable", "content_filtered", "timeout", "client_cancelled",
	"request_timeout", "shutting_down", "model_too_long",
}

// HTTPStatuses are the HTTP status filter's suggestions.
var HTTPStatuses = []string{"200", "400", "401", "403", "404", "408", "422", "429", "499", "500", "502", "503", "504"}

// Tokens formats a token count; nil is unknown (usage not reported), which
// is not the same as 0.
func Tokens(p *int64) string {
	if p == nil {
		return "unknown"
	}
	return strconv.FormatInt(*p, 10)
}

// MS formats milliseconds; nil is unknown.
func MS(p *int) string {
	if p == nil {
		return "—"
	}
	return strconv.Itoa(*p) + " ms"
}

func i64p(p *int64) string {
	if p == nil {
		return "—"
	}
	return strconv.FormatInt(*p, 10)
}

// Skips are the skip steps of a trail, in order.
func Skips(steps []Step) []Step {
	var out []Step
	for _, s := range steps {
		if s.Outcome == "skipped" {
			out = append(out, s)
		}
	}
	return out
}

// SkippedLead introduces the skip reasons of a call no vendor answered.
func SkippedLead(rec record.Call) string {
	tier := "the requested model"
	if rec.Tier != "" {
		tier = "tier " + string(rec.Tier)
	}
	s := "No vendor was called: every candidate of " + tier + " was skipped"
	if rec.HTTPStatus != 0 {
		s += " (the caller got HTTP " + strconv.Itoa(rec.HTTPStatus) + ")"
	}
	return s + ". Why:"
}

// attemptCount counts the calls made (not skips).
func attemptCount(steps []Step) int {
	n := 0
	for _, s := range steps {
		if s.Outcome != "skipped" {
			n++
		}
	}
	return n
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func outcomeKind(cssKind string) string {
	switch cssKind {
	case "ok":
		return "ok"
	case "bad":
		return "bad"
	}
	return ""
}

func outcomeText(s Step) string {
	switch {
	case s.Outcome == "skipped" && s.Phase == "plan":
		return "left out of the plan"
	case s.Outcome == "skipped":
		return "skipped"
	case s.Outcome == "ok":
		return "ok"
	}
	return "failed"
}

// Fresh is the first page of this filter, with a preset range relative to
// now again.
func (f Filter) Fresh() string {
	f.Anchor = ""
	return f.URL("")
}

// ShortID shortens a request id for the table (the full id is the link's
// title and the row's test id): a UUIDv7's tail is its random part.
func ShortID(id string) string {
	if len(id) <= 14 {
		return id
	}
	return "…" + id[len(id)-12:]
}

// Tried is what the list shows of a call's trail: the calls made to
// vendors and whether the call failed over (tried another deployment
// after a failure), with the path for the marker's title, e.g.
// "vendor-x auth → vendor-y ok".
type Tried struct {
	Calls    int
	Failover bool
	Path     string
}

// Summarize reads the attempt trail stored on a call log.
func Summarize(r record.Call) Tried {
	tr, ok := ParseTrail(r.Attempts)
	if !ok {
		return Tried{}
	}
	var t Tried
	var first *routing.Attempt
	var path []string
	for i := range tr.Attempts {
		a := &tr.Attempts[i]
		if a.Outcome != "ok" && a.Outcome != "failed" {
			continue
		}
		t.Calls++
		if first == nil {
			first = a
		} else if a.DeploymentID != first.DeploymentID || a.Deployment != first.Deployment {
			t.Failover = true
		}
		step := a.Provider
		if step == "" {
			step = a.Model
		}
		if a.Outcome == "ok" {
			step += " ok"
		} else if a.Class != "" {
			step += " " + string(a.Class)
		} else {
			step += " failed"
		}
		path = append(path, step)
	}
	t.Path = strings.Join(path, " → ")
	return t
}

// backKeys are the search parameters a detail page's "← Call logs" keeps.
var backKeys = []string{"range", "from", "to", "anchor", "caller", "tier", "logic_model", "provider", "deployment", "key",
	"status", "error_class", "request_id", "endpoint", "dropped_field", "cursor",
	"http_status", "error_code", "caller_key", "tail"}

// Back is the search a detail page returns to, from the back parameter its
// link carried (the search's query): only the search's own parameters are
// kept, so it is always a Call logs URL.
func Back(query string) string {
	q, err := url.ParseQuery(query)
	if err != nil || len(q) == 0 {
		return "/call-logs"
	}
	kept := url.Values{}
	for _, k := range backKeys {
		if v := q.Get(k); v != "" {
			kept.Set(k, v)
		}
	}
	if len(kept) == 0 {
		return "/call-logs"
	}
	return "/call-logs?" + kept.Encode()
}

// backQuery is the search (with its page) a row's detail link returns to.
func (r Results) backQuery() string {
	v := r.Filter.Query()
	if r.Filter.Cursor != "" {
		v.Set("cursor", r.Filter.Cursor)
	}
	return v.Encode()
}

// RowURL links a call's detail from the results, carrying the search
// (filters and page) for the way back.
func (r Results) RowURL(c record.Call) string {
	u := DetailURL(c)
	if q := r.backQuery(); q != "" {
		u += "&back=" + url.QueryEscape(q)
	}
	return u
}

func attemptsLabel(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

// deploymentOptions are the deployment choices, with the searched one kept
// when the configuration no longer has it.
func deploymentOptions(ch Choices, selected string) []components.Option {
	if selected == "" {
		return ch.Deployments
	}
	for _, o := range ch.Deployments {
		if o.Value == selected {
			return ch.Deployments
		}
	}
	return append(slices.Clip(ch.Deployments), components.Option{Value: selected, Label: "deployment " + selected})
}

// QueueWait says how long a call waited in its priority class's queue for
// capacity: "did not queue" when it never waited.
func QueueWait(ms *int) string {
	if ms == nil {
		return "did not queue"
	}
	return strconv.Itoa(*ms) + " ms"
}

// AliasTarget is what a model alias named: a tier or a logic model.
type AliasTarget struct {
	Tier       string
	LogicModel string
}

// AliasWords is where the alias sent the call: "deep", "logic model
// gpt-5", or "" when that is not known.
func (a AliasTarget) AliasWords() string {
	if a.LogicModel != "" {
		return "logic model " + a.LogicModel
	}
	return a.Tier
}
