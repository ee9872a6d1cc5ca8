package config

import (
	"bytes"
	"strconv"
	"strings"
)

// The reader of the canonical layout (see canonical_write.go): one list
// item at a time, every line where the writer puts it, every scalar in a
// form whose meaning is not in doubt. Anything else — a comment, a blank
// line, another indentation or key order, a flow mapping, an escape, a
// number the writer would not write — marks the item, and the item is
// decoded by the YAML library instead, so what the library would accept
// or refuse (and its messages) is unchanged. For the text it does accept,
// the reader returns what the library returns (FuzzCanonicalCodec).

// textReader reads the lines of one item.
type textReader struct {
	t    []byte // the lines not read yet, the next one included
	next int    // the length of the next line without its newline; -1 when it has none
	dash bool   // the next key opens a list item
	bad  bool
}

func newTextReader(text []byte) textReader {
	return textReader{t: text, next: bytes.IndexByte(text, '\n'), dash: true}
}

// line returns the next line without its newline; ok is false at the end
// or when the line does not end with one.
func (r *textReader) line() (line []byte, ok bool) {
	if r.next < 0 {
		return nil, false
	}
	return r.t[:r.next], true
}

func (r *textReader) skipLine() {
	r.t = r.t[r.next+1:]
	r.next = bytes.IndexByte(r.t, '\n')
}

// peek returns what follows "key:" on the next line if the line is that
// key at that indentation: "" when nothing does (a nested block follows),
// the value after one space otherwise.
func (r *textReader) peek(ind int, k string) (string, bool) {
	if r.bad {
		return "", false
	}
	l, ok := r.line()
	if !ok {
		return "", false
	}
	pre := ind
	if r.dash {
		pre = ind - 2
	}
	if len(l) < ind+len(k)+1 {
		return "", false
	}
	for i := range pre {
		if l[i] != ' ' {
			return "", false
		}
	}
	if r.dash && (l[pre] != '-' || l[pre+1] != ' ') {
		return "", false
	}
	l = l[ind:]
	if string(l[:len(k)]) != k || l[len(k)] != ':' {
		return "", false
	}
	l = l[len(k)+1:]
	if len(l) == 0 {
		return "", true
	}
	if len(l) < 2 || l[0] != ' ' {
		return "", false
	}
	return string(l[1:]), true
}

// take reads the line of key k, which must be next; the value as peek.
func (r *textReader) take(ind int, k string) (string, bool) {
	v, ok := r.peek(ind, k)
	if !ok {
		r.bad = true
		return "", false
	}
	r.skipLine()
	r.dash = false
	return v, true
}

// takeOpt reads the line of key k if it is next.
func (r *textReader) takeOpt(ind int, k string) (string, bool) {
	v, ok := r.peek(ind, k)
	if !ok {
		return "", false
	}
	r.skipLine()
	r.dash = false
	return v, true
}

func (r *textReader) str(ind int, k string) string {
	v, ok := r.take(ind, k)
	if !ok {
		return ""
	}
	return r.scalar(v)
}

func (r *textReader) optStr(ind int, k string) string {
	v, ok := r.takeOpt(ind, k)
	if !ok {
		return ""
	}
	return r.scalar(v)
}

func (r *textReader) int(ind int, k string) int64 {
	v, ok := r.take(ind, k)
	if !ok {
		return 0
	}
	return r.number(v)
}

func (r *textReader) optInt(ind int, k string) int64 {
	v, ok := r.takeOpt(ind, k)
	if !ok {
		return 0
	}
	return r.number(v)
}

func (r *textReader) bool(ind int, k string) bool {
	v, ok := r.take(ind, k)
	if !ok {
		return false
	}
	return r.boolean(v)
}

func (r *textReader) optBool(ind int, k string) bool {
	v, ok := r.takeOpt(ind, k)
	if !ok {
		return false
	}
	return r.boolean(v)
}

func (r *textReader) micros(v string) Micros {
	m, err := ParseMicros(v)
	if err != nil || m.String() != v {
		r.bad = true
		return 0
	}
	return m
}

// open reads the key line of a nested mapping or block list.
func (r *textReader) open(ind int, k string) {
	if v, ok := r.take(ind, k); ok && v != "" {
		r.bad = true
	}
}

// number reads a decimal integer written as strconv writes it.
func (r *textReader) number(v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || v[0] == '+' || len(v) > 1 && v[0] == '0' || strings.HasPrefix(v, "-0") {
		r.bad = true
		return 0
	}
	return n
}

func (r *textReader) boolean(v string) bool {
	switch v {
	case "true":
		return true
	case "false":
		return false
	}
	r.bad = true
	return false
}

// scalar reads a string: plain when the writer would write it plain,
// single-quoted, or double-quoted with no escape but \" and \\, on one
// line of characters the writer writes as they are.
func (r *textReader) scalar(v string) string {
	if v == "" {
		r.bad = true // a key with nothing after it is null, or opens a block
		return ""
	}
	switch v[0] {
	case '\'':
		if len(v) < 2 || v[len(v)-1] != '\'' {
			break
		}
		in := v[1 : len(v)-1]
		if !strings.Contains(in, "'") {
			if printableLine(in) {
				return in
			}
			break
		}
		var b strings.Builder
		for i := 0; i < len(in); i++ {
			if in[i] == '\'' {
				if i+1 >= len(in) || in[i+1] != '\'' {
					r.bad = true
					return ""
				}
				i++
			}
			b.WriteByte(in[i])
		}
		if s := b.String(); printableLine(s) {
			return s
		}
	case '"':
		if len(v) < 2 || v[len(v)-1] != '"' {
			break
		}
		in := v[1 : len(v)-1]
		if !strings.ContainsAny(in, "\"\\") {
			if printableLine(in) || in == "" {
				return in
			}
			break
		}
		var b strings.Builder
		for i := 0; i < len(in); i++ {
			switch in[i] {
			case '"':
				r.bad = true
				return ""
			case '\\':
				if i+1 >= len(in) || in[i+1] != '"' && in[i+1] != '\\' {
					r.bad = true
					return ""
				}
				i++
			}
			b.WriteByte(in[i])
		}
		if s := b.String(); printableLine(s) {
			return s
		}
	default:
		if styleOf(v) == stylePlain {
			return v
		}
	}
	r.bad = true
	return ""
}

// readList reads a list of mappings at key k (see writeList). A list
// written "[]" is empty but not nil, as the library decodes it; a list
// that may be omitted and is written "[]" is left to the library.
func readList[T any](r *textReader, ind int, k string, omitEmpty bool, item func(*textReader, int, *T)) []T {
	var v string
	var ok bool
	if omitEmpty {
		v, ok = r.takeOpt(ind, k)
		if !ok {
			return nil
		}
	} else if v, ok = r.take(ind, k); !ok {
		return nil
	}
	switch {
	case v == "[]" && !omitEmpty:
		return []T{}
	case v != "":
		r.bad = true
		return nil
	}
	var out []T
	for !r.bad && r.atItem(ind+2) {
		r.dash = true
		out = append(out, *new(T))
		item(r, ind+4, &out[len(out)-1])
	}
	if len(out) == 0 {
		r.bad = true // "key:" alone is null
	}
	return out
}

// atItem reports whether the next line opens a list item at column ind.
func (r *textReader) atItem(ind int) bool {
	l, ok := r.line()
	if !ok || len(l) < ind+2 {
		return false
	}
	for i := range ind {
		if l[i] != ' ' {
			return false
		}
	}
	return l[ind] == '-' && l[ind+1] == ' '
}

// nested reads an optional mapping behind a pointer: absent is nil, "{}"
// the zero value; a key with nothing below it (null) is left to the library.
func readNested[T any](r *textReader, ind int, k string, fields func(*textReader, int, *T)) *T {
	v, ok := r.takeOpt(ind, k)
	if !ok {
		return nil
	}
	x := new(T)
	switch v {
	case "{}":
		return x
	case "":
		before := len(r.t)
		fields(r, ind+2, x)
		if len(r.t) == before {
			r.bad = true
		}
		return x
	}
	r.bad = true
	return nil
}

// The items, as canonical_write.go writes them.

func readTenant(r *textReader, ind int, t *Tenant) {
	t.ID = r.int(ind, "id")
	t.Name = r.str(ind, "name")
	t.Description = r.optStr(ind, "description")
}

func readProvider(r *textReader, ind int, p *Provider) {
	p.ID = r.int(ind, "id")
	p.Name = r.str(ind, "name")
	p.Protocol = Protocol(r.str(ind, "protocol"))
	p.BaseURL = r.str(ind, "base_url")
	p.Enabled = r.bool(ind, "enabled")
	p.TimeoutMS = int(r.int(ind, "timeout_ms"))
	p.Notes = r.optStr(ind, "notes")
	p.APIVersion = r.optStr(ind, "api_version")
	p.Region = r.optStr(ind, "region")
	p.Project = r.optStr(ind, "project")
	p.AuthURL = r.optStr(ind, "auth_url")
	p.Sandbox = r.optBool(ind, "sandbox")
	p.Keys = readList(r, ind, "keys", false, func(r *textReader, ind int, k *ProviderKey) {
		k.ID = r.int(ind, "id")
		k.Label = r.str(ind, "label")
		k.Fingerprint = r.str(ind, "fingerprint")
		k.Status = r.str(ind, "status")
	})
	p.Headers = readList(r, ind, "headers", true, func(r *textReader, ind int, h *ProviderHeader) {
		h.Name = r.str(ind, "name")
		h.Value = r.str(ind, "value")
		h.Secret = r.optBool(ind, "secret")
		h.SecretID = r.optInt(ind, "secret_id")
	})
	p.PassHeaders = readScalars(r, ind, "pass_headers")
	for _, q := range readScalars(r, ind, "quirks") {
		p.Quirks = append(p.Quirks, Quirk(q))
	}
}

// readScalars reads an optional list of scalars; present, it is not empty.
func readScalars(r *textReader, ind int, key string) []string {
	v, ok := r.takeOpt(ind, key)
	if !ok {
		return nil
	}
	if v != "" {
		r.bad = true
	}
	var out []string
	for !r.bad && r.atItem(ind+2) {
		l, _ := r.line()
		r.skipLine()
		if len(l) == ind+4 {
			r.bad = true
			break
		}
		out = append(out, r.scalar(string(l[ind+4:])))
	}
	if len(out) == 0 {
		r.bad = true
	}
	return out
}

func readLogicModel(r *textReader, ind int, m *LogicModel) {
	m.ID = r.int(ind, "id")
	m.Code = r.str(ind, "code")
	m.Kind = Kind(r.str(ind, "kind"))
	m.EmbeddingDimension = int(r.optInt(ind, "embedding_dimension"))
	m.QueryPrefix = r.optStr(ind, "query_prefix")
	m.DocumentPrefix = r.optStr(ind, "document_prefix")
	m.Description = r.optStr(ind, "description")
	m.Deployments = readList(r, ind, "deployments", false, readDeployment)
}

func readDeployment(r *textReader, ind int, d *Deployment) {
	d.ID = r.int(ind, "id")
	d.Provider = r.str(ind, "provider")
	d.UpstreamModel = r.str(ind, "upstream_model")
	d.Weight = int(r.int(ind, "weight"))
	d.Parked = r.optBool(ind, "parked")
	d.Enabled = r.bool(ind, "enabled")
	d.MaxConcurrency = int(r.optInt(ind, "max_concurrency"))
	d.MaxInflightTokens = r.optInt(ind, "max_inflight_tokens")
	r.open(ind, "prices")
	if v, ok := r.take(ind+2, "input"); ok {
		d.Prices.InputMicros = r.micros(v)
	}
	if v, ok := r.take(ind+2, "output"); ok {
		d.Prices.OutputMicros = r.micros(v)
	}
	if v, ok := r.take(ind+2, "cached"); ok {
		d.Prices.CachedMicros = r.micros(v)
	}
	d.Prices.Currency = r.str(ind+2, "currency")
	c := &d.Capabilities
	r.open(ind, "capabilities")
	c.Thinking = r.bool(ind+2, "thinking")
	c.Vision = r.bool(ind+2, "vision")
	c.Tools = r.bool(ind+2, "tools")
	c.StructuredOutput = r.optBool(ind+2, "structured_output")
	c.ResponsesAPI = r.optBool(ind+2, "responses_api")
	c.WebSearch = r.optBool(ind+2, "web_search")
	d.StrictFields = r.optBool(ind, "strict_fields")
	d.EmbeddingBatchLimit = int(r.optInt(ind, "embedding_batch_limit"))
	d.TimeoutMS = int(r.optInt(ind, "timeout_ms"))
	d.Breaker = readNested(r, ind, "breaker", func(r *textReader, ind int, b *BreakerSettings) {
		b.Window = int(r.optInt(ind, "window"))
		b.MinCalls = int(r.optInt(ind, "min_calls"))
		b.FailurePercent = int(r.optInt(ind, "failure_percent"))
		b.OpenMS = int(r.optInt(ind, "open_ms"))
		b.HalfOpenProbes = int(r.optInt(ind, "half_open_probes"))
	})
}

func readRouteGroup(r *textReader, ind int, g *RouteGroup) {
	g.ID = r.int(ind, "id")
	g.Name = r.str(ind, "name")
	g.Description = r.optStr(ind, "description")
	g.Tenant = r.optStr(ind, "tenant")
	g.Fallback = r.optStr(ind, "fallback")
	g.TraceContent = r.optBool(ind, "trace_content")
	g.Tiers = readList(r, ind, "tiers", false, func(r *textReader, ind int, t *Tier) {
		t.ID = r.int(ind, "id")
		t.Name = TierName(r.str(ind, "name"))
		t.TimeoutMS = int(r.int(ind, "timeout_ms"))
		t.FirstChunkTimeoutMS = int(r.int(ind, "first_chunk_timeout_ms"))
		t.Candidates = readList(r, ind, "candidates", false, func(r *textReader, ind int, c *Candidate) {
			c.ID = r.int(ind, "id")
			c.LogicModel = r.str(ind, "logic_model")
			c.Priority = int(r.int(ind, "priority"))
			c.Weight = int(r.int(ind, "weight"))
			c.Parked = r.optBool(ind, "parked")
		})
	})
	g.Aliases = readList(r, ind, "aliases", true, func(r *textReader, ind int, a *ModelAlias) {
		a.Pattern = r.str(ind, "pattern")
		a.Tier = TierName(r.optStr(ind, "tier"))
		a.LogicModel = r.optStr(ind, "logic_model")
	})
	g.RetryBudget = readNested(r, ind, "retry_budget", func(r *textReader, ind int, b *RetryBudget) {
		b.Percent = int(r.optInt(ind, "percent"))
		b.MinPerS = int(r.optInt(ind, "min_per_s"))
		b.WindowMS = int(r.optInt(ind, "window_ms"))
		b.Off = r.optBool(ind, `"off"`)
	})
	g.Degradation = readNested(r, ind, "degradation", func(r *textReader, ind int, d *Degradation) {
		d.StepDown = readList(r, ind, "step_down", true, func(r *textReader, ind int, s *StepDown) {
			s.Tier = TierName(r.str(ind, "tier"))
			s.To = TierName(r.str(ind, "to"))
			s.P95MS = int(r.optInt(ind, "p95_ms"))
			s.ErrorPercent = int(r.optInt(ind, "error_percent"))
			s.WindowMS = int(r.optInt(ind, "window_ms"))
			s.MinCalls = int(r.optInt(ind, "min_calls"))
			s.HoldMS = int(r.optInt(ind, "hold_ms"))
		})
		d.Cache = readNested(r, ind, "cache", func(r *textReader, ind int, c *Cache) {
			c.Scope = r.optStr(ind, "scope")
			c.TTLMS = int(r.optInt(ind, "ttl_ms"))
			c.MaxEntries = int(r.optInt(ind, "max_entries"))
		})
		d.StaticAnswer = r.optStr(ind, "static_answer")
	})
}

func readCaller(r *textReader, ind int, c *Caller) {
	c.ID = r.int(ind, "id")
	c.Name = r.str(ind, "name")
	c.BusinessLine = r.optStr(ind, "business_line")
	c.Tenant = r.optStr(ind, "tenant")
	c.RouteGroup = r.str(ind, "route_group")
	c.PriorityClass = PriorityClass(r.str(ind, "priority_class"))
	c.Enabled = r.bool(ind, "enabled")
	c.Limits = readList(r, ind, "limits", false, func(r *textReader, ind int, l *TierLimit) {
		l.Tier = TierName(r.str(ind, "tier"))
		l.RPM = r.int(ind, "rpm")
		l.TPM = r.int(ind, "tpm")
		l.DailyTokens = r.int(ind, "daily_tokens")
	})
	if v, ok := r.takeOpt(ind, "monthly_budget"); ok {
		c.MonthlyBudgetMicros = r.micros(v)
	}
	c.BudgetCurrency = r.optStr(ind, "budget_currency")
	c.Keys = readList(r, ind, "keys", false, func(r *textReader, ind int, k *CallerKey) {
		k.ID = r.int(ind, "id")
		k.Name = r.optStr(ind, "name")
		k.Prefix = r.str(ind, "prefix")
	})
}

// readItem reads one list item (its text from "  - " to the next item)
// of a top-level list; ok is false when the item is not in the canonical
// layout through its last line.
func readItem[T any](text []byte, item func(*textReader, int, *T)) (v T, ok bool) {
	r := newTextReader(text)
	item(&r, 4, &v)
	return v, !r.bad && len(r.t) == 0
}
