package textdiff

import (
	"math/rand/v2"
	"slices"
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

// TestLinesRebuildBothTexts checks on random edits of block-structured
// text that every diff is a true one: its equal and deleted lines are a,
// its equal and inserted lines are b, in order and numbered so.
func TestLinesRebuildBothTexts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"id: 1", "name: a", "  - x", "  - id: 2", "", "    weight: 10", "callers:", "    enabled: true", "tiers:", "b"}
	text := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return out
	}
	for i := range 500 {
		a := text(rng.IntN(60))
		b := append([]string(nil), a...)
		for range rng.IntN(8) {
			switch k := rng.IntN(3); {
			case k == 0 && len(b) > 0:
				j := rng.IntN(len(b))
				b = slices.Delete(b, j, j+1)
			case k == 1:
				b = slices.Insert(b, rng.IntN(len(b)+1), words[rng.IntN(len(words))])
			case len(b) > 0:
				b[rng.IntN(len(b))] = words[rng.IntN(len(words))]
			}
		}
		join := func(l []string) string {
			if len(l) == 0 {
				return ""
			}
			return strings.Join(l, "\n") + "\n"
		}
		ta, tb := join(a), join(b)
		var gotA, gotB []string
		for _, l := range Lines(ta, tb) {
			if l.Op != Insert {
				gotA = append(gotA, l.Text)
				if l.OldNo != len(gotA) {
					t.Fatalf("case %d: old line number %d at %d", i, l.OldNo, len(gotA))
				}
			}
			if l.Op != Delete {
				gotB = append(gotB, l.Text)
				if l.NewNo != len(gotB) {
					t.Fatalf("case %d: new line number %d at %d", i, l.NewNo, len(gotB))
				}
			}
		}
		if !slices.Equal(gotA, a) || !slices.Equal(gotB, b) {
			t.Fatalf("case %d: the diff of %q → %q does not rebuild them", i, ta, tb)
		}
	}
}

// TestLinesOfALargeSnapshotEditedInPlace: one changed line among 2,000
// list items is one deleted and one inserted line, and an item added in
// the middle is its lines inserted.
func TestLinesOfALargeSnapshotEditedInPlace(t *testing.T) {
	var a strings.Builder
	a.WriteString("format: v1\nitems:\n")
	for i := range 2000 {
		a.WriteString("  - id: " + itoa(i) + "\n    weight: 10\n    enabled: true\n")
	}
	b := strings.Replace(a.String(), "  - id: 700\n    weight: 10\n", "  - id: 700\n    weight: 20\n", 1)
	b = strings.Replace(b, "  - id: 1500\n", "  - id: new\n    weight: 5\n  - id: 1500\n", 1)
	lines := Lines(a.String(), b)
	ins, del := Changed(lines)
	if ins != 3 || del != 1 {
		t.Fatalf("ins=%d del=%d, want 3 and 1:\n%s", ins, del, Unified(FoldContext(lines, 1)))
	}
}
