package reason

import "testing"

// TestWrongKindGrammar: the 503 of a request no candidate's kind can serve
// reads "this is an embedding request", not "a embedding".
func TestWrongKindGrammar(t *testing.T) {
	for _, c := range []struct{ kind, want, words string }{
		{"chat", "embedding", "is a chat model; this is an embedding request"},
		{"embedding", "chat", "is an embedding model; this is a chat request"},
	} {
		if got := (Reason{Code: WrongKind, Kind: c.kind, Want: c.want}).String(); got != c.words {
			t.Errorf("%s for %s: %q, want %q", c.kind, c.want, got, c.words)
		}
	}
}
