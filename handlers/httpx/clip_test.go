package httpx

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc" + Truncated},
		{"aé", 2, "a" + Truncated}, // é is two bytes: never cut inside it
		{"éé", 3, "é" + Truncated},
		{"abc", 0, Truncated},
	} {
		if got := Clip(tc.in, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
	long := strings.Repeat("€", 1<<20)
	if got := Clip(long, ShownLen); len(got) > ShownLen+len(Truncated) || !utf8.ValidString(got) {
		t.Fatalf("a 3 MB string clipped to %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
	}
}
