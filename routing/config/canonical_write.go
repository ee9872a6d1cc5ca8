package config

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The canonical text has one fixed layout: the fields of each type in
// declaration order, two-space indentation, list items at "- ", empty
// lists as "[]", and scalars styled by the YAML emitter's rules. The YAML
// library builds an event for every node and allocates per event, which
// made encoding most of the CPU of a large publish; this file writes that
// layout directly, appending to one buffer.
//
// It renders only what it renders exactly as the emitter does: a string
// it cannot (multi-line text, tabs, control or astral characters) marks
// the item, and the item is encoded by the library instead. The library
// remains the reference: the tests and FuzzCanonicalCodec compare the two
// byte for byte.

// textWriter appends the canonical text of one item.
type textWriter struct {
	b    []byte
	dash bool // the next key opens a list item: "- " replaces its last two spaces of indentation
	bad  bool // a value this writer does not render as the emitter would
}

func (w *textWriter) key(ind int, k string) {
	if w.dash {
		w.b = appendSpaces(w.b, ind-2)
		w.b = append(w.b, "- "...)
		w.dash = false
	} else {
		w.b = appendSpaces(w.b, ind)
	}
	w.b = append(w.b, k...)
	w.b = append(w.b, ':')
}

const spaces = "                                "

func appendSpaces(b []byte, n int) []byte {
	for n > len(spaces) {
		b, n = append(b, spaces...), n-len(spaces)
	}
	return append(b, spaces[:n]...)
}

func (w *textWriter) str(ind int, k, v string) {
	w.key(ind, k)
	w.b = append(w.b, ' ')
	w.scalar(v)
	w.b = append(w.b, '\n')
}

func (w *textWriter) optStr(ind int, k, v string) {
	if v != "" {
		w.str(ind, k, v)
	}
}

func (w *textWriter) int(ind int, k string, v int64) {
	w.key(ind, k)
	w.b = append(w.b, ' ')
	w.b = strconv.AppendInt(w.b, v, 10)
	w.b = append(w.b, '\n')
}

func (w *textWriter) optInt(ind int, k string, v int64) {
	if v != 0 {
		w.int(ind, k, v)
	}
}

func (w *textWriter) bool(ind int, k string, v bool) {
	w.key(ind, k)
	w.b = append(w.b, ' ')
	w.b = strconv.AppendBool(w.b, v)
	w.b = append(w.b, '\n')
}

func (w *textWriter) optBool(ind int, k string, v bool) {
	if v {
		w.bool(ind, k, v)
	}
}

// micros writes an amount as Micros.MarshalYAML does: a plain decimal.
func (w *textWriter) micros(ind int, k string, m Micros) {
	w.key(ind, k)
	w.b = append(w.b, ' ')
	w.b = m.appendText(w.b)
	w.b = append(w.b, '\n')
}

// open writes the key line of a nested mapping or block list.
func (w *textWriter) open(ind int, k string) {
	w.key(ind, k)
	w.b = append(w.b, '\n')
}

// flowEmpty writes a key whose value is an empty list or mapping.
func (w *textWriter) flowEmpty(ind int, k, v string) {
	w.key(ind, k)
	w.b = append(w.b, ' ')
	w.b = append(w.b, v...)
	w.b = append(w.b, '\n')
}

// writeList writes a list of mappings at key k: the items' dashes at ind+2,
// their fields at ind+4. An empty list is "[]", or nothing when omitEmpty.
func writeList[T any](w *textWriter, ind int, k string, items []T, omitEmpty bool, item func(*textWriter, int, *T)) {
	if len(items) == 0 {
		if !omitEmpty {
			w.flowEmpty(ind, k, "[]")
		}
		return
	}
	w.open(ind, k)
	for i := range items {
		w.dash = true
		item(w, ind+4, &items[i])
	}
}

// scalar styles, as the emitter chooses them for a string in block context.
type scalarStyle int

const (
	styleOther  scalarStyle = iota // one this file does not render (literal blocks, escapes)
	stylePlain                     // as is
	styleSingle                    // 'it''s'
	styleDouble                    // "123", "" (a plain form would read as another type)
)

func (w *textWriter) scalar(s string) {
	switch styleOf(s) {
	case stylePlain:
		w.b = append(w.b, s...)
	case styleSingle:
		w.b = append(w.b, '\'')
		for i := 0; i < len(s); i++ {
			if s[i] == '\'' {
				w.b = append(w.b, '\'')
			}
			w.b = append(w.b, s[i])
		}
		w.b = append(w.b, '\'')
	case styleDouble:
		w.b = append(w.b, '"')
		for i := 0; i < len(s); i++ {
			if s[i] == '"' || s[i] == '\\' {
				w.b = append(w.b, '\\')
			}
			w.b = append(w.b, s[i])
		}
		w.b = append(w.b, '"')
	default:
		w.bad = true
	}
}

// styleOf is the style the YAML emitter (go.yaml.in/yaml/v3, unicode on,
// no line width) gives s as a mapping value or list item in block context:
// encoder.stringv picks plain unless the plain form would resolve to
// another type, and yaml_emitter_select_scalar_style falls back to single
// quotes when yaml_emitter_analyze_scalar finds plain unsafe. Strings
// whose rendering involves line breaks or escapes are styleOther.
func styleOf(s string) scalarStyle {
	if s == "" {
		return styleDouble // "" resolves to null
	}
	if !printableLine(s) {
		return styleOther
	}
	if !resolvesToStr(s) || isBase60Float(s) || isOldBool(s) {
		return styleDouble
	}
	if plainSafe(s) {
		return stylePlain
	}
	return styleSingle
}

// resolvesToStr reports whether YAML reads s, written plain, as a string
// (the library's resolve): a string starting with a letter is one unless
// it is a boolean or null word; those starting with a digit, a sign or a
// dot are asked of the library, which parses numbers and timestamps.
func resolvesToStr(s string) bool {
	switch c := s[0]; {
	case c == '+' || c == '-' || c == '.' || c >= '0' && c <= '9':
		return (&yaml.Node{Kind: yaml.ScalarNode, Value: s}).ShortTag() == "!!str"
	case c == 'y' || c == 'Y' || c == 'n' || c == 'N' || c == 't' || c == 'T' || c == 'f' || c == 'F' || c == 'o' || c == 'O' || c == '~' || c == '<':
		switch s {
		case "true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL", "~", "<<":
			return false
		}
	}
	return true
}

// printableLine reports a valid UTF-8 string of characters the emitter
// writes as they are in any style: printable ASCII (space included) and
// the printable BMP characters beyond, less the line and paragraph
// separators (line breaks to YAML) and the byte-order mark. Tabs, line
// breaks, control characters and characters beyond the BMP (which the
// emitter escapes) are not.
func printableLine(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c > 0x7e {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 || r < 0xa0 || r > 0xfffd || r == 0x2028 || r == 0x2029 || r == 0xfeff {
			return false
		}
		i += n
	}
	return true
}

// plainSafe reports a printable one-line string the emitter may write
// plain in block context (yaml_emitter_analyze_scalar's block_plain_allowed):
// no leading or trailing space, no document marker or indicator at the
// start, no ": " or " #" inside, no ':' at the end.
func plainSafe(s string) bool {
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		return false
	}
	followedByBlank := func(i int) bool { return i+1 >= len(s) || s[i+1] == ' ' }
	switch s[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '?', ':', '-':
		if followedByBlank(0) {
			return false
		}
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case ':':
			if followedByBlank(i) {
				return false
			}
		case '#':
			if s[i-1] == ' ' {
				return false
			}
		}
	}
	return true
}

// isBase60Float and isOldBool are the emitter's: plain forms YAML 1.1
// readers would take for a number or a boolean are quoted.
var base60float = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)

func isBase60Float(s string) bool {
	c := s[0]
	if !(c == '+' || c == '-' || c >= '0' && c <= '9') || strings.IndexByte(s, ':') < 0 {
		return false
	}
	return base60float.MatchString(s)
}

func isOldBool(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return true
	}
	return false
}

// The items, field by field in declaration order (types.go, headers.go,
// resilience.go); ind is the column of the item's fields.

func writeTenant(w *textWriter, ind int, t *Tenant) {
	w.int(ind, "id", t.ID)
	w.str(ind, "name", t.Name)
	w.optStr(ind, "description", t.Description)
}

func writeProvider(w *textWriter, ind int, p *Provider) {
	w.int(ind, "id", p.ID)
	w.str(ind, "name", p.Name)
	w.str(ind, "protocol", string(p.Protocol))
	w.str(ind, "base_url", p.BaseURL)
	w.bool(ind, "enabled", p.Enabled)
	w.int(ind, "timeout_ms", int64(p.TimeoutMS))
	w.optStr(ind, "notes", p.Notes)
	w.optStr(ind, "api_version", p.APIVersion)
	w.optStr(ind, "region", p.Region)
	w.optStr(ind, "project", p.Project)
	w.optStr(ind, "auth_url", p.AuthURL)
	w.optBool(ind, "sandbox", p.Sandbox)
	writeList(w, ind, "keys", p.Keys, false, func(w *textWriter, ind int, k *ProviderKey) {
		w.int(ind, "id", k.ID)
		w.str(ind, "label", k.Label)
		w.str(ind, "fingerprint", k.Fingerprint)
		w.str(ind, "status", k.Status)
	})
	writeList(w, ind, "headers", p.Headers, true, func(w *textWriter, ind int, h *ProviderHeader) {
		w.str(ind, "name", h.Name)
		w.str(ind, "value", h.Value)
		w.optBool(ind, "secret", h.Secret)
		w.optInt(ind, "secret_id", h.SecretID)
	})
	if len(p.PassHeaders) > 0 {
		w.open(ind, "pass_headers")
		for _, h := range p.PassHeaders {
			w.b = appendSpaces(w.b, ind+2)
			w.b = append(w.b, "- "...)
			w.scalar(h)
			w.b = append(w.b, '\n')
		}
	}
	if len(p.Quirks) > 0 {
		w.open(ind, "quirks")
		for _, q := range p.Quirks {
			w.b = appendSpaces(w.b, ind+2)
			w.b = append(w.b, "- "...)
			w.scalar(string(q))
			w.b = append(w.b, '\n')
		}
	}
}

func writeLogicModel(w *textWriter, ind int, m *LogicModel) {
	w.int(ind, "id", m.ID)
	w.str(ind, "code", m.Code)
	w.str(ind, "kind", string(m.Kind))
	w.optInt(ind, "embedding_dimension", int64(m.EmbeddingDimension))
	w.optStr(ind, "query_prefix", m.QueryPrefix)
	w.optStr(ind, "document_prefix", m.DocumentPrefix)
	w.optStr(ind, "description", m.Description)
	writeList(w, ind, "deployments", m.Deployments, false, writeDeployment)
}

func writeDeployment(w *textWriter, ind int, d *Deployment) {
	w.int(ind, "id", d.ID)
	w.str(ind, "provider", d.Provider)
	w.str(ind, "upstream_model", d.UpstreamModel)
	w.int(ind, "weight", int64(d.Weight))
	w.optBool(ind, "parked", d.Parked)
	w.bool(ind, "enabled", d.Enabled)
	w.optInt(ind, "max_concurrency", int64(d.MaxConcurrency))
	w.optInt(ind, "max_inflight_tokens", d.MaxInflightTokens)
	w.open(ind, "prices")
	w.micros(ind+2, "input", d.Prices.InputMicros)
	w.micros(ind+2, "output", d.Prices.OutputMicros)
	w.micros(ind+2, "cached", d.Prices.CachedMicros)
	w.str(ind+2, "currency", d.Prices.Currency)
	c := &d.Capabilities
	w.open(ind, "capabilities")
	w.bool(ind+2, "thinking", c.Thinking)
	w.bool(ind+2, "vision", c.Vision)
	w.bool(ind+2, "tools", c.Tools)
	w.optBool(ind+2, "structured_output", c.StructuredOutput)
	w.optBool(ind+2, "responses_api", c.ResponsesAPI)
	w.optBool(ind+2, "web_search", c.WebSearch)
	w.optBool(ind, "strict_fields", d.StrictFields)
	w.optInt(ind, "embedding_batch_limit", int64(d.EmbeddingBatchLimit))
	w.optInt(ind, "timeout_ms", int64(d.TimeoutMS))
	if b := d.Breaker; b != nil {
		if *b == (BreakerSettings{}) {
			w.flowEmpty(ind, "breaker", "{}")
		} else {
			w.open(ind, "breaker")
			w.optInt(ind+2, "window", int64(b.Window))
			w.optInt(ind+2, "min_calls", int64(b.MinCalls))
			w.optInt(ind+2, "failure_percent", int64(b.FailurePercent))
			w.optInt(ind+2, "open_ms", int64(b.OpenMS))
			w.optInt(ind+2, "half_open_probes", int64(b.HalfOpenProbes))
		}
	}
}

func writeRouteGroup(w *textWriter, ind int, g *RouteGroup) {
	w.int(ind, "id", g.ID)
	w.str(ind, "name", g.Name)
	w.optStr(ind, "description", g.Description)
	w.optStr(ind, "tenant", g.Tenant)
	w.optStr(ind, "fallback", g.Fallback)
	w.optBool(ind, "trace_content", g.TraceContent)
	writeList(w, ind, "tiers", g.Tiers, false, func(w *textWriter, ind int, t *Tier) {
		w.int(ind, "id", t.ID)
		w.str(ind, "name", string(t.Name))
		w.int(ind, "timeout_ms", int64(t.TimeoutMS))
		w.int(ind, "first_chunk_timeout_ms", int64(t.FirstChunkTimeoutMS))
		writeList(w, ind, "candidates", t.Candidates, false, func(w *textWriter, ind int, c *Candidate) {
			w.int(ind, "id", c.ID)
			w.str(ind, "logic_model", c.LogicModel)
			w.int(ind, "priority", int64(c.Priority))
			w.int(ind, "weight", int64(c.Weight))
			w.optBool(ind, "parked", c.Parked)
		})
	})
	writeList(w, ind, "aliases", g.Aliases, true, func(w *textWriter, ind int, a *ModelAlias) {
		w.str(ind, "pattern", a.Pattern)
		w.optStr(ind, "tier", string(a.Tier))
		w.optStr(ind, "logic_model", a.LogicModel)
	})
	if b := g.RetryBudget; b != nil {
		if *b == (RetryBudget{}) {
			w.flowEmpty(ind, "retry_budget", "{}")
		} else {
			w.open(ind, "retry_budget")
			w.optInt(ind+2, "percent", int64(b.Percent))
			w.optInt(ind+2, "min_per_s", int64(b.MinPerS))
			w.optInt(ind+2, "window_ms", int64(b.WindowMS))
			w.optBool(ind+2, `"off"`, b.Off) // a key the emitter quotes: a YAML 1.1 boolean
		}
	}
	if d := g.Degradation; d != nil {
		if len(d.StepDown) == 0 && d.Cache == nil && d.StaticAnswer == "" {
			w.flowEmpty(ind, "degradation", "{}")
			return
		}
		w.open(ind, "degradation")
		writeList(w, ind+2, "step_down", d.StepDown, true, func(w *textWriter, ind int, s *StepDown) {
			w.str(ind, "tier", string(s.Tier))
			w.str(ind, "to", string(s.To))
			w.optInt(ind, "p95_ms", int64(s.P95MS))
			w.optInt(ind, "error_percent", int64(s.ErrorPercent))
			w.optInt(ind, "window_ms", int64(s.WindowMS))
			w.optInt(ind, "min_calls", int64(s.MinCalls))
			w.optInt(ind, "hold_ms", int64(s.HoldMS))
		})
		if c := d.Cache; c != nil {
			if *c == (Cache{}) {
				w.flowEmpty(ind+2, "cache", "{}")
			} else {
				w.open(ind+2, "cache")
				w.optStr(ind+4, "scope", c.Scope)
				w.optInt(ind+4, "ttl_ms", int64(c.TTLMS))
				w.optInt(ind+4, "max_entries", int64(c.MaxEntries))
			}
		}
		w.optStr(ind+2, "static_answer", d.StaticAnswer)
	}
}

func writeCaller(w *textWriter, ind int, c *Caller) {
	w.int(ind, "id", c.ID)
	w.str(ind, "name", c.Name)
	w.optStr(ind, "business_line", c.BusinessLine)
	w.optStr(ind, "tenant", c.Tenant)
	w.str(ind, "route_group", c.RouteGroup)
	w.str(ind, "priority_class", string(c.PriorityClass))
	w.bool(ind, "enabled", c.Enabled)
	writeList(w, ind, "limits", c.Limits, false, func(w *textWriter, ind int, l *TierLimit) {
		w.str(ind, "tier", string(l.Tier))
		w.int(ind, "rpm", l.RPM)
		w.int(ind, "tpm", l.TPM)
		w.int(ind, "daily_tokens", l.DailyTokens)
	})
	if c.MonthlyBudgetMicros != 0 {
		w.micros(ind, "monthly_budget", c.MonthlyBudgetMicros)
	}
	w.optStr(ind, "budget_currency", c.BudgetCurrency)
	writeList(w, ind, "keys", c.Keys, false, func(w *textWriter, ind int, k *CallerKey) {
		w.int(ind, "id", k.ID)
		w.optStr(ind, "name", k.Name)
		w.str(ind, "prefix", k.Prefix)
	})
}
