package reason

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// declaredCodes are the constants of type Code declared in reason.go, read
// from the source so a new code cannot be missing from Codes.
func declaredCodes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reason.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Code" {
				for _, n := range vs.Names {
					names = append(names, n.Name)
				}
			}
		}
	}
	return names
}

func TestCodesListsEveryCode(t *testing.T) {
	declared := declaredCodes(t)
	if len(declared) == 0 {
		t.Fatal("no Code constants found in reason.go")
	}
	if len(declared) != len(Codes) {
		t.Errorf("reason.go declares %d codes %v, Codes lists %d", len(declared), declared, len(Codes))
	}
	seen := map[Code]bool{}
	for _, c := range Codes {
		if seen[c] {
			t.Errorf("Codes lists %q twice", c)
		}
		seen[c] = true
	}
}

// Every code has the caller's words: String never falls back to the bare
// code.
func TestEveryCodeHasCallerWords(t *testing.T) {
	for _, c := range Codes {
		r := Reason{Code: c, Detail: "detail", Provider: "p", Capability: "vision", Kind: "chat", Want: "embedding", Max: 3, Protocol: "openai", Param: "n", Tier: "fast", Percent: 10, PerSecond: 1, WindowMS: 10000}
		if got, ok := r.words(); !ok || got == "" {
			t.Errorf("Reason{Code: %q} has no caller words", c)
		}
	}
}
