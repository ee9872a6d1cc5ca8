package access

import (
	"os"
	"strings"
	"testing"
)

// TestManualListsTheTable: the manual's role table (static/manual/console.md)
// has one row per action, with its words and a yes or no per role as the
// table here says.
func TestManualListsTheTable(t *testing.T) {
	b, err := os.ReadFile("../../static/manual/console.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) == 2+len(Roles) {
			rows[cells[0]] = line
		}
	}
	for _, a := range Actions {
		want := "| " + string(a) + " | " + Describe(a) + " |"
		for _, r := range Roles {
			if Allows(r, a) {
				want += " yes |"
			} else {
				want += " no |"
			}
		}
		if rows[string(a)] != want {
			t.Errorf("manual row for %s:\n got %q\nwant %q", a, rows[string(a)], want)
		}
	}
}

// TestUnknownRoutesAreNotReads: a mutating route without a row needs
// EditConfig, so a route forgotten in Routes is refused to viewers.
func TestUnknownRoutesAreNotReads(t *testing.T) {
	if ForRoute("POST", "/no-such") != EditConfig || ForRoute("DELETE", "/admin/api/x") != EditConfig {
		t.Fatal("an unknown mutating route is not EditConfig")
	}
	if ForRoute("GET", "/no-such") != Read || ForRoute("HEAD", "/onboarding") != Onboard {
		t.Fatal("GET and HEAD lookups")
	}
	if Allows("", Read) || Allows("root", Read) {
		t.Fatal("an unknown role may do something")
	}
}
