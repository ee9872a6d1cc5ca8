package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"go.yaml.in/yaml/v3"
)

// ErrFormat wraps every error of Decode.
var ErrFormat = errors.New("config: invalid snapshot text")

// Canonicalize puts every list of s into its canonical order so that the same
// configuration always encodes to the same bytes. It also fills nil slices,
// which YAML would otherwise print as "null" in one place and "[]" in another,
// and reads the old encoding of parking (see normalizeParked).
func Canonicalize(s *Snapshot) {
	if s.Format == "" {
		s.Format = FormatV1
	}
	s.Tenants = nonNil(s.Tenants)
	slices.SortFunc(s.Tenants, func(a, b Tenant) int { return cmp.Compare(a.Name, b.Name) })

	s.Providers = nonNil(s.Providers)
	slices.SortFunc(s.Providers, func(a, b Provider) int { return cmp.Compare(a.Name, b.Name) })
	for i := range s.Providers {
		p := &s.Providers[i]
		p.Keys = nonNil(p.Keys)
		slices.SortFunc(p.Keys, func(a, b ProviderKey) int { return cmp.Compare(a.ID, b.ID) })
		CanonicalHeaders(p)
		CanonicalQuirks(p)
	}

	s.LogicModels = nonNil(s.LogicModels)
	slices.SortFunc(s.LogicModels, func(a, b LogicModel) int { return cmp.Compare(a.Code, b.Code) })
	for i := range s.LogicModels {
		m := &s.LogicModels[i]
		m.Deployments = nonNil(m.Deployments)
		for j := range m.Deployments {
			normalizeParked(&m.Deployments[j].Weight, &m.Deployments[j].Parked)
		}
		slices.SortFunc(m.Deployments, func(a, b Deployment) int {
			return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.UpstreamModel, b.UpstreamModel), cmp.Compare(a.ID, b.ID))
		})
	}

	s.RouteGroups = nonNil(s.RouteGroups)
	slices.SortFunc(s.RouteGroups, func(a, b RouteGroup) int { return cmp.Compare(a.Name, b.Name) })
	for i := range s.RouteGroups {
		g := &s.RouteGroups[i]
		canonicalResilience(g)
		if len(g.Aliases) == 0 {
			g.Aliases = nil // none is the same as an empty list (and omitted from the text)
		}
		g.Tiers = nonNil(g.Tiers)
		slices.SortFunc(g.Tiers, func(a, b Tier) int { return cmp.Compare(tierIndex(a.Name), tierIndex(b.Name)) })
		for j := range g.Tiers {
			t := &g.Tiers[j]
			t.Candidates = nonNil(t.Candidates)
			for k := range t.Candidates {
				normalizeParked(&t.Candidates[k].Weight, &t.Candidates[k].Parked)
			}
			slices.SortFunc(t.Candidates, func(a, b Candidate) int {
				return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.LogicModel, b.LogicModel), cmp.Compare(a.ID, b.ID))
			})
		}
	}

	s.Callers = nonNil(s.Callers)
	slices.SortFunc(s.Callers, func(a, b Caller) int { return cmp.Compare(a.Name, b.Name) })
	for i := range s.Callers {
		c := &s.Callers[i]
		c.Limits = nonNil(c.Limits)
		slices.SortFunc(c.Limits, func(a, b TierLimit) int { return cmp.Compare(tierIndex(a.Tier), tierIndex(b.Tier)) })
		c.Keys = nonNil(c.Keys)
		slices.SortFunc(c.Keys, func(a, b CallerKey) int { return cmp.Compare(a.ID, b.ID) })
	}
}

func tierIndex(t TierName) int {
	if i := slices.Index(TierNames, t); i >= 0 {
		return i
	}
	return len(TierNames)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Encode returns the canonical text of s: YAML with fields in declaration
// order and lists in canonical order. Encode canonicalizes a copy; s is not
// modified.
//
// The text is emitted one list item at a time, each by its own encoder, and
// concatenated. The bytes are the ones a single encoder writes for the whole
// snapshot (TestEncodeMatchesWholeDocument), but the YAML emitter keeps every
// event of a document until the document ends, so a whole-document encode of
// a 2 MB configuration held over 400 MB at once; item by item it holds one
// item's events per core, and the cores share the items.
func Encode(s Snapshot) ([]byte, error) {
	return encode(s, true)
}

// encode is Encode; with fast false every item goes through the YAML
// library (the reference the tests and benchmarks compare with).
func encode(s Snapshot, fast bool) ([]byte, error) {
	c := Clone(s)
	Canonicalize(&c)
	var parts []func(*itemWriter) // in document order, each writing one line or one item
	parts = append(parts, func(w *itemWriter) {
		if fast && w.write(func(tw *textWriter) { tw.dash = false; tw.str(0, "format", c.Format) }) {
			return
		}
		w.doc(struct {
			Format string `yaml:"format"`
		}{c.Format})
	})
	parts = appendItems(parts, "tenants", c.Tenants, fast, writeTenant)
	parts = appendItems(parts, "providers", c.Providers, fast, writeProvider)
	parts = appendItems(parts, "logic_models", c.LogicModels, fast, writeLogicModel)
	parts = appendItems(parts, "route_groups", c.RouteGroups, fast, writeRouteGroup)
	parts = appendItems(parts, "callers", c.Callers, fast, writeCaller)

	// The items are independent: encode them on every core, in contiguous
	// runs, and join the runs in order.
	workers := min(runtime.GOMAXPROCS(0), max(1, len(parts)/64))
	outs := make([]itemWriter, workers)
	var wg sync.WaitGroup
	for i := range outs {
		lo, hi := len(parts)*i/workers, len(parts)*(i+1)/workers
		wg.Go(func() {
			w := &outs[i]
			w.out = make([]byte, 0, 1024*(hi-lo))
			for _, p := range parts[lo:hi] {
				p(w)
			}
		})
	}
	wg.Wait()
	size := 0
	for i := range outs {
		if outs[i].err != nil {
			return nil, fmt.Errorf("config: encode snapshot: %w", outs[i].err)
		}
		size += len(outs[i].out)
	}
	text := make([]byte, 0, size)
	for i := range outs {
		text = append(text, outs[i].out...)
	}
	return text, nil
}

// itemWriter appends the text of items to out, each written by the
// canonical writer or encoded by a fresh YAML encoder.
type itemWriter struct {
	out  []byte
	part bytes.Buffer
	err  error
}

// write appends what f writes with the canonical writer; false (and
// nothing appended) when it cannot write it exactly.
func (w *itemWriter) write(f func(*textWriter)) bool {
	tw := textWriter{b: w.out, dash: true}
	f(&tw)
	if tw.bad {
		return false
	}
	w.out = tw.b
	return true
}

// encode encodes v as a document of its own and returns its text (valid until
// the next call).
func (w *itemWriter) encode(v any) []byte {
	w.part.Reset()
	if w.err != nil {
		return nil
	}
	enc := yaml.NewEncoder(&w.part)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		w.err = err
		return nil
	}
	if err := enc.Close(); err != nil {
		w.err = err
		return nil
	}
	return w.part.Bytes()
}

func (w *itemWriter) doc(v any) { w.out = append(w.out, w.encode(v)...) }

// appendItems adds the parts writing a top-level key and its list. Each
// item is written by write (canonical_write.go) or, when that cannot
// render one of its values exactly or fast is false, by the YAML library:
// encoded under the same key, as a list of one, so that it is emitted at
// the indentation and column it has in the whole document, with the key
// line cut off.
func appendItems[T any](parts []func(*itemWriter), key string, items []T, fast bool, write func(*textWriter, int, *T)) []func(*itemWriter) {
	if len(items) == 0 {
		return append(parts, func(w *itemWriter) { w.out = append(w.out, key+": []\n"...) })
	}
	head := key + ":\n"
	for i := range items {
		parts = append(parts, func(w *itemWriter) {
			if i == 0 {
				w.out = append(w.out, head...)
			}
			if fast && w.write(func(tw *textWriter) { write(tw, 4, &items[i]) }) {
				return
			}
			b := w.encode(map[string][]T{key: items[i : i+1]})
			if w.err != nil {
				return
			}
			if len(b) < len(head) || string(b[:len(head)]) != head {
				w.err = fmt.Errorf("unexpected encoding of %s item %d", key, i)
				return
			}
			w.out = append(w.out, b[len(head):]...)
		})
	}
	return parts
}

// Decode parses snapshot text (YAML, or JSON, which YAML accepts). Unknown
// fields and a missing or unknown format are refused, so a typo in an
// imported file is an error rather than a silently dropped setting.
//
// Text laid out as Encode writes it (top-level keys at the margin, list
// items at "  - ") is decoded one list item at a time: the YAML decoder
// builds a node tree of its whole input first, some 25 bytes of tree per
// byte of text, and item by item only one item's tree exists at once.
// Anything else, and any error, goes through the decoder whole, so the
// result and the error messages are the decoder's own.
func Decode(text []byte) (Snapshot, error) {
	return decode(text, readerThenLibrary)
}

// How decodeByItem decodes the items of canonical text.
type readMode int

const (
	readerThenLibrary readMode = iota // the reader; the library for an item the reader refuses
	libraryOnly                       // the library (the reference of the tests and benchmarks)
	readerOnly                        // the reader, or fail (for the tests: the reader's coverage)
)

// decode is Decode with its items read as mode says.
func decode(text []byte, mode readMode) (Snapshot, error) {
	if s, ok := decodeByItem(text, mode); ok {
		if s.Format != FormatV1 {
			return s, fmt.Errorf("%w: format %q is not %q", ErrFormat, s.Format, FormatV1)
		}
		Canonicalize(&s)
		return s, nil
	}
	var s Snapshot
	dec := yaml.NewDecoder(bytes.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return s, fmt.Errorf("%w: the text is empty", ErrFormat)
		}
		return s, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return s, fmt.Errorf("%w: more than one YAML document", ErrFormat)
	}
	if s.Format != FormatV1 {
		return s, fmt.Errorf("%w: format %q is not %q", ErrFormat, s.Format, FormatV1)
	}
	Canonicalize(&s)
	return s, nil
}

// decodeByItem decodes text in the layout Encode writes, section by
// section and list item by list item. ok is false when the text is laid out
// otherwise or any part fails to decode; the caller then decodes it whole.
//
// A section is a line at the margin naming a top-level key, with the lines
// below it up to the next line at the margin. A block list's items start at
// lines beginning "  - "; each is decoded alone as a list of one. Document
// markers, directives, unknown or repeated keys and lines at the margin that
// are not keys refuse the layout. A line at the margin ends every YAML node
// below a top-level key, so the sections and items cut here are the nodes
// the whole decoder would see.
func decodeByItem(text []byte, mode readMode) (s Snapshot, ok bool) {
	if len(text) == 0 || text[0] == '{' || bytes.IndexByte(text, '\r') >= 0 || bytes.IndexByte(text, '\t') >= 0 {
		return s, false
	}
	type section struct {
		key        string
		head, body []byte // the key line; the lines below it
	}
	var sections []section
	seen := map[string]bool{}
	bodyStart := 0 // where the lines below the last key line begin
	endBody := func(end int) {
		if n := len(sections); n > 0 {
			sections[n-1].body = text[bodyStart:end]
		}
	}
	for pos := 0; pos < len(text); {
		line := text[pos:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		next := pos + len(line)
		switch {
		case line[0] == ' ' || line[0] == '\n' || line[0] == '#':
			if len(sections) == 0 && line[0] != '#' && len(bytes.TrimSpace(line)) > 0 {
				return s, false
			}
		default:
			key, _, found := bytes.Cut(line, []byte(":"))
			k := string(key)
			if !found || seen[k] || !topLevelKey[k] {
				return s, false
			}
			seen[k] = true
			endBody(pos)
			sections = append(sections, section{key: k, head: line})
			bodyStart = next
		}
		pos = next
	}
	endBody(len(text))
	for _, sec := range sections {
		var good bool
		switch sec.key {
		case "format":
			var f struct {
				Format string `yaml:"format"`
			}
			good = decodeStrict(append(append([]byte(nil), sec.head...), sec.body...), &f)
			s.Format = f.Format
		case "tenants":
			s.Tenants, good = decodeSection(sec.key, sec.head, sec.body, readerIf(mode, readTenant), mode)
		case "providers":
			s.Providers, good = decodeSection(sec.key, sec.head, sec.body, readerIf(mode, readProvider), mode)
		case "logic_models":
			s.LogicModels, good = decodeSection(sec.key, sec.head, sec.body, readerIf(mode, readLogicModel), mode)
		case "route_groups":
			s.RouteGroups, good = decodeSection(sec.key, sec.head, sec.body, readerIf(mode, readRouteGroup), mode)
		case "callers":
			s.Callers, good = decodeSection(sec.key, sec.head, sec.body, readerIf(mode, readCaller), mode)
		}
		if !good {
			return Snapshot{}, false
		}
	}
	return s, len(sections) > 0
}

// readerIf is read, or nil (the library) in libraryOnly mode.
func readerIf[T any](mode readMode, read func(*textReader, int, *T)) func(*textReader, int, *T) {
	if mode == libraryOnly {
		return nil
	}
	return read
}

var topLevelKey = map[string]bool{"format": true, "tenants": true, "providers": true, "logic_models": true, "route_groups": true, "callers": true}

// decodeSection decodes one top-level list: "key:" followed by block items
// at "  - ", item by item, each by read (canonical_read.go) or, when it is
// not in the canonical layout, by the YAML library; any other form
// ("key: []", a flow list) whole by the library.
func decodeSection[T any](key string, head, body []byte, read func(*textReader, int, *T), mode readMode) ([]T, bool) {
	if string(head) != key+":\n" {
		var whole map[string][]T
		if !decodeStrict(append(append([]byte(nil), head...), body...), &whole) || len(whole) != 1 {
			return nil, false
		}
		return whole[key], true
	}
	var out []T
	start := -1 // where the current item begins in body
	flush := func(end int) bool {
		if start < 0 {
			return true
		}
		if read != nil {
			if v, ok := readItem(body[start:end], read); ok {
				out = append(out, v)
				return true
			}
			if mode == readerOnly {
				return false
			}
		}
		var one []T
		if !decodeStrict(body[start:end], &one) || len(one) != 1 {
			return false
		}
		out = append(out, one[0])
		return true
	}
	for i := 0; i < len(body); {
		line := body[i:]
		if j := bytes.IndexByte(line, '\n'); j >= 0 {
			line = line[:j+1]
		}
		if bytes.HasPrefix(line, []byte("  - ")) || string(line) == "  -\n" {
			if !flush(i) {
				return nil, false
			}
			start = i
		} else if start < 0 && len(bytes.TrimSpace(line)) > 0 && bytes.TrimSpace(line)[0] != '#' {
			return nil, false // content before the first item
		}
		i += len(line)
	}
	if start < 0 {
		return nil, false // "key:" with no items is null, which the whole decoder handles
	}
	return out, flush(len(body))
}

// decodeStrict decodes one YAML document with unknown fields refused.
func decodeStrict(text []byte, v any) bool {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return false
	}
	var extra any
	return errors.Is(dec.Decode(&extra), io.EOF)
}

// Clone returns a deep copy of s.
func Clone(s Snapshot) Snapshot {
	c := s
	c.Tenants = slices.Clone(s.Tenants)
	c.Providers = slices.Clone(s.Providers)
	for i := range c.Providers {
		c.Providers[i].Keys = slices.Clone(c.Providers[i].Keys)
		c.Providers[i].Headers = slices.Clone(c.Providers[i].Headers)
		c.Providers[i].PassHeaders = slices.Clone(c.Providers[i].PassHeaders)
		c.Providers[i].Quirks = slices.Clone(c.Providers[i].Quirks)
	}
	c.LogicModels = slices.Clone(s.LogicModels)
	for i := range c.LogicModels {
		ds := slices.Clone(c.LogicModels[i].Deployments)
		for j := range ds {
			if ds[j].Breaker != nil {
				b := *ds[j].Breaker
				ds[j].Breaker = &b
			}
		}
		c.LogicModels[i].Deployments = ds
	}
	c.RouteGroups = slices.Clone(s.RouteGroups)
	for i := range c.RouteGroups {
		ts := slices.Clone(c.RouteGroups[i].Tiers)
		for j := range ts {
			ts[j].Candidates = slices.Clone(ts[j].Candidates)
		}
		c.RouteGroups[i].Tiers = ts
		c.RouteGroups[i].Aliases = slices.Clone(c.RouteGroups[i].Aliases)
		cloneResilience(&c.RouteGroups[i])
	}
	c.Callers = slices.Clone(s.Callers)
	for i := range c.Callers {
		c.Callers[i].Limits = slices.Clone(c.Callers[i].Limits)
		c.Callers[i].Keys = slices.Clone(c.Callers[i].Keys)
	}
	return c
}
