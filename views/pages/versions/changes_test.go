package versions

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"switchyard/routing/config"
)

// changeKinds are every object kind config.Changes reports, placed as it
// places them.
var changeKinds = []config.ObjectRef{
	{Kind: "tenant", Name: "acme"},
	{Kind: "provider", Name: "openai"},
	{Kind: "provider_key", Name: "primary sk-…abcd", Group: "openai"},
	{Kind: "provider_header", Name: "X-Org", Group: "openai"},
	{Kind: "logic_model", Name: "small", Model: "small"},
	{Kind: "deployment", Name: "openai/gpt-4o-mini", Model: "small"},
	{Kind: "route_group", Name: "default"},
	{Kind: "tier", Name: "default / deep", Group: "default", Tier: config.TierDeep},
	{Kind: "candidate", Name: "small", Group: "default", Tier: config.TierDeep, Model: "small"},
	{Kind: "model_alias", Name: "claude-*", Group: "default"},
	{Kind: "caller", Name: "tiny-app"},
	{Kind: "caller_key", Name: "sy-abc", Group: "tiny-app"},
}

// TestChangeSummaryReadsAsOnePhrase walks every kind of change — each
// object kind added, removed and with a field changed, and parking and
// enabling flips — through the rendered summary: each line is one plain
// phrase that says what happened once ("removed caller tiny-app", never
// "removed caller tiny-app removed"), parks as parked/unparked without a
// weight, and names its object.
func TestChangeSummaryReadsAsOnePhrase(t *testing.T) {
	var cs []config.Change
	want := map[string]string{} // phrase → verb
	for _, o := range changeKinds {
		cs = append(cs, config.Change{Op: config.Added, Object: o}, config.Change{Op: config.Removed, Object: o},
			config.Change{Op: config.Changed, Object: o, Field: "description", From: "", To: "new text"})
	}
	for _, o := range []config.ObjectRef{changeKinds[5], changeKinds[8]} {
		cs = append(cs, config.Change{Op: config.Changed, Object: o, Field: "parked", From: "false", To: "true"},
			config.Change{Op: config.Changed, Object: o, Field: "parked", From: "true", To: "false"})
	}
	for _, o := range []config.ObjectRef{changeKinds[1], changeKinds[5], changeKinds[10]} {
		cs = append(cs, config.Change{Op: config.Changed, Object: o, Field: "enabled", From: "true", To: "false"},
			config.Change{Op: config.Changed, Object: o, Field: "enabled", From: "false", To: "true"})
	}
	var buf bytes.Buffer
	if err := ChangeList(cs).Render(t.Context(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	lines := doc.Find(`[data-testid="change"]`)
	if lines.Length() != len(cs) {
		t.Fatalf("%d lines for %d changes", lines.Length(), len(cs))
	}
	verbs := regexp.MustCompile(`\b(added|removed|changed|parked|unparked|enabled|disabled)\b`)
	lines.Each(func(i int, l *goquery.Selection) {
		c := cs[i]
		text := strings.Join(strings.Fields(l.Text()), " ")
		verb := ChangeVerb(c)
		if text != ChangeWords(c) {
			t.Errorf("line %q, ChangeWords %q", text, ChangeWords(c))
		}
		if got := verbs.FindAllString(text, -1); len(got) != 1 || got[0] != verb || !strings.HasPrefix(text, verb+" ") {
			t.Errorf("%s %s: %q says what happened as %v, want once, first: %s", c.Op, c.Object.Kind, text, got, verb)
		}
		if !strings.Contains(text, c.Object.Name) && !strings.Contains(text, string(c.Object.Tier)) {
			t.Errorf("%q does not name %s", text, c.Object.Name)
		}
		if c.Field == "parked" && (strings.Contains(text, "weight") || strings.Contains(text, "true") || strings.Contains(text, "→")) {
			t.Errorf("a park reads %q: parked/unparked, no values", text)
		}
		want[text] = verb
	})
	if len(want) != len(cs) {
		t.Errorf("%d distinct phrases for %d changes: two changes read the same", len(want), len(cs))
	}
	for text, verb := range map[string]string{
		"removed caller tiny-app":                                     "removed",
		"parked candidate small in route group default, tier deep":    "parked",
		"unparked deployment openai/gpt-4o-mini of logic model small": "unparked",
		"changed caller tiny-app: description (none) → new text":      "changed",
	} {
		if want[text] != verb {
			t.Errorf("no line %q", text)
		}
	}
}
