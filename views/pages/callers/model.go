// Package callers renders the Callers pages: callers, their quotas and
// budgets, and their API keys.
//
// data-testid: list callers-table, caller-new, caller-<name> (row) with
// caller-link, caller-group, caller-limits, limits-<tier>, caller-budget,
// caller-keys-count, callers-need-group (empty state); form caller-form,
// caller-save, caller-name, caller-no-groups, caller-limits-grid,
// field-<name>/error-<name> (limits.<tier>.<rpm|tpm|daily_tokens> included);
// detail caller-detail, caller-settings, caller-edit, caller-delete,
// caller-not-live, caller-changed, caller-keys (the swapped panel),
// caller-key-<id> (row) with caller-key-created (when, by whom) and
// caller-key-status (live, suspended or revoked), caller-keys-suspended,
// caller-key-fingerprint-<id>, caller-key-revoke-<id>, caller-key-form,
// caller-key-name, caller-key-create, caller-no-keys, caller-keys-notice,
// caller-key-once, caller-key-plaintext, caller-key-copy,
// snippet-panel-<curl|python|node|go>, copy-snippet-<same>, snippet-<same>.
package callers

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"switchyard/routing/config"
	"switchyard/views/components"
	"switchyard/views/layout"
)

// Row is one caller on the list page.
type Row struct {
	config.Caller
	// Live is false when the caller is not in the live version yet.
	Live bool
	// KeyCount counts the caller's unrevoked keys.
	KeyCount int
}

// ListPage is the Callers page.
type ListPage struct {
	Page layout.Page
	Rows []Row
	// Expiring lists the keys that expire within 7 days.
	Expiring []ExpiringKey
	// HasGroups tells the empty state whether a route group exists yet.
	HasGroups bool
}

// Form is the create/edit form of a caller.
type Form struct {
	ID int64
	V  config.Caller
	// Raw holds the submitted text of the numeric fields, so a rejected
	// value is shown as typed rather than as 0. Nil on a fresh form.
	Raw     map[string]string
	Groups  []string
	Tenants []string
	Errors  config.FieldErrors
	CSRF    string
}

// Action is where the form posts.
func (f Form) Action() string {
	if f.ID == 0 {
		return "/callers"
	}
	return "/callers/" + components.I64(f.ID)
}

// Value is the text shown in a numeric field: what was typed, or the stored
// value ("" for 0, which means unlimited).
func (f Form) Value(name string) string {
	if f.Raw != nil {
		return f.Raw[name]
	}
	if name == "monthly_budget" {
		return components.MoneyInput(int64(f.V.MonthlyBudgetMicros), true)
	}
	// limits.<tier>.<field>
	parts := strings.Split(name, ".")
	if len(parts) != 3 {
		return ""
	}
	l := f.V.Limit(config.TierName(parts[1]))
	var v int64
	switch parts[2] {
	case "rpm":
		v = l.RPM
	case "tpm":
		v = l.TPM
	case "daily_tokens":
		v = l.DailyTokens
	}
	if v == 0 {
		return ""
	}
	return strconv.FormatInt(v, 10)
}

// LimitFields are the columns of the limits grid.
var LimitFields = []struct{ Key, Label string }{
	{"rpm", "RPM"}, {"tpm", "TPM"}, {"daily_tokens", "Daily tokens"},
}

// LimitName is the form field of one cell of the limits grid; it matches the
// keys config.ValidateCaller reports errors under.
func LimitName(t config.TierName, field string) string {
	return "limits." + string(t) + "." + field
}

// DetailPage is one caller with its keys.
type DetailPage struct {
	Page   layout.Page
	Caller config.Caller
	Status LiveStatus
	Keys   KeysPanel
}

// LiveStatus tells whether the caller's draft settings are serving traffic.
type LiveStatus struct {
	// Published is false before the first publish.
	Published bool
	// InLive is true when the live version contains the caller.
	InLive bool
	// Changed is true when the draft settings differ from the live ones.
	Changed     bool
	LiveVersion int64
}

// KeysPanel is the key list of one caller; it is swapped in place when a key
// is created or revoked.
type KeysPanel struct {
	CallerID   int64
	CallerName string
	Keys       []Key
	// NewKey is set only in the response to the create-key post.
	NewKey *NewKey
	// The create form's values.
	Name, Owner, ExpiresAt         string
	ScopeTiers, ScopeModels, Doors string
	// Rotated, in the answer to a rotate post, names the old key and when
	// it stops working.
	Rotated *Rotated
	// Problem says why an action on a key was refused (a rotation).
	Problem string
	Errors  config.FieldErrors
	Notice  string
	CSRF    string
	CanEdit bool
	// Status says whether the live version has the caller: its keys are
	// suspended while it does not.
	Status LiveStatus
}

// Suspended tells whether the caller's unrevoked keys are refused because
// the live version does not contain the caller.
func (p KeysPanel) Suspended() bool { return !p.Status.InLive }

// SuspendedWhy says why the keys do not authenticate.
func (p KeysPanel) SuspendedWhy() string {
	if !p.Status.Published {
		return "suspended until the caller is published"
	}
	return "suspended while the caller is absent from live v" + components.I64(p.Status.LiveVersion)
}

// Key is one API key of a caller as the panel lists it.
type Key struct {
	ID     int64
	Name   string
	Prefix string
	// Fingerprint is what a call log records when a request presents
	// the key (also once it is revoked): Call logs search by it.
	Fingerprint string
	CreatedAt   time.Time
	CreatedBy   string
	// RevokedAt is nil while the key is live.
	RevokedAt *time.Time
	RevokedBy string
	Owner     string
	// Scope says what the key may use ("" : everything).
	Scope string
	// ExpiresAt is when the key stops working (nil: never); ExpiryTone is
	// "bad" once expired, "warn" within 7 days, else "".
	ExpiresAt  *time.Time
	ExpiryTone string
	// RevokeAt is the end of a rotated key's grace period.
	RevokeAt *time.Time
	// RotatedFrom is the key this one replaced (0: none).
	RotatedFrom  int64
	LastUsedAt   *time.Time
	LastUsedAddr string
}

// Expired reports whether the key is past its expiry.
func (k Key) Expired() bool { return k.ExpiryTone == "bad" }

// GraceChoices are the rotate form's grace periods: value, label.
var GraceChoices = []struct{ Value, Label string }{
	{"1h", "1 hour"}, {"24h", "24 hours"}, {"168h", "7 days"}, {"0s", "none (revoke now)"},
}

// ExpiringKey is a key listed on the Callers page because it expires soon.
type ExpiringKey struct {
	CallerID  int64
	Caller    string
	Prefix    string
	Name      string
	Owner     string
	ExpiresAt time.Time
}

// CallsURL searches the last 7 days of calls that presented the key.
func (k Key) CallsURL() string {
	return "/call-logs?" + url.Values{"range": {"7d"}, "caller_key": {k.Fingerprint}}.Encode()
}

// NewKey is a freshly created key, shown exactly once.
type NewKey struct {
	Plaintext string
	Prefix    string
	// APIBase is the data plane's base URL (".../v1") for the snippets.
	APIBase string
}

// LiveKeys counts the unrevoked keys.
func (p KeysPanel) LiveKeys() int {
	n := 0
	for _, k := range p.Keys {
		if k.RevokedAt == nil {
			n++
		}
	}
	return n
}

// Snippets lists the copy-paste examples in display order.
func (k NewKey) Snippets() []components.Snippet {
	return components.CallSnippets(k.APIBase, k.Plaintext)
}

func classOptions() []components.Option {
	return []components.Option{
		{Value: string(config.ClassInteractive), Label: "interactive"},
		{Value: string(config.ClassNormal), Label: "normal"},
		{Value: string(config.ClassBatch), Label: "batch"},
	}
}

func groupOptions(groups []string) []components.Option {
	out := make([]components.Option, 0, len(groups))
	for _, g := range groups {
		out = append(out, components.Option{Value: g, Label: g})
	}
	return out
}

func tenantOptions(tenants []string) []components.Option {
	out := []components.Option{{Value: "", Label: "— none (shared) —"}}
	for _, t := range tenants {
		out = append(out, components.Option{Value: t, Label: t})
	}
	return out
}

func classBadge(c config.PriorityClass) string {
	switch c {
	case config.ClassBatch:
		return "warn"
	case config.ClassNormal:
		return ""
	}
	return "info"
}

func currencyOrUSD(c string) string {
	if c == "" {
		return "USD"
	}
	return c
}

// knownFields are the fields the form shows errors next to; others go to
// the banner at the top.
func knownFields() []string {
	out := []string{"name", "business_line", "route_group", "tenant", "priority_class", "monthly_budget", "budget_currency"}
	for _, t := range config.TierNames {
		for _, lf := range LimitFields {
			out = append(out, LimitName(t, lf.Key))
		}
	}
	return out
}

// num formats a count with thousands separators; 0 is "unlimited".
func num(v int64) string {
	if v == 0 {
		return "unlimited"
	}
	return group(strconv.FormatInt(v, 10))
}

func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// unlimited reports whether the caller has no quota in any tier.
func unlimited(c config.Caller) bool {
	for _, l := range c.Limits {
		if l.RPM != 0 || l.TPM != 0 || l.DailyTokens != 0 {
			return false
		}
	}
	return true
}

func budget(c config.Caller) string {
	if c.MonthlyBudgetMicros == 0 {
		return "no budget"
	}
	whole, frac, _ := strings.Cut(c.MonthlyBudgetMicros.Fixed(2), ".")
	cur := c.BudgetCurrency
	if cur == "" {
		cur = "USD"
	}
	return group(whole) + "." + frac + " " + cur + " / month"
}

// Rotated is a rotation's outcome: the old key works until RevokeAt.
type Rotated struct {
	OldPrefix string
	RevokeAt  time.Time
}
