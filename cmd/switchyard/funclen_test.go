package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// maxFuncBody is the longest body, in lines between the braces, a
// hand-written function may have: past it a reader can no longer hold the
// function in view, and it is usually doing several things that want names.
const maxFuncBody = 80

// longFuncs are the functions still over maxFuncBody, each waiting to be
// split. The list only shrinks: an entry whose function is back under the
// bound (or gone) fails the test, so it is removed with the split.
var longFuncs = map[string]string{
	// Split in parallel work on the router, the front doors and the journey.
	"web/routes.go:Server.routes":                                  "route table; to become a flat table per area",
	"routing/frontdoor/parse.go:ParseChatRequest":                  "front-door parsing",
	"routing/frontdoor/responses_request.go:ParseResponsesRequest": "front-door parsing",
	"routing/execute.go:Executor.run":                              "journey steps",
	// Translators: one protocol pair each, long because the pair is.
	"routing/adapter/chat_anthropic.go:Anthropic.translate":       "translator",
	"routing/adapter/chat_anthropic.go:anthropicStream.handle":    "translator",
	"routing/adapter/chat_gemini.go:geminiTranslate":              "translator",
	"routing/frontdoor/responses_input.go:responsesState.message": "front-door parsing",
	// Being split now.
	// Not yet split.
	"routing/config/configtest/large.go:Generate": "test fixture generator",
	"store/storetest/pgbouncer.go:PgBouncer":      "test support",
	"handlers/onboarding.go:Onboarding.readPost":  "handler",
	"handlers/calllogs.go:callLogFilter":          "handler",
	"handlers/testroute.go:Handler.explainRoute":  "handler",
	"handlers/testroute.go:sendResult":            "handler",
	"routing/callermsg.go:Told.Text":              "caller messages",
	"e2e/bench/loadgen/main.go:main":              "load generator",
}

// funcName is how longFuncs names a function: Recv.Name for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// bodyLines counts the lines strictly between a function's braces.
func bodyLines(fset *token.FileSet, fd *ast.FuncDecl) int {
	return fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Body.Lbrace).Line - 1
}

// longFunctions parses every hand-written, non-test Go file under root and
// returns "path:Func" → body lines for each function over max.
func longFunctions(t *testing.T, root string, max int) map[string]int {
	t.Helper()
	long := map[string]int{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := bodyLines(fset, fd); n > max {
				long[filepath.ToSlash(rel)+":"+funcName(fd)] = n
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return long
}

func TestLayoutFunctionLength(t *testing.T) {
	long := longFunctions(t, repoRoot(t), maxFuncBody)
	var over, stale []string
	for name, n := range long {
		if _, ok := longFuncs[name]; !ok {
			over = append(over, name+" ("+strconv.Itoa(n)+" lines)")
		}
	}
	for name := range longFuncs {
		if _, ok := long[name]; !ok {
			stale = append(stale, name)
		}
	}
	sort.Strings(over)
	sort.Strings(stale)
	if len(over) > 0 {
		t.Errorf("functions over %d lines of body; split them:\n%s", maxFuncBody, strings.Join(over, "\n"))
	}
	if len(stale) > 0 {
		t.Errorf("longFuncs names functions no longer over %d lines; remove them:\n%s", maxFuncBody, strings.Join(stale, "\n"))
	}
}

func TestLongFunctionsCountsBodyLines(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nfunc short() {\n\t_ = 1\n}\n\nfunc (r *T) long() {\n" +
		strings.Repeat("\t_ = 1\n", 4) + "}\n\ntype T struct{}\n"
	writeFile(t, filepath.Join(dir, "p.go"), src)
	writeFile(t, filepath.Join(dir, "p_test.go"), "package p\n\nfunc TestX() {\n"+strings.Repeat("\t_ = 1\n", 9)+"}\n")
	writeFile(t, filepath.Join(dir, "gen.go"), "// Code generated by x. DO NOT EDIT.\n\npackage p\n\nfunc gen() {\n"+strings.Repeat("\t_ = 1\n", 9)+"}\n")
	got := longFunctions(t, dir, 3)
	if len(got) != 1 || got["p.go:T.long"] != 4 {
		t.Errorf("longFunctions = %v, want only p.go:T.long with 4 lines", got)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
