package metrics

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// A small reader of the PromQL the repository ships (the Grafana
// dashboard, alert rules): it finds every metric selector with the label
// names it matches on, and the label names of every grouping, so a test can
// hold them against the series the gateway exports. It is no PromQL
// parser: it knows strings, ranges, label matchers, groupings and which
// names are functions or operators, which is all these checks need.

// selectorRef is one metric selector: its metric name ("" when only
// matchers select it) and the label names its matchers use.
type selectorRef struct {
	Name   string
	Labels []string
}

// exprRefs is what one expression refers to.
type exprRefs struct {
	Selectors []selectorRef
	// Grouping are the label names of by, without, on, ignoring,
	// group_left and group_right.
	Grouping []string
}

// aggregators are PromQL's aggregation operators: a name that may be
// followed by a grouping before its parenthesis.
var aggregators = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
	"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
}

// groupingWords are followed by a parenthesised list of label names.
var groupingWords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// operatorWords are keywords and constants that are not metric names.
var operatorWords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true, "inf": true, "nan": true}

// promqlRefs reads expr's selectors and groupings.
func promqlRefs(expr string) (exprRefs, error) {
	l := &promqlLexer{s: expr}
	var out exprRefs
	for {
		l.space()
		if l.done() {
			return out, nil
		}
		c := l.s[l.i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			if err := l.skipString(); err != nil {
				return out, err
			}
		case c == '[':
			if err := l.skipTo(']'); err != nil {
				return out, err
			}
		case c == '{':
			labels, err := l.matchers()
			if err != nil {
				return out, err
			}
			out.Selectors = append(out.Selectors, selectorRef{Labels: labels})
		case c == '$': // a Grafana variable: $__rate_interval, ${name}
			l.i++
			if !l.done() && l.s[l.i] == '{' {
				if err := l.skipTo('}'); err != nil {
					return out, err
				}
			} else {
				l.ident()
			}
		case isDigit(c) || (c == '.' && l.i+1 < len(l.s) && isDigit(l.s[l.i+1])):
			for !l.done() && (isIdentChar(l.s[l.i]) || l.s[l.i] == '.') {
				l.i++
			}
		case isIdentStart(c):
			if err := l.word(&out); err != nil {
				return out, err
			}
		default:
			l.i++
		}
	}
}

// word reads a name: a grouping, an operator, a function or a metric.
func (l *promqlLexer) word(out *exprRefs) error {
	name := l.ident()
	switch {
	case groupingWords[name]:
		l.space()
		if l.done() || l.s[l.i] != '(' {
			return nil // group_left without labels
		}
		labels, err := l.labelList()
		out.Grouping = append(out.Grouping, labels...)
		return err
	case operatorWords[strings.ToLower(name)], aggregators[name]:
		return nil
	}
	l.space()
	if !l.done() && l.s[l.i] == '(' {
		return nil // a function
	}
	sel := selectorRef{Name: name}
	if !l.done() && l.s[l.i] == '{' {
		labels, err := l.matchers()
		if err != nil {
			return err
		}
		sel.Labels = labels
	}
	out.Selectors = append(out.Selectors, sel)
	return nil
}

type promqlLexer struct {
	s string
	i int
}

func (l *promqlLexer) done() bool { return l.i >= len(l.s) }

func (l *promqlLexer) space() {
	for !l.done() && strings.ContainsRune(" \t\r\n", rune(l.s[l.i])) {
		l.i++
	}
}

func (l *promqlLexer) ident() string {
	start := l.i
	for !l.done() && isIdentChar(l.s[l.i]) {
		l.i++
	}
	return l.s[start:l.i]
}

func (l *promqlLexer) skipString() error {
	q := l.s[l.i]
	for l.i++; !l.done(); l.i++ {
		switch l.s[l.i] {
		case '\\':
			if q != '`' {
				l.i++
			}
		case q:
			l.i++
			return nil
		}
	}
	return fmt.Errorf("unterminated string in %q", l.s)
}

func (l *promqlLexer) skipTo(end byte) error {
	if i := strings.IndexByte(l.s[l.i:], end); i >= 0 {
		l.i += i + 1
		return nil
	}
	return fmt.Errorf("no %q closes %q", end, l.s)
}

// matchers reads {label op "value", …} and returns the label names.
func (l *promqlLexer) matchers() ([]string, error) {
	l.i++ // {
	var labels []string
	for {
		l.space()
		if l.done() {
			return nil, fmt.Errorf("no '}' closes the matchers of %q", l.s)
		}
		switch c := l.s[l.i]; {
		case c == '}':
			l.i++
			return labels, nil
		case c == ',':
			l.i++
		case c == '"' || c == '\'' || c == '`':
			if err := l.skipString(); err != nil {
				return nil, err
			}
		case isIdentStart(c):
			labels = append(labels, l.ident())
		case strings.IndexByte("=!~", c) >= 0:
			l.i++
		default:
			return nil, fmt.Errorf("unexpected %q in the matchers of %q", c, l.s)
		}
	}
}

// labelList reads (label, …).
func (l *promqlLexer) labelList() ([]string, error) {
	l.i++ // (
	var labels []string
	for {
		l.space()
		if l.done() {
			return nil, fmt.Errorf("no ')' closes a grouping of %q", l.s)
		}
		switch c := l.s[l.i]; {
		case c == ')':
			l.i++
			return labels, nil
		case c == ',':
			l.i++
		case isIdentStart(c):
			labels = append(labels, l.ident())
		default:
			return nil, fmt.Errorf("unexpected %q in a grouping of %q", c, l.s)
		}
	}
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// targetLabels are added by Prometheus to every scraped series.
var targetLabels = []string{"instance", "job"}

// exportedSeries builds the registry as the gateway does (every callback
// gauge, the queue depths, the connection gauges) with one series of every
// vector, and returns each series name an expression can select with its
// label names: a histogram is its _bucket (with le), _sum and _count.
func exportedSeries(t testing.TB) map[string][]string {
	t.Helper()
	gauges := map[string]func() float64{}
	for name := range gaugeHelp {
		gauges[name] = func() float64 { return 0 }
	}
	m := New(gauges)
	m.QueueDepth(func(string) float64 { return 0 })
	m.Connections(func() (int, int) { return 0, 0 })
	vectors := []any{m.connClosed}
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() && v.Field(i).MethodByName("GetMetricWithLabelValues").IsValid() {
			vectors = append(vectors, v.Field(i).Interface())
		}
	}
	for _, vec := range vectors {
		touch(t, vec)
	}
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range families {
		var labels []string
		if ms := f.GetMetric(); len(ms) > 0 {
			for _, lp := range ms[0].GetLabel() {
				labels = append(labels, lp.GetName())
			}
		}
		name := f.GetName()
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			out[name+"_bucket"] = append(slices.Clone(labels), "le")
			out[name+"_sum"], out[name+"_count"] = labels, labels
		case dto.MetricType_SUMMARY:
			out[name] = append(slices.Clone(labels), "quantile")
			out[name+"_sum"], out[name+"_count"] = labels, labels
		default:
			out[name] = labels
		}
	}
	return out
}

// touch records one series of a vector, whatever its number of labels.
func touch(t testing.TB, vec any) {
	t.Helper()
	get := reflect.ValueOf(vec).MethodByName("GetMetricWithLabelValues")
	for n := range 12 {
		args := make([]reflect.Value, n)
		for i := range args {
			args[i] = reflect.ValueOf("x")
		}
		if res := get.Call(args); res[1].IsNil() {
			return
		}
	}
	t.Fatalf("no label count fits the vector %T", vec)
}

// exprProblems lists what expr refers to that the gateway does not export:
// an unknown metric, a matcher's label the metric lacks, a grouping label
// none of the expression's metrics has.
func exprProblems(series map[string][]string, expr string) []string {
	refs, err := promqlRefs(expr)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	union := slices.Clone(targetLabels)
	if len(refs.Selectors) == 0 {
		problems = append(problems, "selects no metric")
	}
	for _, s := range refs.Selectors {
		labels, ok := series[s.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("no metric %q", s.Name))
			continue
		}
		union = append(union, labels...)
		for _, l := range s.Labels {
			if !slices.Contains(labels, l) && !slices.Contains(targetLabels, l) {
				problems = append(problems, fmt.Sprintf("%s has no label %q", s.Name, l))
			}
		}
	}
	for _, l := range refs.Grouping {
		if !slices.Contains(union, l) {
			problems = append(problems, fmt.Sprintf("grouping label %q is on none of its metrics", l))
		}
	}
	return problems
}

func TestPromqlRefs(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want exprRefs
	}{
		{`sum by (tier, status) (rate(switchyard_requests_total{status!="ok", class=~"a|b"}[$__rate_interval]))`,
			exprRefs{Selectors: []selectorRef{{"switchyard_requests_total", []string{"status", "class"}}}, Grouping: []string{"tier", "status"}}},
		{`histogram_quantile(0.95, sum without (caller) (rate(x_bucket[5m] offset 1h))) * 3600 / on (job) group_left up`,
			exprRefs{Selectors: []selectorRef{{"x_bucket", nil}, {"up", nil}}, Grouping: []string{"caller", "job"}}},
		{`max(a) > bool 1e3 and {__name__="b", le="0.5"}`,
			exprRefs{Selectors: []selectorRef{{"a", nil}, {"", []string{"__name__", "le"}}}}},
		{`count(foo{path="{not}a(label)"}) or vector(0)`,
			exprRefs{Selectors: []selectorRef{{"foo", []string{"path"}}}}},
	} {
		got, err := promqlRefs(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.expr, got, tc.want)
		}
	}
}

// The checker catches what it is for: a wrong name, a label the metric
// lacks, a grouping no metric has.
func TestExprProblems(t *testing.T) {
	series := exportedSeries(t)
	for expr, want := range map[string]string{
		`rate(switchyard_requests_total{status="ok"}[5m])`:                                                  "",
		`histogram_quantile(0.9, sum by (le, tier) (rate(switchyard_request_duration_seconds_bucket[5m])))`: "",
		`sum by (instance) (switchyard_redis_degraded)`:                                                     "",
		`rate(switchyard_request_total[5m])`:                                                                `no metric "switchyard_request_total"`,
		`rate(switchyard_requests_total{deployment="3"}[5m])`:                                               `switchyard_requests_total has no label "deployment"`,
		`sum by (le) (switchyard_tokens_total)`:                                                             `grouping label "le" is on none of its metrics`,
	} {
		got := strings.Join(exprProblems(series, expr), "; ")
		if got != want {
			t.Errorf("%s: problems %q, want %q", expr, got, want)
		}
	}
}
