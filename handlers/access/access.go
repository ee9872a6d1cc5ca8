// Package access is the console's one role → action table. The route guard
// (web's requireUser and requireToken) refuses a request whose route's
// action the role lacks, and every view that renders a control reads the
// same table through a layout.Can (Capabilities), so nobody is shown a
// control the guard would refuse.
//
// A new console route that changes anything needs a row in Routes; a GET
// route without one is a read, which every role may do. TestEveryRouteHasAnAction
// (web) fails on a mutating route without a row.
package access

import (
	"net/http"

	"switchyard/routing/config"
)

// Action is one thing a console user or admin token may be allowed to do.
type Action string

// The console's actions.
const (
	// Read: look at any page of the console.
	Read Action = "read"
	// Onboard: use the onboarding wizard (it creates and publishes).
	Onboard Action = "onboard"
	// EditConfig: create, edit, delete and park providers, provider keys,
	// logic models, deployments, route groups, tiers, candidates, model
	// aliases, callers and tenants, and import a configuration into the
	// draft.
	EditConfig Action = "edit-config"
	// CallerKeys: create and revoke callers' API keys.
	CallerKeys Action = "caller-keys"
	// Publish: publish the draft and roll back to an earlier version.
	Publish Action = "publish"
	// SendTest: send a real request through a route from Test route.
	SendTest Action = "send-test"
	// RunJobs: run a background job now.
	RunJobs Action = "run-jobs"
	// ManageUsers: add, disable and change console users, clear lockouts,
	// create or revoke admin API tokens, set up single sign-on, and read
	// and export the audit trail.
	ManageUsers Action = "manage-users"
)

// Actions lists every action, in the order the manual shows them.
var Actions = []Action{Read, Onboard, EditConfig, CallerKeys, Publish, SendTest, RunJobs, ManageUsers}

// Roles lists the roles (config defines them), most powerful first.
var Roles = config.Roles

// grants is the table: what each role may do.
var grants = map[string][]Action{
	config.RoleAdmin:  Actions,
	config.RoleViewer: {Read},
}

// Allows reports whether role may do a. An unknown role may do nothing.
func Allows(role string, a Action) bool {
	for _, g := range grants[role] {
		if g == a {
			return true
		}
	}
	return false
}

// Describe says in a sentence what an action lets one do, for refusals
// and the manual.
func Describe(a Action) string {
	switch a {
	case Read:
		return "look at the console's pages"
	case Onboard:
		return "set up providers, routes and callers with the onboarding wizard"
	case EditConfig:
		return "change the draft configuration (create, edit, delete or park providers, keys, models, route groups, callers and tenants; import)"
	case CallerKeys:
		return "create, rotate or revoke callers' API keys"
	case Publish:
		return "publish the draft or roll back to an earlier version"
	case SendTest:
		return "send real test requests through a route"
	case RunJobs:
		return "run background jobs now"
	case ManageUsers:
		return "manage console users and admin API tokens, and read the audit trail"
	}
	return string(a)
}

// Refusal is the sentence shown when role may not do a.
func Refusal(role string, a Action) string {
	if role == "" {
		role = "no"
	}
	return "The " + role + " role cannot " + Describe(a) + ". Ask an admin."
}

// Routes gives the action of every console and admin-API route that is not
// a plain read, by method and echo route pattern.
var Routes = map[string]Action{
	// signing in and out is for everyone
	"POST /login":  Read,
	"POST /logout": Read,
	// everyone chooses their own password
	"POST /account/password": Read,
	// onboarding wizard: even its pages, so a viewer learns before filling it
	"GET /onboarding":                          Onboard,
	"GET /onboarding/templates/:code":          Onboard,
	"POST /onboarding/verify":                  Onboard,
	"POST /onboarding/review":                  Onboard,
	"POST /onboarding/form":                    Onboard,
	"POST /onboarding/create":                  Onboard,
	"GET /providers/new":                       EditConfig,
	"POST /providers":                          EditConfig,
	"GET /providers/:id/edit":                  EditConfig,
	"POST /providers/:id":                      EditConfig,
	"POST /providers/:id/delete":               EditConfig,
	"POST /providers/:id/keys":                 EditConfig,
	"POST /provider-keys/:id/status":           EditConfig,
	"POST /provider-keys/:id/delete":           EditConfig,
	"POST /provider-keys/:id/reenable":         EditConfig,
	"GET /logic-models/new":                    EditConfig,
	"POST /logic-models":                       EditConfig,
	"GET /logic-models/:id/edit":               EditConfig,
	"POST /logic-models/:id":                   EditConfig,
	"POST /logic-models/:id/delete":            EditConfig,
	"GET /logic-models/:id/deployments/new":    EditConfig,
	"POST /logic-models/:id/deployments":       EditConfig,
	"GET /deployments/:id/edit":                EditConfig,
	"POST /deployments/:id":                    EditConfig,
	"POST /deployments/:id/delete":             EditConfig,
	"POST /deployments/:id/enabled":            EditConfig,
	"POST /deployments/:id/weight":             EditConfig,
	"GET /route-groups/new":                    EditConfig,
	"POST /route-groups":                       EditConfig,
	"GET /route-groups/:id/edit":               EditConfig,
	"POST /route-groups/:id":                   EditConfig,
	"POST /route-groups/:id/delete":            EditConfig,
	"POST /tiers/:id":                          EditConfig,
	"POST /tiers/:id/candidates":               EditConfig,
	"POST /candidates/:id":                     EditConfig,
	"POST /candidates/:id/move":                EditConfig,
	"POST /candidates/:id/delete":              EditConfig,
	"POST /route-groups/:id/aliases":           EditConfig,
	"POST /route-groups/:id/aliases/:n":        EditConfig,
	"POST /route-groups/:id/aliases/:n/move":   EditConfig,
	"POST /route-groups/:id/aliases/:n/delete": EditConfig,
	"GET /callers/new":                         EditConfig,
	"POST /callers":                            EditConfig,
	"GET /callers/:id/edit":                    EditConfig,
	"POST /callers/:id":                        EditConfig,
	"POST /callers/:id/delete":                 EditConfig,
	"POST /callers/:id/keys":                   CallerKeys,
	"POST /caller-keys/:id/revoke":             CallerKeys,
	"POST /caller-keys/:id/rotate":             CallerKeys,
	"GET /tenants/new":                         EditConfig,
	"POST /tenants":                            EditConfig,
	"GET /tenants/:id/edit":                    EditConfig,
	"POST /tenants/:id":                        EditConfig,
	"POST /tenants/:id/delete":                 EditConfig,
	"POST /publish":                            Publish,
	"POST /versions/:n/rollback":               Publish,
	"GET /config/import":                       EditConfig,
	"POST /config/import":                      EditConfig,
	"POST /config/import/apply":                EditConfig,
	"POST /test-route/send":                    SendTest,
	"POST /jobs/:name/run":                     RunJobs,
	"POST /settings/users":                     ManageUsers,
	"POST /settings/users/:id/disable":         ManageUsers,
	"POST /settings/users/:id/role":            ManageUsers,
	"POST /settings/users/:id/password":        ManageUsers,
	"POST /settings/lockouts/clear":            ManageUsers,
	"POST /settings/tokens":                    ManageUsers,
	"POST /settings/tokens/:id/revoke":         ManageUsers,
	"POST /settings/sign-in":                   ManageUsers,
	"GET /audit":                               ManageUsers,
	"POST /audit/verify":                       ManageUsers,
	"GET /admin/api/audit":                     ManageUsers,
}

// ForRoute is the action of a route, by method and echo route pattern
// (c.Path()). A GET or HEAD route without a row is a read; any other
// method without one is EditConfig, so a route forgotten here is refused
// to viewers rather than opened to them.
func ForRoute(method, pattern string) Action {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if a, ok := Routes[method+" "+pattern]; ok {
		return a
	}
	switch method {
	case http.MethodGet, http.MethodOptions:
		return Read
	}
	return EditConfig
}

// Capabilities is what role may do, one boolean per action, for views.
type Capabilities struct {
	Onboard, EditConfig, CallerKeys, Publish, SendTest, RunJobs, ManageUsers bool
}

// For returns role's capabilities.
func For(role string) Capabilities {
	return Capabilities{
		Onboard:     Allows(role, Onboard),
		EditConfig:  Allows(role, EditConfig),
		CallerKeys:  Allows(role, CallerKeys),
		Publish:     Allows(role, Publish),
		SendTest:    Allows(role, SendTest),
		RunJobs:     Allows(role, RunJobs),
		ManageUsers: Allows(role, ManageUsers),
	}
}
