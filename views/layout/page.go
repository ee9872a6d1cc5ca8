// Package layout holds the console's page frame: the skip link, the
// navigation (a Menu under 900 px), the draft banner, and the flash area.
//
// data-testid: skip-link, nav, nav-toggle, nav-<key>, nav-unservable (the
// red count of unservable route group × tiers beside Overview and Health), whoami, logout,
// draft-state (always present; swapped out of band after every change),
// draft-banner, draft-diff-link, notice, flash, flash-refused, flash-error.
package layout

import "github.com/a-h/templ"

// Page is what every console page's frame needs.
type Page struct {
	Title  string
	Active string // navigation key of the current page
	User   string
	Role   string
	// Can is what the user may do (the role table, handlers/access): a
	// control is rendered only when its action is allowed.
	Can  Can
	CSRF string
	// LiveVersion is the published version serving traffic, 0 before any.
	LiveVersion int64
	// DraftDiffers is true when the draft is not what is live.
	DraftDiffers bool
	// Notices are instance-wide warnings (e.g. Redis unreachable).
	Notices    []string
	Flash      string
	FlashError string // a refusal (e.g. a delete still referenced), shown in red
	// Unservable is how many route group × tiers of the live version
	// cannot serve now: a red badge beside Overview and Health.
	Unservable int
}

// Can holds one boolean per action of the role table (handlers/access
// Capabilities, converted field for field): views never see roles.
type Can struct {
	Onboard, EditConfig, CallerKeys, Publish, SendTest, RunJobs, ManageUsers bool
}

// CanEdit reports whether the user may change the draft configuration.
func (p Page) CanEdit() bool { return p.Can.EditConfig }

// nav is the navigation this user is shown: Onboarding only for those who
// may onboard, Audit only for those who manage users (a hidden entry's
// section heading moves to the next entry).
func (p Page) nav() []NavItem {
	if p.Can.Onboard && p.Can.ManageUsers {
		return Nav
	}
	out := make([]NavItem, 0, len(Nav))
	section := ""
	for _, n := range Nav {
		if (n.Key == "onboarding" && !p.Can.Onboard) || (n.Key == "audit" && !p.Can.ManageUsers) {
			section = n.Section
			continue
		}
		if section != "" && n.Section == "" {
			n.Section = section
		}
		section = ""
		out = append(out, n)
	}
	return out
}

// NavItem is one entry of the side navigation.
type NavItem struct {
	Key, Label, Href string
	Section          string // starts a new section when set
}

// Nav lists the pages in the operator's order (the operator's workflow).
var Nav = []NavItem{
	{Key: "onboarding", Label: "Onboarding", Href: "/onboarding", Section: "Set up"},
	{Key: "providers", Label: "Providers", Href: "/providers"},
	{Key: "models", Label: "Logic models", Href: "/logic-models"},
	{Key: "groups", Label: "Route groups", Href: "/route-groups"},
	{Key: "callers", Label: "Callers", Href: "/callers"},
	{Key: "tenants", Label: "Tenants", Href: "/tenants"},
	{Key: "versions", Label: "Versions", Href: "/versions", Section: "Change"},
	{Key: "dryrun", Label: "Dry-run", Href: "/dry-run"},
	{Key: "testroute", Label: "Test route", Href: "/test-route"},
	{Key: "overview", Label: "Overview", Href: "/", Section: "Observe"},
	{Key: "calllogs", Label: "Call logs", Href: "/call-logs"},
	{Key: "dashboard", Label: "Dashboard", Href: "/dashboard"},
	{Key: "usage", Label: "Usage", Href: "/usage"},
	{Key: "health", Label: "Health", Href: "/health"},
	{Key: "jobs", Label: "Jobs", Href: "/jobs"},
	{Key: "settings", Label: "Users & tokens", Href: "/settings", Section: "Admin"},
	{Key: "audit", Label: "Audit", Href: "/audit"},
	{Key: "alerts", Label: "Alerts", Href: "/settings/alerts"},
	{Key: "manual", Label: "Manual", Href: "/manual/", Section: "Help"},
}

// alerts reports whether a navigation entry carries the unservable badge.
func alerts(key string) bool { return key == "overview" || key == "health" }

// current marks the active navigation entry for assistive technology.
func current(active bool) templ.Attributes {
	if active {
		return templ.Attributes{"aria-current": "page"}
	}
	return nil
}

// oobAttr makes a fragment one htmx swaps out of band, by its id.
func oobAttr(oob bool) templ.Attributes {
	if oob {
		return templ.Attributes{"hx-swap-oob": "true"}
	}
	return nil
}
