package auditlog

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

func render(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&b)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// A row shows its action, actor, object and outcome, and opens to the
// draft's lines before and after; a row without them says nothing changed;
// a further page is a link.
func TestResultsShowRowsAndTheirChange(t *testing.T) {
	doc := render(t, ResultsTable(Results{Older: "/audit?before=7", Rows: []Row{
		{ID: 9, At: time.Unix(0, 0), Actor: "root", ActorKind: "user", Action: "caller.update", ObjectKind: "caller", ObjectID: "3", ObjectName: "app",
			Outcome: "ok", Status: 303, Method: "POST", Route: "/callers/:id", Before: "  enabled: true\n", After: "  enabled: false\n"},
		{ID: 8, Actor: "", ActorKind: "user", Action: "session.sign_in", Outcome: "refused", Status: 401},
	}}))
	row := doc.Find(`[data-testid="audit-row-9"]`)
	if got := row.Find(`[data-testid="audit-action"]`).Text(); got != "caller.update" {
		t.Errorf("action %q", got)
	}
	if got := row.Find(`[data-testid="audit-object"]`).Text(); got != "caller #3 app" {
		t.Errorf("object %q", got)
	}
	d := doc.Find(`[data-testid="audit-detail-9"]`)
	if b, a := d.Find(`[data-testid="audit-before"]`).Text(), d.Find(`[data-testid="audit-after"]`).Text(); !strings.Contains(b, "enabled: true") || !strings.Contains(a, "enabled: false") {
		t.Errorf("before %q after %q", b, a)
	}
	if got := doc.Find(`[data-testid="audit-detail-8"]`).Text(); !strings.Contains(got, "No configuration changed") {
		t.Errorf("row without a change: %q", got)
	}
	if href, _ := doc.Find(`[data-testid="audit-older"]`).Attr("href"); href != "/audit?before=7" {
		t.Errorf("older %q", href)
	}
}

// The chain check's answer names the broken row and what is wrong, in
// words, for each kind of break.
func TestVerifyResultNamesTheBreak(t *testing.T) {
	for kind, want := range map[string]string{
		"edited":    "Row #12 was edited",
		"deleted":   "The row before #12 was deleted",
		"reordered": "points to row #14",
		"truncated": "records #14",
	} {
		doc := render(t, VerifyResult(&Verify{Checked: 11, Broken: true, BreakID: 12, BreakKind: kind, Other: 14}))
		if got := doc.Find(`[data-testid="audit-verify-broken"]`).Text(); !strings.Contains(got, want) || !strings.Contains(got, "11 row(s)") {
			t.Errorf("%s: %q, want %q", kind, got, want)
		}
	}
	doc := render(t, VerifyResult(&Verify{Checked: 5, HeadID: 5, HeadHash: "abc"}))
	if got := doc.Find(`[data-testid="audit-verify-ok"]`).Text(); !strings.Contains(got, "5 row(s) checked") || !strings.Contains(got, "abc") {
		t.Errorf("whole chain: %q", got)
	}
}
