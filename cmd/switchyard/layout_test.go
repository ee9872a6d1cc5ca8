package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The layout rules of the repository, checked on the real import graph so a
// wrong arrow fails the build's tests rather than waiting for review.

// pkg is one package of the module with everything it imports, test files
// included.
type pkg struct {
	ImportPath   string
	Name         string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

const module = "switchyard"

// under reports whether path is root or lies beneath it.
func under(path, root string) bool {
	return path == root || strings.HasPrefix(path, root+"/")
}

// importRule forbids packages under from from importing anything under one of
// the forbidden roots.
type importRule struct {
	name      string
	from      func(importPath string) bool
	forbidden []string
	// buildOnly: the rule holds for what the package's build imports; its
	// tests may import the forbidden packages.
	buildOnly bool
	// except are patterns under a forbidden root that stay allowed.
	except []string
}

func within(root string) func(string) bool {
	return func(p string) bool { return under(p, root) }
}

// Forbidden imports are patterns: "x/..." is x and everything under it, a
// plain path is that package only.
var importRules = []importRule{
	{
		name: "routing imports no framework, database or outer layer",
		from: within(module + "/routing"),
		forbidden: []string{
			"github.com/labstack/echo/...", "github.com/jmoiron/sqlx/...", "github.com/lib/pq/...",
			"github.com/redis/go-redis/...",
			module + "/store/...", module + "/handlers/...", module + "/views/...", module + "/web/...", module + "/cmd/...",
		},
	},
	{
		name:      "views render view models and import no store, handlers, web or cmd",
		from:      within(module + "/views"),
		forbidden: []string{module + "/store/...", module + "/handlers/...", module + "/web/...", module + "/cmd/..."},
	},
	{
		name:      "store imports no handlers, views, web or cmd",
		from:      within(module + "/store"),
		forbidden: []string{module + "/handlers/...", module + "/views/...", module + "/web/...", module + "/cmd/..."},
	},
	{
		// web assembles the handlers, so they may not import it; its leaf
		// helpers (web/metrics, web/webtest) import nothing of handlers'.
		name:      "handlers import no web server or cmd",
		from:      within(module + "/handlers"),
		forbidden: []string{module + "/web", module + "/cmd/..."},
	},
	{
		// Handlers reach storage only through the small interfaces each
		// console area declares (ProviderStore in handlers/providers.go,
		// CallLogReader in handlers/calllogs.go, LoginGuard in
		// handlers/signin.go, …), which the assembly fills. Their build may
		// import a store package only for the values it passes; the excepted
		// ones are named with why, and TestHandlersCallNoStoreIO checks that
		// handlers use them for values only. Their tests build a real store
		// to run against PostgreSQL.
		name:      "handlers import no store package but the value packages: storage only through the interfaces they declare",
		from:      within(module + "/handlers"),
		forbidden: []string{module + "/store/..."},
		except:    handlerValuePackages,
		buildOnly: true,
	},
	{
		// The test vendor and the end-to-end harness serve tests, the
		// test-support packages (…test) and the demo's main only.
		name: "only tests, test support and mains import e2e",
		from: func(p string) bool {
			return !under(p, module+"/cmd") && !under(p, module+"/e2e") && !strings.HasSuffix(p, "test")
		},
		forbidden: []string{module + "/e2e/..."},
		buildOnly: true,
	},
	{
		name:      "nothing outside cmd imports cmd",
		from:      func(p string) bool { return !under(p, module+"/cmd") },
		forbidden: []string{module + "/cmd/..."},
	},
}

// handlerValuePackages are the store packages whose values handlers pass
// through their interfaces; their queries are never called from handlers.
var handlerValuePackages = []string{
	module + "/store/rows",             // the rows the store interfaces take and return; no queries
	module + "/store/calllog",          // the call-log filter, rows and series types, and the filter's value rules
	module + "/store/redis/keypool",    // provider keys' runtime states (KeyState, its statuses)
	module + "/store/redis/limits",     // a caller's limit request, decision and usage
	module + "/store/redis/loginguard", // sign-in verdicts, lock kinds and thresholds, and name normalising
}

// matches reports whether importPath is matched by pattern.
func matches(importPath, pattern string) bool {
	if root, ok := strings.CutSuffix(pattern, "/..."); ok {
		return under(importPath, root)
	}
	return importPath == pattern
}

// violations names every import that breaks a layout rule, as
// "pkg -> import (rule)", sorted and without repeats.
func violations(pkgs []pkg) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range pkgs {
		all := slices.Concat(p.Imports, p.TestImports, p.XTestImports)
		for _, r := range importRules {
			if !r.from(p.ImportPath) {
				continue
			}
			imports := all
			if r.buildOnly {
				imports = p.Imports
			}
			for _, imp := range imports {
				for _, f := range r.forbidden {
					if !matches(imp, f) || slices.ContainsFunc(r.except, func(e string) bool { return matches(imp, e) }) {
						continue
					}
					v := p.ImportPath + " -> " + imp + " (" + r.name + ")"
					if !seen[v] {
						seen[v] = true
						out = append(out, v)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestViolationsNamesEachForbiddenArrow(t *testing.T) {
	forbidden := []struct{ from, imp string }{
		{"switchyard/routing", "github.com/labstack/echo/v4"},
		{"switchyard/routing/config", "github.com/jmoiron/sqlx"},
		{"switchyard/routing/adapter", "github.com/lib/pq"},
		{"switchyard/routing/live", "github.com/redis/go-redis/v9"},
		{"switchyard/routing/breaker", "switchyard/store"},
		{"switchyard/routing/health", "switchyard/store/redis/healthboard"},
		{"switchyard/routing/record", "switchyard/handlers"},
		{"switchyard/routing/config/onboarding", "switchyard/views/components"},
		{"switchyard/routing/config/textdiff", "switchyard/web"},
		{"switchyard/e2e/fakevendor", "switchyard/cmd/fakeupstream"},
		{"switchyard/views/pages/models", "switchyard/store"},
		{"switchyard/views/components", "switchyard/store/calllog"},
		{"switchyard/views/layout", "switchyard/handlers/httpx"},
		{"switchyard/views/pages/auth", "switchyard/web"},
		{"switchyard/views/pages/jobs", "switchyard/web/worker"},
		{"switchyard/store", "switchyard/handlers"},
		{"switchyard/store/calllog", "switchyard/views/pages/calllogs"},
		{"switchyard/store/redis/limits", "switchyard/web/metrics"},
		{"switchyard/store/storetest", "switchyard/cmd/fakeupstream"},
		{"switchyard/handlers", "switchyard/web"},
		{"switchyard/handlers/httpx", "switchyard/web"},
		{"switchyard/handlers", "switchyard/cmd/switchyard"},
		{"switchyard/web", "switchyard/cmd/switchyard"},
		{"switchyard/e2e", "switchyard/cmd/switchyard"},
		{"switchyard/migrations", "switchyard/cmd/switchyard-keygen"},
	}
	// Build-only rules: the build may not import these, its tests may.
	buildOnly := []struct{ from, imp string }{
		{"switchyard/routing/adapter", "switchyard/e2e/fakevendor"},
		{"switchyard/web/gateway", "switchyard/e2e/fakevendor"},
		{"switchyard/handlers", "switchyard/store"},
		{"switchyard/handlers/httpx", "switchyard/store"},
		{"switchyard/handlers", "switchyard/store/secrets"},
		{"switchyard/handlers", "switchyard/store/redis/healthboard"},
		{"switchyard/handlers", "switchyard/store/storetest"},
		{"switchyard/handlers/httpx", "switchyard/store/lastgood"},
	}
	for _, f := range buildOnly {
		got := violations([]pkg{{ImportPath: f.from, Imports: []string{f.imp}}})
		if want := f.from + " -> " + f.imp + " ("; len(got) == 0 || !strings.HasPrefix(got[0], want) {
			t.Errorf("%s -> %s: got %q, want a violation starting %q", f.from, f.imp, got, want)
		}
		if got := violations([]pkg{{ImportPath: f.from, TestImports: []string{f.imp}, XTestImports: []string{f.imp}}}); len(got) != 0 {
			t.Errorf("%s -> %s from tests: got %q, want none", f.from, f.imp, got)
		}
	}
	for _, f := range forbidden {
		// Each arrow is found whichever list of the package carries it.
		for i, mk := range []func(string) pkg{
			func(imp string) pkg { return pkg{ImportPath: f.from, Imports: []string{imp}} },
			func(imp string) pkg { return pkg{ImportPath: f.from, TestImports: []string{imp}} },
			func(imp string) pkg { return pkg{ImportPath: f.from, XTestImports: []string{imp}} },
		} {
			got := violations([]pkg{mk(f.imp)})
			want := f.from + " -> " + f.imp + " ("
			if len(got) == 0 || !strings.HasPrefix(got[0], want) {
				t.Errorf("list %d: %s -> %s: got %q, want a violation starting %q", i, f.from, f.imp, got, want)
			}
		}
	}
}

func TestViolationsAllowsTheLayeredArrows(t *testing.T) {
	allowed := []pkg{
		{ImportPath: "switchyard/routing", Imports: []string{"context", "switchyard/routing/config", "switchyard/routing/record", "github.com/tidwall/gjson"}},
		{ImportPath: "switchyard/routing/adapter", TestImports: []string{"github.com/google/go-cmp/cmp"}, XTestImports: []string{"switchyard/e2e/fakevendor"}},
		// Names that only share a prefix with a forbidden root are not under it.
		{ImportPath: "switchyard/routing/config", Imports: []string{"switchyard/storefront", "switchyard/webhooks", "github.com/labstack/echoes"}},
		{ImportPath: "switchyard/views/pages/models", Imports: []string{"switchyard/views/components", "switchyard/routing/config", "github.com/a-h/templ"}},
		{ImportPath: "switchyard/store", Imports: []string{"github.com/jmoiron/sqlx", "github.com/lib/pq", "switchyard/routing/config"}, XTestImports: []string{"switchyard/store/storetest"}},
		{ImportPath: "switchyard/store/redis/limits", Imports: []string{"github.com/redis/go-redis/v9"}},
		{ImportPath: "switchyard/handlers", Imports: []string{"github.com/labstack/echo/v4", "switchyard/store/rows", "switchyard/store/calllog", "switchyard/store/redis/keypool", "switchyard/store/redis/limits", "switchyard/store/redis/loginguard", "switchyard/views/pages/models", "switchyard/routing", "switchyard/web/metrics"}, TestImports: []string{"switchyard/store", "switchyard/store/storetest"}, XTestImports: []string{"switchyard/web/webtest", "switchyard/store"}},
		{ImportPath: "switchyard/web", Imports: []string{"switchyard/handlers", "switchyard/views/layout", "switchyard/store"}},
		{ImportPath: "switchyard/cmd/switchyard", Imports: []string{"switchyard/web/gateway", "switchyard/web"}},
		{ImportPath: "switchyard/web/gateway", XTestImports: []string{"switchyard/web/gateway/gatewaytest", "switchyard/e2e/fakevendor"}},
		{ImportPath: "switchyard/cmd/fakeupstream", Imports: []string{"switchyard/e2e/fakevendor"}},
		{ImportPath: "switchyard/web/gateway/gatewaytest", Imports: []string{"switchyard/e2e/fakevendor"}},
	}
	if got := violations(allowed); len(got) != 0 {
		t.Errorf("allowed arrows reported as violations:\n%s", strings.Join(got, "\n"))
	}
}

// repoRoot is the directory holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" {
		t.Fatal("not inside the module")
	}
	return filepath.Dir(gomod)
}

func TestLayoutImportRules(t *testing.T) {
	cmd := exec.Command("go", "list", "-e", "-json", "./...")
	cmd.Dir = repoRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; expected the whole module", len(pkgs))
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
	for _, v := range notMains(pkgs) {
		t.Error(v)
	}
}

// notMains names every package under cmd/ that is not a main: cmd/ holds
// mains and their flags, and the application's assembly lives under web/.
func notMains(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		if under(p.ImportPath, module+"/cmd") && p.Name != "main" {
			out = append(out, p.ImportPath+" is package "+p.Name+" under cmd/ (only mains and their flags live there)")
		}
	}
	return out
}

func TestNotMainsNamesLibrariesUnderCmd(t *testing.T) {
	got := notMains([]pkg{
		{ImportPath: "switchyard/cmd/switchyard", Name: "main"},
		{ImportPath: "switchyard/cmd/switchyard/gateway", Name: "gateway"},
		{ImportPath: "switchyard/web/gateway", Name: "gateway"},
	})
	if len(got) != 1 || !strings.HasPrefix(got[0], "switchyard/cmd/switchyard/gateway ") {
		t.Errorf("notMains = %q, want only the library under cmd/", got)
	}
}

func TestLayoutTopLevel(t *testing.T) {
	root := repoRoot(t)
	git := func(args ...string) []string {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %s: %v (the layout check reads the checkout with git)", strings.Join(args, " "), err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	entries := map[string]bool{}
	for _, list := range [][]string{
		git("ls-files"),
		git("ls-files", "--others", "--exclude-standard"),
	} {
		for _, f := range list {
			if f == "" {
				continue
			}
			top, _, _ := strings.Cut(f, "/")
			if !strings.HasPrefix(top, ".") {
				entries[top] = true
			}
		}
	}
	want := []string{"Makefile", "README.md", "cmd", "e2e", "go.mod", "go.sum", "handlers",
		"migrations", "routing", "static", "store", "views", "web"}
	var got []string
	for e := range entries {
		got = append(got, e)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("top level of the repository:\n got  %q\n want %q", got, want)
	}
}

// storeIO names what of a store package does input/output: its exported
// functions that take a context, a database or Redis handle, and its
// exported types with a method that takes a context (the handles
// themselves, such as calllog.Queryer or loginguard.Guard).
func storeIO(t *testing.T, dir string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	io := map[string]bool{}
	doesIO := func(fields *ast.FieldList, marks ...string) bool {
		if fields == nil {
			return false
		}
		for _, f := range fields.List {
			typ := types.ExprString(f.Type)
			for _, m := range marks {
				if strings.Contains(typ, m) {
					return true
				}
			}
		}
		return false
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					if d.Name.IsExported() && doesIO(d.Type.Params, "context.Context", "Queryer", "sql.", "redis.") {
						io[d.Name.Name] = true
					}
					continue
				}
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if id, ok := recv.(*ast.Ident); ok && id.IsExported() && doesIO(d.Type.Params, "context.Context") {
					io[id.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					if it, ok := ts.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							if ft, ok := m.Type.(*ast.FuncType); ok && doesIO(ft.Params, "context.Context") {
								io[ts.Name.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return io
}

// storeIOUses names each use, in one handler source file, of what a store
// package does input/output with (ioOf maps import path to storeIO).
func storeIOUses(t *testing.T, name string, src any, ioOf map[string]map[string]bool) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	local := map[string]map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		io, ok := ioOf[p]
		if !ok {
			continue
		}
		n := path.Base(p)
		if imp.Name != nil {
			n = imp.Name.Name
		}
		local[n] = io
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && local[x.Name][sel.Sel.Name] {
			out = append(out, fset.Position(sel.Pos()).String()+": "+x.Name+"."+sel.Sel.Name)
		}
		return true
	})
	return out
}

// handlerIO reads the input/output of every value package handlers may
// import, from the repository's sources.
func handlerIO(t *testing.T, root string) map[string]map[string]bool {
	ioOf := map[string]map[string]bool{}
	for _, p := range handlerValuePackages {
		ioOf[p] = storeIO(t, filepath.Join(root, strings.TrimPrefix(p, module+"/")))
	}
	return ioOf
}

// TestHandlersCallNoStoreIO: handlers import the store's value packages for
// their values only; a query function or a database or Redis handle of one
// is reached through the interface the handler declares.
func TestHandlersCallNoStoreIO(t *testing.T) {
	root := repoRoot(t)
	ioOf := handlerIO(t, root)
	files, err := filepath.Glob(filepath.Join(root, "handlers", "*", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	top, _ := filepath.Glob(filepath.Join(root, "handlers", "*.go"))
	for _, name := range append(top, files...) {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		for _, u := range storeIOUses(t, name, nil, ioOf) {
			t.Errorf("%s: handlers reach storage through the interfaces they declare", u)
		}
	}
}

// TestStoreIOUsesNamesQueriesAndHandles: the check above finds a call-log
// query, its database handle and the Redis-backed sign-in guard, under any
// import name, and lets their value types and pure rules through.
func TestStoreIOUsesNamesQueriesAndHandles(t *testing.T) {
	ioOf := handlerIO(t, repoRoot(t))
	src := `package handlers

import (
	cl "switchyard/store/calllog"
	"switchyard/store/redis/loginguard"
)

func f(db cl.Queryer, g *loginguard.Guard) {
	_, _ = cl.Search(nil, db, cl.Filter{})
	_ = cl.ValidText("x")
	_ = loginguard.Normalize("x")
	var _ loginguard.Verdict
	_ = cl.Reader{DB: db}
}
`
	var got []string
	for _, u := range storeIOUses(t, "h.go", src, ioOf) {
		got = append(got, u[strings.LastIndex(u, " ")+1:])
	}
	want := []string{"cl.Queryer", "loginguard.Guard", "cl.Search", "cl.Reader"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
