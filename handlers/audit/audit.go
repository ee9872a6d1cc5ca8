// Package audit is the console's and admin API's table of audited routes
// (route → typed action code and the kind of object its path names) and
// the request-scoped facts a handler adds to its route's audit row.
//
// web's audit middleware records one row per request to a route listed in
// Routes, after the handler ran: who (the session user or the admin
// token), from which address, the action, the object, the outcome, and for
// a route marked Config the draft configuration's changed lines before and
// after. A new route that changes something needs one row in Routes;
// TestEveryChangingRouteIsAudited (web) fails on a mutating route without
// one.
package audit

import (
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"switchyard/routing/config/textdiff"
	"switchyard/store/rows"
)

// Spec is how one route is audited.
type Spec struct {
	// Action is the row's code; empty for a route that changes nothing and
	// is not recorded (a form's step back, a preview).
	Action rows.AuditAction
	// Object is the kind of object the route's path parameter names (or,
	// without one, the kind the route creates or changes).
	Object string
	// Param is the path parameter holding the object's id ("id" when
	// empty; "-" for none).
	Param string
	// Config marks routes that may change the draft configuration: their
	// row carries the draft's changed lines before and after.
	Config bool
}

// skip marks a mutating route that changes nothing and touches no secret.
var skip = Spec{}

// Routes gives the audit of every console and admin-API route that changes
// something or touches a secret, by method and echo route pattern (the
// admin API's under /admin/api).
var Routes = map[string]Spec{
	// signing in and out: the attempted username is the object
	"POST /login":  {Action: "session.sign_in", Object: "user", Param: "-"},
	"POST /logout": {Action: "session.sign_out", Object: "user", Param: "-"},
	// onboarding wizard
	"POST /onboarding/verify": {Action: "onboarding.verify", Object: "provider", Param: "-"},
	"POST /onboarding/review": skip,
	"POST /onboarding/form":   skip,
	"POST /onboarding/create": {Action: "onboarding.create", Object: "provider", Param: "-", Config: true},
	// draft configuration
	"POST /providers":                          {Action: "provider.create", Object: "provider", Param: "-", Config: true},
	"POST /providers/:id":                      {Action: "provider.update", Object: "provider", Config: true},
	"POST /providers/:id/delete":               {Action: "provider.delete", Object: "provider", Config: true},
	"POST /providers/:id/keys":                 {Action: "provider_key.create", Object: "provider", Config: true},
	"POST /provider-keys/:id/status":           {Action: "provider_key.status", Object: "provider_key", Config: true},
	"POST /provider-keys/:id/delete":           {Action: "provider_key.delete", Object: "provider_key", Config: true},
	"POST /provider-keys/:id/reenable":         {Action: "provider_key.reenable", Object: "provider_key"},
	"POST /logic-models":                       {Action: "logic_model.create", Object: "logic_model", Param: "-", Config: true},
	"POST /logic-models/:id":                   {Action: "logic_model.update", Object: "logic_model", Config: true},
	"POST /logic-models/:id/delete":            {Action: "logic_model.delete", Object: "logic_model", Config: true},
	"POST /logic-models/:id/deployments":       {Action: "deployment.create", Object: "logic_model", Config: true},
	"POST /deployments/:id":                    {Action: "deployment.update", Object: "deployment", Config: true},
	"POST /deployments/:id/delete":             {Action: "deployment.delete", Object: "deployment", Config: true},
	"POST /deployments/:id/enabled":            {Action: "deployment.enable", Object: "deployment", Config: true},
	"POST /deployments/:id/weight":             {Action: "deployment.weight", Object: "deployment", Config: true},
	"POST /deployments/:id/parked":             {Action: "deployment.park", Object: "deployment", Config: true},
	"POST /route-groups":                       {Action: "route_group.create", Object: "route_group", Param: "-", Config: true},
	"POST /route-groups/:id":                   {Action: "route_group.update", Object: "route_group", Config: true},
	"POST /route-groups/:id/delete":            {Action: "route_group.delete", Object: "route_group", Config: true},
	"POST /tiers/:id":                          {Action: "tier.update", Object: "tier", Config: true},
	"POST /tiers/:id/candidates":               {Action: "candidate.create", Object: "tier", Config: true},
	"POST /candidates/:id":                     {Action: "candidate.update", Object: "candidate", Config: true},
	"POST /candidates/:id/move":                {Action: "candidate.move", Object: "candidate", Config: true},
	"POST /candidates/:id/parked":              {Action: "candidate.park", Object: "candidate", Config: true},
	"POST /candidates/:id/delete":              {Action: "candidate.delete", Object: "candidate", Config: true},
	"POST /route-groups/:id/aliases":           {Action: "model_alias.create", Object: "route_group", Config: true},
	"POST /route-groups/:id/aliases/:n":        {Action: "model_alias.update", Object: "route_group", Config: true},
	"POST /route-groups/:id/aliases/:n/move":   {Action: "model_alias.move", Object: "route_group", Config: true},
	"POST /route-groups/:id/aliases/:n/delete": {Action: "model_alias.delete", Object: "route_group", Config: true},
	"POST /callers":                            {Action: "caller.create", Object: "caller", Param: "-", Config: true},
	"POST /callers/:id":                        {Action: "caller.update", Object: "caller", Config: true},
	"POST /callers/:id/delete":                 {Action: "caller.delete", Object: "caller", Config: true},
	"POST /callers/:id/keys":                   {Action: "caller_key.create", Object: "caller"},
	"POST /caller-keys/:id/revoke":             {Action: "caller_key.revoke", Object: "caller_key"},
	"POST /caller-keys/:id/rotate":             {Action: "caller_key.rotate", Object: "caller_key"},
	"POST /tenants":                            {Action: "tenant.create", Object: "tenant", Param: "-", Config: true},
	"POST /tenants/:id":                        {Action: "tenant.update", Object: "tenant", Config: true},
	"POST /tenants/:id/delete":                 {Action: "tenant.delete", Object: "tenant", Config: true},
	// versions: publish, rollback, import, export
	"POST /publish":                             {Action: "config.publish", Object: "version", Param: "-"},
	"POST /versions/:n/rollback":                {Action: "config.rollback", Object: "version", Param: "n", Config: true},
	"GET /config/export":                        {Action: "config.export", Object: "version", Param: "-"},
	"POST /config/import":                       skip, // the preview
	"POST /config/import/apply":                 {Action: "config.import", Object: "draft", Param: "-", Config: true},
	"POST /test-route/send":                     {Action: "test_route.send", Object: "route_group", Param: "-"},
	"GET /call-logs/export.csv":                 {Action: "call_log.export", Object: "call_log", Param: "-"},
	"POST /jobs/:name/run":                      {Action: "job.run", Object: "job", Param: "name"},
	"POST /audit/verify":                        skip, // reads the chain only
	"POST /settings/users":                      {Action: "user.create", Object: "user", Param: "-"},
	"POST /settings/users/:id/disable":          {Action: "user.disable", Object: "user"},
	"POST /settings/users/:id/role":             {Action: "user.role", Object: "user"},
	"POST /settings/users/:id/password":         {Action: rows.AuditUserPasswordReset, Object: "user"},
	"POST /settings/lockouts/clear":             {Action: "lockout.clear", Object: "lockout", Param: "-"},
	"POST /settings/tokens":                     {Action: "admin_token.create", Object: "admin_token", Param: "-"},
	"POST /settings/tokens/:id/revoke":          {Action: "admin_token.revoke", Object: "admin_token"},
	"POST /settings/sign-in":                    {Action: "settings.sign_in", Object: "settings", Param: "-"},
	"POST /settings/alerts/rules/:id":           {Action: "alert_rule.update", Object: "alert_rule"},
	"POST /settings/alerts/rules/:id/silence":   {Action: "alert_rule.silence", Object: "alert_rule"},
	"POST /settings/alerts/channels":            {Action: "alert_channel.create", Object: "alert_channel", Param: "-"},
	"POST /settings/alerts/channels/:id/delete": {Action: "alert_channel.delete", Object: "alert_channel"},
	"POST /settings/alerts/channels/:id/test":   {Action: "alert_channel.test", Object: "alert_channel"},
	"POST /account/password":                    {Action: "user.password_change", Object: "user", Param: "-"},
	"GET /auth/oidc/callback":                   {Action: "session.sign_in_sso", Object: "user", Param: "-"},

	// admin API
	"GET /admin/api/config/draft":                  {Action: "config.export", Object: "draft", Param: "-"},
	"POST /admin/api/config/import":                {Action: "config.import", Object: "draft", Param: "-", Config: true},
	"POST /admin/api/dry-run":                      skip,
	"POST /admin/api/publish":                      {Action: "config.publish", Object: "version", Param: "-"},
	"POST /admin/api/versions/:n/rollback":         {Action: "config.rollback", Object: "version", Param: "n", Config: true},
	"GET /admin/api/audit":                         {Action: "audit.export", Object: "audit", Param: "-"},
	"PUT /admin/api/alerts/rules/:id":              {Action: "alert_rule.update", Object: "alert_rule"},
	"POST /admin/api/alerts/channels":              {Action: "alert_channel.create", Object: "alert_channel", Param: "-"},
	"DELETE /admin/api/alerts/channels/:id":        {Action: "alert_channel.delete", Object: "alert_channel"},
	"POST /admin/api/providers":                    {Action: "provider.create", Object: "provider", Param: "-", Config: true},
	"PUT /admin/api/providers/:id":                 {Action: "provider.update", Object: "provider", Config: true},
	"DELETE /admin/api/providers/:id":              {Action: "provider.delete", Object: "provider", Config: true},
	"POST /admin/api/providers/:id/keys":           {Action: "provider_key.create", Object: "provider", Config: true},
	"PUT /admin/api/provider-keys/:id":             {Action: "provider_key.status", Object: "provider_key", Config: true},
	"DELETE /admin/api/provider-keys/:id":          {Action: "provider_key.delete", Object: "provider_key", Config: true},
	"POST /admin/api/tenants":                      {Action: "tenant.create", Object: "tenant", Param: "-", Config: true},
	"PUT /admin/api/tenants/:id":                   {Action: "tenant.update", Object: "tenant", Config: true},
	"DELETE /admin/api/tenants/:id":                {Action: "tenant.delete", Object: "tenant", Config: true},
	"POST /admin/api/logic-models":                 {Action: "logic_model.create", Object: "logic_model", Param: "-", Config: true},
	"PUT /admin/api/logic-models/:id":              {Action: "logic_model.update", Object: "logic_model", Config: true},
	"DELETE /admin/api/logic-models/:id":           {Action: "logic_model.delete", Object: "logic_model", Config: true},
	"POST /admin/api/logic-models/:id/deployments": {Action: "deployment.create", Object: "logic_model", Config: true},
	"PUT /admin/api/deployments/:id":               {Action: "deployment.update", Object: "deployment", Config: true},
	"DELETE /admin/api/deployments/:id":            {Action: "deployment.delete", Object: "deployment", Config: true},
	"POST /admin/api/route-groups":                 {Action: "route_group.create", Object: "route_group", Param: "-", Config: true},
	"PUT /admin/api/route-groups/:id":              {Action: "route_group.update", Object: "route_group", Config: true},
	"DELETE /admin/api/route-groups/:id":           {Action: "route_group.delete", Object: "route_group", Config: true},
	"PUT /admin/api/tiers/:id":                     {Action: "tier.update", Object: "tier", Config: true},
	"POST /admin/api/tiers/:id/candidates":         {Action: "candidate.create", Object: "tier", Config: true},
	"PUT /admin/api/candidates/:id":                {Action: "candidate.update", Object: "candidate", Config: true},
	"POST /admin/api/candidates/:id/move":          {Action: "candidate.move", Object: "candidate", Config: true},
	"DELETE /admin/api/candidates/:id":             {Action: "candidate.delete", Object: "candidate", Config: true},
	"POST /admin/api/callers":                      {Action: "caller.create", Object: "caller", Param: "-", Config: true},
	"PUT /admin/api/callers/:id":                   {Action: "caller.update", Object: "caller", Config: true},
	"DELETE /admin/api/callers/:id":                {Action: "caller.delete", Object: "caller", Config: true},
	"POST /admin/api/callers/:id/keys":             {Action: "caller_key.create", Object: "caller"},
	"POST /admin/api/caller-keys/:id/revoke":       {Action: "caller_key.revoke", Object: "caller_key"},
	"POST /admin/api/caller-keys/:id/rotate":       {Action: "caller_key.rotate", Object: "caller_key"},
}

// ForRoute is the audit of a route by method and echo route pattern
// (c.Path()); ok is false for a route that is not recorded.
func ForRoute(method, pattern string) (Spec, bool) {
	if method == http.MethodHead {
		return Spec{}, false
	}
	s, ok := Routes[method+" "+pattern]
	return s, ok && s.Action != ""
}

// Listed reports whether a route has a row in Routes (recorded or skipped).
func Listed(method, pattern string) bool {
	_, ok := Routes[method+" "+pattern]
	return ok
}

// Object is what an action acted on.
type Object struct {
	Kind, ID, Name string
}

// Facts are what a handler adds to its request's audit row.
type Facts struct {
	Object Object
	// Actor names who acted when the request has no signed-in principal
	// (the username of a sign-in attempt).
	Actor string
	Note  string
	// Before and After are a change to configuration outside the draft
	// (settings), as text; see Change.
	Before, After string
	changed       bool
}

const factsKey = "switchyard.audit"

// Set records what the request acted on; fields left empty keep what the
// route's path gives.
func Set(c echo.Context, o Object) {
	f := Get(c)
	if o.Kind != "" {
		f.Object.Kind = o.Kind
	}
	if o.ID != "" {
		f.Object.ID = o.ID
	}
	if o.Name != "" {
		f.Object.Name = o.Name
	}
	c.Set(factsKey, f)
}

// Note adds a short fact to the request's audit row ("version 12"). Never
// a secret.
func Note(c echo.Context, note string) {
	f := Get(c)
	if f.Note != "" {
		note = f.Note + "; " + note
	}
	f.Note = note
	c.Set(factsKey, f)
}

// Change records a configuration change that is not the draft's (a
// setting): the row keeps the changed lines of before → after. The texts
// must hold no secret: blank a secret value, or name only that it changed.
func Change(c echo.Context, before, after string) {
	f := Get(c)
	f.Before, f.After, f.changed = before, after, true
	c.Set(factsKey, f)
}

// Changed reports whether a handler recorded a change with Change.
func (f Facts) Changed() bool { return f.changed }

// SetActor names who acted on a request without a principal.
func SetActor(c echo.Context, name string) {
	f := Get(c)
	f.Actor = name
	c.Set(factsKey, f)
}

// Get returns what handlers added to the request's audit row.
func Get(c echo.Context) Facts {
	f, _ := c.Get(factsKey).(Facts)
	return f
}

// maxSide bounds each side of a row's before/after (an import that
// replaces a whole configuration is kept as its first part).
const maxSide = 32 << 10

// ChangedLines returns the lines of before that after changed and the
// lines that replaced them, each run with two lines of context and "…"
// between runs; both are "" when nothing changed. The texts are canonical
// configuration, where secrets are never written.
func ChangedLines(before, after string) (string, string) {
	if before == after {
		return "", ""
	}
	var b, a strings.Builder
	for _, l := range textdiff.FoldContext(textdiff.Lines(before, after), 2) {
		switch l.Op {
		case textdiff.Equal:
			b.WriteString(l.Text + "\n")
			a.WriteString(l.Text + "\n")
		case textdiff.Delete:
			b.WriteString(l.Text + "\n")
		case textdiff.Insert:
			a.WriteString(l.Text + "\n")
		case textdiff.Fold:
			b.WriteString("…\n")
			a.WriteString("…\n")
		}
	}
	return clipSide(b.String()), clipSide(a.String())
}

func clipSide(s string) string {
	if len(s) <= maxSide {
		return s
	}
	cut := strings.LastIndexByte(s[:maxSide], '\n') + 1
	return s[:cut] + "… (" + strconv.Itoa(strings.Count(s[cut:], "\n")) + " more lines)\n"
}

// Codes lists the action codes of the table and of the command line, once
// each, sorted.
func Codes() []string {
	seen := map[rows.AuditAction]bool{rows.AuditUserPasswordReset: true}
	for _, s := range Routes {
		if s.Action != "" {
			seen[s.Action] = true
		}
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, string(a))
	}
	sort.Strings(out)
	return out
}
