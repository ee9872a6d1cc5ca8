package calllogs

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"switchyard/routing/record"
	"switchyard/views/layout"
)

func renderDetail(t *testing.T, p DetailPage) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	if err := Detail(p).Render(t.Context(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func byTestID(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(`[data-testid="` + id + `"]`)
}

func words(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

// The detail shows the requested model with the alias it resolved through
// and where that alias sent it, and the fields the vendor did not get —
// nothing of either when the call had none.
func TestDetailShowsAliasAndDroppedFields(t *testing.T) {
	rec := record.Call{At: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), RequestID: "r-1", Status: record.StatusOK,
		RouteGroup: "default", Tier: "deep", RequestedModel: "claude-opus-5-5", ModelAlias: "claude-opus-*", LogicModel: "big",
		DroppedFields: []string{"cache_control", "messages[1].content[0].type"}}
	doc := renderDetail(t, DetailPage{Page: layout.Page{Title: "Call"}, Rec: rec, Alias: AliasTarget{Tier: "deep"}})
	if got := words(byTestID(doc, "calllog-field-requested-model")); got != "claude-opus-5-5 → alias claude-opus-* → deep" {
		t.Fatalf("requested model: %q", got)
	}
	if got := byTestID(doc, "calllog-field-model-alias").Text(); got != "claude-opus-*" {
		t.Fatalf("alias: %q", got)
	}
	var dropped []string
	byTestID(doc, "calllog-dropped-field").Each(func(_ int, s *goquery.Selection) { dropped = append(dropped, s.Text()) })
	if strings.Join(dropped, "|") != "cache_control|messages[1].content[0].type" {
		t.Fatalf("dropped fields: %q", dropped)
	}
	if !strings.Contains(byTestID(doc, "calllog-fields").Text(), "Fields the vendor did not get") {
		t.Fatal("the dropped fields have no heading")
	}

	// An alias to a logic model; an alias whose version is not at hand.
	doc = renderDetail(t, DetailPage{Rec: rec, Alias: AliasTarget{LogicModel: "big"}})
	if got := words(byTestID(doc, "calllog-field-requested-model")); got != "claude-opus-5-5 → alias claude-opus-* → logic model big" {
		t.Fatalf("to a logic model: %q", got)
	}
	doc = renderDetail(t, DetailPage{Rec: rec})
	if got := words(byTestID(doc, "calllog-field-requested-model")); got != "claude-opus-5-5 → alias claude-opus-*" {
		t.Fatalf("target unknown: %q", got)
	}

	// No alias, nothing dropped: the plain model, no list.
	rec.ModelAlias, rec.DroppedFields = "", nil
	doc = renderDetail(t, DetailPage{Rec: rec})
	if got := words(byTestID(doc, "calllog-field-requested-model")); got != "claude-opus-5-5" {
		t.Fatalf("without an alias: %q", got)
	}
	if byTestID(doc, "calllog-field-model-alias").Length() != 0 || byTestID(doc, "calllog-field-dropped").Length() != 0 ||
		strings.Contains(doc.Text(), "did not get") {
		t.Fatal("an empty alias or dropped-field list is shown")
	}
}

// The dropped-field filter is part of a search's URL and of the way back
// from a detail page.
func TestDroppedFieldFilterTravels(t *testing.T) {
	f := Filter{Range: "24h", DroppedField: "cache_control"}
	if u := f.URL(""); !strings.Contains(u, "dropped_field=cache_control") {
		t.Fatalf("search URL %s", u)
	}
	if b := Back("range=24h&dropped_field=cache_control&evil=1"); b != "/call-logs?dropped_field=cache_control&range=24h" {
		t.Fatalf("back %s", b)
	}
}
