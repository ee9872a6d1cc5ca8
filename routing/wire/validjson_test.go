package wire

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzValidJSON holds ValidJSON to encoding/json's answer on any input.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2,{"b":null}],"c":"\u00e9\n"}`, `{"a":1e5,"b":-0.5,"c":true,"d":false}`, "{\"a\":\"\xff\"}",
		`[]`, `{}`, `"x"`, `0`, ` 1 `, `{"a":"\"}"}`, `{"a":"\\"}`, `[1,]`, `{"a" 1}`, `01`, `1.`, `-`, `"\u12"`, "\"\x01\"",
	} {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("../adapter/testdata/*/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ValidJSON(b), json.Valid(b); got != want {
			t.Fatalf("ValidJSON(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

// Nesting at encoding/json's limit is valid; one level more is not, and
// is refused without recursing through it (this would overflow a stack
// otherwise at the sizes a body may have).
func TestValidJSONDepth(t *testing.T) {
	at := strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth)
	if !ValidJSON([]byte(at)) || !json.Valid([]byte(at)) {
		t.Fatalf("nesting of %d levels should be valid", maxJSONDepth)
	}
	over := strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)
	if ValidJSON([]byte(over)) || json.Valid([]byte(over)) {
		t.Fatalf("nesting of %d levels should not be valid", maxJSONDepth+1)
	}
	deep := strings.Repeat(`{"a":[`, 2<<20) // 12 MB of openings
	if ValidJSON([]byte(deep)) {
		t.Fatal("deep unterminated nesting is valid?")
	}
	// Brackets inside strings do not nest.
	if s := `["` + strings.Repeat("[", 3*maxJSONDepth) + `"]`; !ValidJSON([]byte(s)) {
		t.Fatal("brackets in a string counted as nesting")
	}
}
