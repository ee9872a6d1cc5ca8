package manual

import (
	"html"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"switchyard/static"
)

func book(t *testing.T, files map[string]string) *Book {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, body := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(body)}
	}
	b, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPagesRenderWithForgeAnchorsAndTitles(t *testing.T) {
	b := book(t, map[string]string{
		"index.md": "# The manual\n\n- [Calling](calling.md)\n",
		"calling.md": "# Calling the gateway\n\n## The Anthropic front door: `POST /v1/messages`\n\n## Limits\n\n## Limits\n\n" +
			"See [settings](settings.md#redis-topologies), [the journey](../../routing/journey.go) and [Go](https://go.dev).\n\n" +
			"| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>alert(1)</script>\n",
	})
	p, ok := b.Page("calling.md")
	if !ok || p.Title != "Calling the gateway" {
		t.Fatalf("page = %+v, %v", p, ok)
	}
	for _, want := range []string{
		`id="the-anthropic-front-door-post-v1messages"`, // backticks, colon and slash dropped, as a forge does
		`id="limits"`, `id="limits-1"`, // a repeated heading is numbered
		`<a href="settings.md#redis-topologies">settings</a>`, // another page: kept
		`<a href="https://go.dev">Go</a>`,                     // the web: kept
		`<div class="table-wrap" tabindex="0" role="region" aria-label="Table" data-scroll-ok><table>`,
	} {
		if !strings.Contains(p.HTML, want) {
			t.Errorf("rendered page lacks %s:\n%s", want, p.HTML)
		}
	}
	// A repository file cannot be served by the console: its link becomes text.
	if strings.Contains(p.HTML, "journey.go") || !strings.Contains(p.HTML, "the journey") {
		t.Errorf("link to a repository file not turned into text:\n%s", p.HTML)
	}
	if strings.Contains(p.HTML, "<script>") {
		t.Errorf("raw HTML passed into the page:\n%s", p.HTML)
	}
	if idx, ok := b.Page(""); !ok || idx.Name != Index {
		t.Errorf("the empty name does not open the index: %+v", idx)
	}
	if _, ok := b.Page("nope.md"); ok {
		t.Error("an unknown page was found")
	}
	if got := len(b.Pages()); got != 2 {
		t.Errorf("Pages() = %d pages, want 2", got)
	}
}

func TestManualWithoutIndexIsRefused(t *testing.T) {
	if _, err := Load(fstest.MapFS{"a.md": &fstest.MapFile{Data: []byte("# A\n")}}); err == nil {
		t.Fatal("a manual without index.md loaded")
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Retry budget (on by default)":     "retry-budget-on-by-default",
		"What `make bench` prints":         "what-make-bench-prints",
		"PostgreSQL behind PgBouncer":      "postgresql-behind-pgbouncer",
		"Request fields: the field policy": "request-fields-the-field-policy",
		"snake_case and-dashes":            "snake_case-and-dashes",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every link between the real manual's pages, as the console renders them,
// reaches a page and, with a fragment, an anchor the renderer made: the
// forge-style anchors the pages are written against are the ones served.
func TestShippedManualLinksResolveWhenRendered(t *testing.T) {
	sub, err := fs.Sub(static.Manual, "manual")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(sub)
	if err != nil {
		t.Fatal(err)
	}
	href := regexp.MustCompile(`<a href="([^"]+)"`)
	checked := 0
	for _, p := range b.Pages() {
		for _, m := range href.FindAllStringSubmatch(p.HTML, -1) {
			dest := html.UnescapeString(m[1])
			if strings.Contains(dest, "://") || strings.HasPrefix(dest, "mailto:") {
				continue
			}
			name, frag, _ := strings.Cut(dest, "#")
			target := p
			if name != "" {
				var ok bool
				if target, ok = b.Page(name); !ok {
					t.Errorf("%s links to %s: no such page", p.Name, dest)
					continue
				}
			}
			if frag != "" && !strings.Contains(target.HTML, `id="`+frag+`"`) {
				t.Errorf("%s links to %s: %s has no anchor %q", p.Name, dest, target.Name, frag)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d links; the manual links its pages far more", checked)
	}
}
