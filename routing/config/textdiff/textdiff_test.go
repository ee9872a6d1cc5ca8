package textdiff

import (
	"strings"
	"testing"
)

func TestLinesAndFold(t *testing.T) {
	var a, b []string
	for i := range 30 {
		a = append(a, "line "+itoa(i))
	}
	b = append(b, a...)
	b[10] = "line 10 changed"
	b = append(b[:20], b[21:]...) // delete line 20
	lines := Lines(strings.Join(a, "\n")+"\n", strings.Join(b, "\n")+"\n")
	ins, del := Changed(lines)
	if ins != 1 || del != 2 {
		t.Fatalf("ins=%d del=%d", ins, del)
	}
	folded := FoldContext(lines, 2)
	got := Unified(folded)
	want := "@@ 8 unchanged lines @@\n line 8\n line 9\n-line 10\n+line 10 changed\n line 11\n line 12\n@@ 5 unchanged lines @@\n line 18\n line 19\n-line 20\n line 21\n line 22\n@@ 7 unchanged lines @@\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	for _, l := range lines {
		if l.Op == Insert && l.NewNo != 11 {
			t.Fatalf("inserted line number %d", l.NewNo)
		}
	}
}

func TestIdentical(t *testing.T) {
	lines := Lines("a\nb\n", "a\nb\n")
	if ins, del := Changed(lines); ins+del != 0 {
		t.Fatal("identical texts differ")
	}
	if f := FoldContext(lines, 3); len(f) != 1 || f[0].Op != Fold || f[0].Folded != 2 {
		t.Fatalf("fold of identical: %+v", f)
	}
}
