// Package manual renders the operator manual — the markdown pages embedded
// under static/manual — into console pages. Pages link to each other by
// relative file name (settings.md#redis-topologies), which resolves both
// on a git forge and under /manual/ in the console; heading anchors follow
// the forge's rule, so a fragment works in both.
package manual

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"sort"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Index is the page /manual/ opens: the table of contents.
const Index = "index.md"

// Page is one rendered manual page.
type Page struct {
	Name  string // file name, e.g. "settings.md"
	Title string // its first heading
	HTML  string // rendered body; raw HTML in the markdown is not passed
}

// Book is every page of the manual, rendered once.
type Book struct {
	pages map[string]Page
	names []string
}

// Load renders every *.md file at the root of fsys. A manual without an
// index page is refused: /manual/ would have nothing to open.
func Load(fsys fs.FS) (*Book, error) {
	names, err := fs.Glob(fsys, "*.md")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	md := goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithAutoHeadingID(), parser.WithASTTransformers(util.Prioritized(unlinkFiles{}, 100))),
	)
	b := &Book{pages: map[string]Page{}, names: names}
	for _, name := range names {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		p, err := render(md, name, src)
		if err != nil {
			return nil, fmt.Errorf("manual page %s: %w", name, err)
		}
		b.pages[name] = p
	}
	if _, ok := b.pages[Index]; !ok {
		return nil, errors.New("the manual has no " + Index)
	}
	return b, nil
}

func render(md goldmark.Markdown, name string, src []byte) (Page, error) {
	ctx := parser.NewContext(parser.WithIDs(newSlugs()))
	doc := md.Parser().Parse(text.NewReader(src), parser.WithContext(ctx))
	var buf bytes.Buffer
	if err := md.Renderer().Render(&buf, src, doc); err != nil {
		return Page{}, err
	}
	return Page{Name: name, Title: title(doc, src, name), HTML: scrollTables(buf.String())}, nil
}

// scrollTables puts each table in a frame that scrolls sideways on a narrow
// screen; the frame, like a code block, takes focus so a keyboard can
// scroll it too.
func scrollTables(html string) string {
	html = strings.ReplaceAll(html, "<table>", `<div class="table-wrap" tabindex="0" role="region" aria-label="Table" data-scroll-ok><table>`)
	html = strings.ReplaceAll(html, "</table>", "</table></div>")
	return strings.ReplaceAll(html, "<pre>", `<pre tabindex="0">`)
}

// title is the text of the page's first heading, or its file name.
func title(doc ast.Node, src []byte, name string) string {
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if h, ok := n.(*ast.Heading); ok {
			return plainText(h, src)
		}
	}
	return strings.TrimSuffix(name, ".md")
}

func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			b.Write(t.Segment.Value(src))
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// Page returns the named page ("" is the index).
func (b *Book) Page(name string) (Page, bool) {
	if name == "" {
		name = Index
	}
	p, ok := b.pages[name]
	return p, ok
}

// Pages lists every page, by file name.
func (b *Book) Pages() []Page {
	out := make([]Page, 0, len(b.names))
	for _, n := range b.names {
		out = append(out, b.pages[n])
	}
	return out
}

// unlinkFiles keeps links to other manual pages and to the web, and turns
// links to repository files (../../routing/journey.go), which the console
// cannot serve, into their text.
type unlinkFiles struct{}

func (unlinkFiles) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
	var drop []*ast.Link
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if l, ok := n.(*ast.Link); ok && entering && !servable(string(l.Destination)) {
			drop = append(drop, l)
		}
		return ast.WalkContinue, nil
	})
	for _, l := range drop {
		parent := l.Parent()
		for c := l.FirstChild(); c != nil; {
			next := c.NextSibling()
			parent.InsertBefore(parent, l, c)
			c = next
		}
		parent.RemoveChild(parent, l)
	}
}

// servable reports whether a link destination works in the console: a
// fragment, an absolute URL or path, or another manual page.
func servable(dest string) bool {
	u, err := url.Parse(dest)
	if err != nil {
		return false
	}
	if u.Scheme != "" || strings.HasPrefix(dest, "/") || u.Path == "" {
		return true
	}
	return !strings.Contains(u.Path, "/") && path.Ext(u.Path) == ".md"
}

// slugs makes heading anchors the way git forges do: lower case, letters,
// digits, '-' and '_' kept, spaces to '-', everything else dropped, and a
// repeated anchor numbered (-1, -2, …).
type slugs struct{ seen map[string]int }

func newSlugs() *slugs { return &slugs{seen: map[string]int{}} }

// Slug is a heading's anchor, without the numbering of repeats.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func (s *slugs) Generate(value []byte, _ ast.NodeKind) []byte {
	base := Slug(string(value))
	id := base
	if n, ok := s.seen[base]; ok {
		id = fmt.Sprintf("%s-%d", base, n+1)
		s.seen[base] = n + 1
	} else {
		s.seen[base] = 0
	}
	return []byte(id)
}

func (s *slugs) Put(value []byte) { s.seen[string(value)] = 0 }
