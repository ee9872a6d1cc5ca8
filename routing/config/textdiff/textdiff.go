// Package textdiff computes readable line diffs of snapshot texts with
// sergi/go-diff, folding long runs of unchanged lines.
package textdiff

import (
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Op is what happened to a line.
type Op int

const (
	Equal Op = iota
	Insert
	Delete
	Fold // a run of unchanged lines that was folded away
)

// Line is one line of a diff.
type Line struct {
	Op     Op
	Text   string
	Folded int // for Fold: how many unchanged lines it stands for
	// OldNo and NewNo are 1-based line numbers (0 when absent on that side).
	OldNo, NewNo int
}

// Lines returns the line diff of a → b.
func Lines(a, b string) []Line {
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(a, b)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines)
	var out []Line
	oldNo, newNo := 0, 0
	for _, d := range diffs {
		text := strings.TrimSuffix(d.Text, "\n")
		for _, l := range strings.Split(text, "\n") {
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				oldNo++
				newNo++
				out = append(out, Line{Op: Equal, Text: l, OldNo: oldNo, NewNo: newNo})
			case diffmatchpatch.DiffInsert:
				newNo++
				out = append(out, Line{Op: Insert, Text: l, NewNo: newNo})
			case diffmatchpatch.DiffDelete:
				oldNo++
				out = append(out, Line{Op: Delete, Text: l, OldNo: oldNo})
			}
		}
	}
	return out
}

// Changed counts inserted and deleted lines.
func Changed(lines []Line) (ins, del int) {
	for _, l := range lines {
		switch l.Op {
		case Insert:
			ins++
		case Delete:
			del++
		}
	}
	return ins, del
}

// FoldContext keeps context unchanged lines around each change and replaces
// longer unchanged runs with one Fold line.
func FoldContext(lines []Line, context int) []Line {
	keep := make([]bool, len(lines))
	for i, l := range lines {
		if l.Op == Equal {
			continue
		}
		for j := max(0, i-context); j <= min(len(lines)-1, i+context); j++ {
			keep[j] = true
		}
	}
	var out []Line
	for i := 0; i < len(lines); {
		if keep[i] || lines[i].Op != Equal {
			out = append(out, lines[i])
			i++
			continue
		}
		j := i
		for j < len(lines) && !keep[j] && lines[j].Op == Equal {
			j++
		}
		out = append(out, Line{Op: Fold, Folded: j - i})
		i = j
	}
	return out
}

// Unified renders lines as unified-diff-like text ("+", "-", " ").
func Unified(lines []Line) string {
	var b strings.Builder
	for _, l := range lines {
		switch l.Op {
		case Insert:
			b.WriteString("+" + l.Text + "\n")
		case Delete:
			b.WriteString("-" + l.Text + "\n")
		case Equal:
			b.WriteString(" " + l.Text + "\n")
		case Fold:
			b.WriteString("@@ " + itoa(l.Folded) + " unchanged lines @@\n")
		}
	}
	return b.String()
}

func itoa(n int) string {
	var buf [20]byte
	i := len(buf)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return string(buf[i:])
}
