package static

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The README and the operator manual (static/manual/*.md) stay true to the
// repository: every path and test they name exists, every relative link
// reaches a page (and a heading, when it names one), the manual's pages link
// only each other (the console serves them at /manual/<page>.md), and both
// the manual's index and the README list every page.

// repoRoot is the repository, seen from this package's directory.
const repoRoot = ".."

// manualDir is where the manual's pages live, relative to repoRoot.
const manualDir = "static/manual"

// A doc is one markdown file: its path relative to repoRoot and its text.
type doc struct {
	path, text string
}

func readDocs(t *testing.T) []doc {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, manualDir, "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no manual pages in %s (%v)", manualDir, err)
	}
	var docs []doc
	for _, p := range append([]string{filepath.Join(repoRoot, "README.md")}, pages...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, p)
		docs = append(docs, doc{filepath.ToSlash(rel), string(b)})
	}
	return docs
}

var (
	fenceRe    = regexp.MustCompile("(?m)^```")
	codeSpanRe = regexp.MustCompile("`([^`\n]+)`")
	linkRe     = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)\)`)
	headingRe  = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t#]*$`)
	testNameRe = regexp.MustCompile(`^(Test|Benchmark|Fuzz|Example)[A-Z0-9_]\w*$`)
	testFuncRe = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)
)

// prose is the text outside fenced code blocks.
func prose(text string) string {
	parts := fenceRe.Split(text, -1)
	var b strings.Builder
	for i := 0; i < len(parts); i += 2 {
		b.WriteString(parts[i])
	}
	return b.String()
}

// fences are the fenced code blocks, each with the heading above it.
func fences(text string) map[string][]string {
	out := map[string][]string{}
	parts := fenceRe.Split(text, -1)
	heading := ""
	for i, p := range parts {
		if i%2 == 0 {
			if hs := headingRe.FindAllStringSubmatch(p, -1); len(hs) > 0 {
				heading = hs[len(hs)-1][1]
			}
			continue
		}
		// Drop the info string (the rest of the opening fence's line).
		if _, body, ok := strings.Cut(p, "\n"); ok {
			out[heading] = append(out[heading], body)
		}
	}
	return out
}

// anchor is GitHub's anchor for a heading: its text without markup,
// lowercased, punctuation dropped and spaces turned into hyphens.
func anchor(heading string) string {
	h := linkRe.ReplaceAllString(heading, "$1")
	h = strings.ReplaceAll(h, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors are the anchors of every heading of a doc; a repeated heading
// gets -1, -2, … as on GitHub.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRe.FindAllStringSubmatch(prose(text), -1) {
		a := anchor(m[1])
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// repo knows the repository's top-level names and the tests of every
// package.
type repo struct {
	top   map[string]bool
	tests map[string]map[string]bool // directory (slash path) → test functions
}

func loadRepo(t *testing.T) *repo {
	t.Helper()
	r := &repo{top: map[string]bool{}, tests: map[string]map[string]bool{}}
	entries, err := os.ReadDir(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && e.Name() != "bin" {
			r.top[e.Name()] = true
		}
	}
	err = filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != repoRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, filepath.Dir(p))
		dir := filepath.ToSlash(rel)
		for _, m := range testFuncRe.FindAllStringSubmatch(string(b), -1) {
			if r.tests[dir] == nil {
				r.tests[dir] = map[string]bool{}
			}
			r.tests[dir][m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *repo) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(rel)))
	return err == nil
}

// testAnywhere reports whether a test function of that name exists in
// some package.
func (r *repo) testAnywhere(name string) bool {
	for _, fns := range r.tests {
		if fns[name] {
			return true
		}
	}
	return false
}

// check says what is wrong with a code span that names a repository path
// or a test ("" when nothing is, or when it names neither). A path may be a
// file or folder, a Go package pattern (routing/...), a glob
// (routing/journey*.go), or a package's folder followed by one of its tests
// (e2e/TestName, with any subtest after it).
func (r *repo) check(span string) string {
	if strings.ContainsAny(span, " \t") {
		return ""
	}
	if testNameRe.MatchString(span) {
		if !r.testAnywhere(span) {
			return "no package has a test function " + span
		}
		return ""
	}
	first, _, _ := strings.Cut(span, "/")
	if !r.top[first] {
		return ""
	}
	p := strings.TrimSuffix(strings.TrimSuffix(span, "/..."), "/")
	if strings.ContainsAny(p, "*?[") {
		matches, err := filepath.Glob(filepath.Join(repoRoot, filepath.FromSlash(p)))
		if err != nil || len(matches) == 0 {
			return "no file matches " + span
		}
		return ""
	}
	if r.exists(p) {
		return ""
	}
	segs := strings.Split(p, "/")
	for i := len(segs) - 1; i > 0; i-- {
		dir := strings.Join(segs[:i], "/")
		if !r.exists(dir) {
			continue
		}
		if testNameRe.MatchString(segs[i]) {
			if !r.tests[dir][segs[i]] {
				return dir + " has no test function " + segs[i]
			}
			return ""
		}
		break
	}
	return span + " does not exist"
}

// layoutPaths are the folders the README's Layout block names: a line's
// leading names (the first word, and the words after it that end in "/"),
// each under the last name two spaces less indented.
func layoutPaths(block string) []string {
	var out []string
	parents := map[int]string{}
	for _, line := range strings.Split(block, "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		words := strings.Fields(line)
		if len(words) == 0 || indent%2 != 0 || indent > 4 {
			continue
		}
		parent := ""
		if indent > 0 {
			if parent = parents[indent-2]; parent == "" {
				continue
			}
		}
		for i, w := range words {
			if i > 0 && !strings.HasSuffix(w, "/") {
				break
			}
			p := path.Join(parent, strings.TrimSuffix(w, "/"))
			out = append(out, p)
			if i == 0 {
				parents[indent] = p
			}
		}
	}
	return out
}

func TestDocumentedPathsAndTestsExist(t *testing.T) {
	r := loadRepo(t)
	for _, d := range readDocs(t) {
		for _, m := range codeSpanRe.FindAllStringSubmatch(prose(d.text), -1) {
			if msg := r.check(m[1]); msg != "" {
				t.Errorf("%s names `%s`: %s", d.path, m[1], msg)
			}
		}
		if d.path != "README.md" {
			continue
		}
		blocks := fences(d.text)["Layout"]
		if len(blocks) != 1 {
			t.Fatalf("README.md: want one code block under its Layout heading, found %d", len(blocks))
		}
		paths := layoutPaths(blocks[0])
		if len(paths) < 10 {
			t.Fatalf("README.md's Layout names only %d folders (%v): is its format still the one layoutPaths reads?", len(paths), paths)
		}
		for _, p := range paths {
			if !r.exists(p) {
				t.Errorf("README.md's Layout names %s, which does not exist", p)
			}
		}
	}
}

func TestDocumentedLinksResolve(t *testing.T) {
	docs := readDocs(t)
	texts := map[string]string{}
	for _, d := range docs {
		texts[d.path] = d.text
	}
	for _, d := range docs {
		inManual := strings.HasPrefix(d.path, manualDir+"/")
		for _, m := range linkRe.FindAllStringSubmatch(prose(d.text), -1) {
			target := m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if strings.HasPrefix(target, "/") {
				t.Errorf("%s links %s: use a relative link, which works on a git forge and in the console", d.path, target)
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := d.path
			if file != "" {
				dest = path.Join(path.Dir(d.path), file)
			}
			if inManual && !strings.HasPrefix(dest, manualDir+"/") {
				t.Errorf("%s links %s, outside the manual: the console serves only %s/*.md", d.path, target, manualDir)
				continue
			}
			if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(dest))); err != nil {
				t.Errorf("%s links %s, which does not exist", d.path, target)
				continue
			}
			if frag == "" {
				continue
			}
			text, ok := texts[dest]
			if !ok {
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s links %s: a #fragment on a file that is not markdown", d.path, target)
					continue
				}
				b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(dest)))
				if err != nil {
					t.Fatal(err)
				}
				text = string(b)
			}
			if !anchors(text)[frag] {
				t.Errorf("%s links %s: %s has no heading with the anchor #%s", d.path, target, dest, frag)
			}
		}
	}
}

// TestEveryPageIsListed: the manual's index (in reading order) and the
// README's "Where to read on" each link every page of the manual.
func TestEveryPageIsListed(t *testing.T) {
	docs := readDocs(t)
	var pages []string
	for _, d := range docs {
		if strings.HasPrefix(d.path, manualDir+"/") && d.path != manualDir+"/index.md" {
			pages = append(pages, d.path)
		}
	}
	for _, d := range docs {
		if d.path != "README.md" && d.path != manualDir+"/index.md" {
			continue
		}
		var linked []string
		for _, m := range linkRe.FindAllStringSubmatch(prose(d.text), -1) {
			file, _, _ := strings.Cut(m[2], "#")
			if file != "" && !strings.Contains(file, "://") {
				linked = append(linked, path.Join(path.Dir(d.path), file))
			}
		}
		for _, p := range pages {
			if !slices.Contains(linked, p) {
				t.Errorf("%s does not link the manual page %s", d.path, p)
			}
		}
	}
}

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Retry budget": "retry-budget",
		"The Anthropic front door: `POST /v1/messages`": "the-anthropic-front-door-post-v1messages",
		"Cloud vendors (Azure, Bedrock, Vertex)":        "cloud-vendors-azure-bedrock-vertex",
		"What `make bench` prints":                      "what-make-bench-prints",
		"Request fields: the field policy":              "request-fields-the-field-policy",
		"[Linked](routing.md) heading with `code_name`": "linked-heading-with-code_name",
		"Configuration: draft, dry-run, versions":       "configuration-draft-dry-run-versions",
		"Limits and Redis round trips":                  "limits-and-redis-round-trips",
		"Priority classes and queues":                   "priority-classes-and-queues",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
	got := anchors("# A\n## Same\n```\n# not a heading\n```\n## Same\n")
	for _, want := range []string{"a", "same", "same-1"} {
		if !got[want] {
			t.Errorf("anchors: no %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("anchors: a line inside a code block became a heading")
	}
}

func TestLayoutPaths(t *testing.T) {
	block := "cmd/switchyard    the binary\n  gateway/          assembles\n  worker/\nrouting/   the journey\n  config/  model\n    onboarding/ textdiff/  templates\n                   a continuation line/\n  queue/ live/ record/ the queues\nstatic/   assets; manual/\n"
	want := []string{"cmd/switchyard", "cmd/switchyard/gateway", "cmd/switchyard/worker", "routing", "routing/config",
		"routing/config/onboarding", "routing/config/textdiff", "routing/queue", "routing/live", "routing/record", "static"}
	if got := layoutPaths(block); !slices.Equal(got, want) {
		t.Errorf("layoutPaths:\n got %v\nwant %v", got, want)
	}
}
