package audit

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// ChangedLines keeps the changed lines with two of context on each side
// and folds the rest; an unchanged text is no change; a huge side is cut.
func TestChangedLines(t *testing.T) {
	var lines []string
	for i := range 20 {
		lines = append(lines, "  line: "+strings.Repeat("x", i))
	}
	before := strings.Join(lines, "\n") + "\n"
	after := strings.Replace(before, "  line: xxxxxxxxxx\n", "  line: changed\n", 1)
	b, a := ChangedLines(before, after)
	if !strings.Contains(b, "  line: xxxxxxxxxx\n") || strings.Contains(a, "  line: xxxxxxxxxx\n") || !strings.Contains(a, "  line: changed") {
		t.Fatalf("before %q after %q", b, a)
	}
	if n := strings.Count(b, "\n"); n != 7 { // fold, 2 context, the line, 2 context, fold
		t.Errorf("before has %d lines, want 7:\n%s", n, b)
	}
	if b, a := ChangedLines(before, before); b != "" || a != "" {
		t.Errorf("no change gave %q %q", b, a)
	}
	big := strings.Repeat("  k: v\n", maxSide)
	if b, _ := ChangedLines("", big); len(b) != 0 {
		t.Errorf("before of a creation: %q", b)
	} else if _, a := ChangedLines("", big); len(a) > maxSide+64 || !strings.Contains(a, "more lines") {
		t.Errorf("after of a huge creation: %d bytes", len(a))
	}
}

// Set, Note and Change accumulate the facts of one request.
func TestFacts(t *testing.T) {
	c := echo.New().NewContext(httptest.NewRequest("POST", "/", nil), httptest.NewRecorder())
	Set(c, Object{ID: "7"})
	Set(c, Object{Name: "app"})
	Note(c, "version 3")
	Note(c, "acknowledged default/fast")
	Change(c, "a: 1\n", "a: 2\n")
	f := Get(c)
	if f.Object.ID != "7" || f.Object.Name != "app" || f.Note != "version 3; acknowledged default/fast" || !f.Changed() {
		t.Fatalf("facts %+v", f)
	}
	if _, ok := ForRoute("HEAD", "/config/export"); ok {
		t.Error("HEAD is recorded")
	}
	if _, ok := ForRoute("POST", "/config/import"); ok || !Listed("POST", "/config/import") {
		t.Error("the import preview is recorded, or not listed")
	}
}
