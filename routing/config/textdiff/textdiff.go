// Package textdiff computes readable line diffs of snapshot texts with
// sergi/go-diff, folding long runs of unchanged lines.
package textdiff

import (
	"strings"
	"unicode/utf8"

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
//
// It diffs in two steps, each with go-diff over runes that stand for
// whole pieces of text: first the texts' blocks (a block starts at each
// line at the margin and at each list item, "  - ", so one block is one
// tenant, provider, logic model, route group or caller of a snapshot), then
// the lines of each run of changed blocks. Two 2 MB snapshots that differ in
// a few objects cost a diff of a few thousand blocks and of those objects'
// lines, not of 100,000 lines each; a run of changed blocks too long to diff
// line by line (an import that replaces most of a configuration) is shown
// as its blocks deleted and inserted.
func Lines(a, b string) []Line {
	la, oa := splitLines(a)
	lb, ob := splitLines(b)
	ba, bb := blocks(la), blocks(lb)
	ids := make(map[string]rune, len(ba)+len(bb))
	ra, rb := runesOf(ba, a, la, oa, ids), runesOf(bb, b, lb, ob, ids)
	d := differ{la: la, lb: lb, out: make([]Line, 0, max(len(la), len(lb))+8)}
	if ra == nil || rb == nil {
		d.lines(0, len(la), 0, len(lb))
		return d.out
	}
	dmp := diffmatchpatch.New()
	ia, ib := 0, 0     // next block of a and b
	runA, runB := 0, 0 // blocks in the current run of changes
	flush := func() {
		if runA+runB > 0 {
			d.changed(ba[ia-runA:ia], bb[ib-runB:ib])
		}
		runA, runB = 0, 0
	}
	for _, diff := range dmp.DiffMainRunes(ra, rb, false) {
		n := utf8.RuneCountInString(diff.Text)
		switch diff.Type {
		case diffmatchpatch.DiffEqual:
			flush()
			for range n {
				d.equal(ba[ia].end - ba[ia].start)
				ia++
				ib++
			}
		case diffmatchpatch.DiffDelete:
			ia += n
			runA += n
		case diffmatchpatch.DiffInsert:
			ib += n
			runB += n
		}
	}
	flush()
	return d.out
}

// span is a block: lines [start, end).
type span struct{ start, end int }

// blocks cuts lines into blocks, each starting at a line at the margin or
// at a list item of the top level.
func blocks(lines []string) []span {
	var out []span
	for i, l := range lines {
		if i == 0 || (l != "" && l[0] != ' ') || strings.HasPrefix(l, "  - ") {
			if n := len(out); n > 0 {
				out[n-1].end = i
			}
			out = append(out, span{start: i})
		}
	}
	if n := len(out); n > 0 {
		out[n-1].end = len(lines)
	}
	return out
}

// maxRunes bounds the distinct pieces one rune each can stand for (the
// runes skip the surrogate range, which a Go string cannot carry).
const maxRunes = 1_000_000

// lineBudget is the most lines of a run of changed blocks that are diffed
// line by line when the run's blocks cannot be paired one to one.
const lineBudget = 4000

// runesOf gives each distinct piece (the lines of a span) its rune; nil when
// there are too many distinct pieces. A piece is the span's own part of
// text (lines are substrings of text), so no piece is copied.
func runesOf(spans []span, text string, lines []string, at []int, ids map[string]rune) []rune {
	out := make([]rune, len(spans))
	for i, s := range spans {
		key := text[at[s.start] : at[s.end-1]+len(lines[s.end-1])]
		r, ok := ids[key]
		if !ok {
			if len(ids) >= maxRunes {
				return nil
			}
			r = rune(len(ids) + 1)
			if r >= 0xD800 {
				r += 0x800 // past the surrogates
			}
			ids[key] = r
		}
		out[i] = r
	}
	return out
}

// differ appends the lines of a diff in order, numbering them.
type differ struct {
	la, lb       []string
	oldNo, newNo int // lines of a and b emitted so far
	out          []Line
}

func (d *differ) equal(n int) {
	for range n {
		d.out = append(d.out, Line{Op: Equal, Text: d.la[d.oldNo], OldNo: d.oldNo + 1, NewNo: d.newNo + 1})
		d.oldNo++
		d.newNo++
	}
}

func (d *differ) del(n int) {
	for range n {
		d.out = append(d.out, Line{Op: Delete, Text: d.la[d.oldNo], OldNo: d.oldNo + 1})
		d.oldNo++
	}
}

func (d *differ) ins(n int) {
	for range n {
		d.out = append(d.out, Line{Op: Insert, Text: d.lb[d.newNo], NewNo: d.newNo + 1})
		d.newNo++
	}
}

// changed emits a run of deleted blocks of a and inserted blocks of b:
// paired one to one when the counts match (objects edited in place), else
// diffed line by line when small enough, else deleted and inserted whole.
func (d *differ) changed(da, db []span) {
	switch {
	case len(da) == len(db):
		for i := range da {
			d.lines(da[i].start, da[i].end, db[i].start, db[i].end)
		}
	case len(da) == 0:
		d.ins(db[len(db)-1].end - db[0].start)
	case len(db) == 0:
		d.del(da[len(da)-1].end - da[0].start)
	default:
		a0, a1, b0, b1 := da[0].start, da[len(da)-1].end, db[0].start, db[len(db)-1].end
		if a1-a0+b1-b0 <= lineBudget {
			d.lines(a0, a1, b0, b1)
			return
		}
		d.del(a1 - a0)
		d.ins(b1 - b0)
	}
}

// lines diffs lines [a0, a1) of a with [b0, b1) of b, line by line; the
// emitted position must be at a0 and b0.
func (d *differ) lines(a0, a1, b0, b1 int) {
	ids := make(map[string]rune, 64)
	ra := lineRunes(d.la[a0:a1], ids)
	rb := lineRunes(d.lb[b0:b1], ids)
	if ra == nil || rb == nil {
		d.del(a1 - a0)
		d.ins(b1 - b0)
		return
	}
	for _, diff := range diffmatchpatch.New().DiffMainRunes(ra, rb, false) {
		n := utf8.RuneCountInString(diff.Text)
		switch diff.Type {
		case diffmatchpatch.DiffEqual:
			d.equal(n)
		case diffmatchpatch.DiffDelete:
			d.del(n)
		case diffmatchpatch.DiffInsert:
			d.ins(n)
		}
	}
}

func lineRunes(lines []string, ids map[string]rune) []rune {
	out := make([]rune, len(lines))
	for i, l := range lines {
		r, ok := ids[l]
		if !ok {
			if len(ids) >= maxRunes {
				return nil
			}
			r = rune(len(ids) + 1)
			if r >= 0xD800 {
				r += 0x800
			}
			ids[l] = r
		}
		out[i] = r
	}
	return out
}

// splitLines splits text into lines without their line feeds (a final line
// feed ends the last line rather than starting an empty one), with where
// each line starts in text.
func splitLines(text string) ([]string, []int) {
	if text == "" {
		return nil, nil
	}
	body := strings.TrimSuffix(text, "\n")
	n := strings.Count(body, "\n") + 1
	lines, at := make([]string, 0, n), make([]int, 0, n)
	for pos := 0; ; {
		i := strings.IndexByte(body[pos:], '\n')
		if i < 0 {
			lines, at = append(lines, body[pos:]), append(at, pos)
			return lines, at
		}
		lines, at = append(lines, body[pos:pos+i]), append(at, pos)
		pos += i + 1
	}
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
	n := 0
	for i := range lines {
		if keep[i] || lines[i].Op != Equal {
			n++
		}
	}
	out := make([]Line, 0, n+n/2+1)
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
	size := 0
	for _, l := range lines {
		size += len(l.Text) + 2
		if l.Op == Fold {
			size += 32
		}
	}
	b.Grow(size)
	for _, l := range lines {
		switch l.Op {
		case Insert, Delete, Equal:
			b.WriteByte(" +-"[l.Op])
			b.WriteString(l.Text)
			b.WriteByte('\n')
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
