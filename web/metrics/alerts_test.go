package metrics

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"
)

const rulesFile = "alerts/switchyard-rules.yml"

// The shipped alerting rules pass promtool. Without promtool the test is
// skipped, except in CI, where it fails (make test installs it).
func TestAlertRulesPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is missing (Debian's prometheus package; make test installs it)")
		}
		t.Skip("promtool is missing: install Debian's prometheus package (make test does) to check " + rulesFile)
	}
	out, err := exec.Command(promtool, "check", "rules", rulesFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// Every metric the shipped rules read is one the gateway registers.
func TestAlertRulesReadExportedMetrics(t *testing.T) {
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	exported := exportedNames(t)
	n := 0
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			names := exprMetrics(r.Expr)
			if len(names) == 0 {
				t.Errorf("%s reads no metric", r.Alert)
			}
			for _, name := range names {
				n++
				if !exported[name] {
					t.Errorf("%s reads %s, which the gateway does not export", r.Alert, name)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d metric references in %s", n, rulesFile)
	}
}

var (
	// identifiers followed by {, [ or a space/end (a selector), not by ( (a function).
	selectorRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*([\{\[]|$|\s|\))`)
	labelsRE   = regexp.MustCompile(`\{[^}]*\}`)
	promqlWord = []string{"sum", "max", "min", "avg", "count", "by", "on", "without", "ignoring", "group_left", "group_right",
		"and", "or", "unless", "rate", "increase", "histogram_quantile", "offset", "bool", "le", "tier", "class", "group", "caller",
		"provider", "deployment", "status"}
)

// exprMetrics are the metric names a PromQL expression selects.
func exprMetrics(expr string) []string {
	expr = labelsRE.ReplaceAllString(expr, "{}") // label matchers hold no metric names
	var out []string
	for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
		if name := m[1]; strings.HasPrefix(name, "switchyard_") || !slices.Contains(promqlWord, name) {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// exportedNames are the metric names of the gateway's registry: every
// collector New, Connections, QueueDepth and Alerting register, and the
// scrape-time gauges the gateway passes to New (gaugeHelp lists them).
func exportedNames(t *testing.T) map[string]bool {
	gauges := map[string]func() float64{}
	for name := range gaugeHelp {
		gauges[name] = func() float64 { return 0 }
	}
	m := New(gauges)
	m.Connections(func() (int, int) { return 0, 0 })
	m.QueueDepth(func(string) float64 { return 0 })
	m.Alerting(AlertingSources{})
	names := map[string]bool{}
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		names[f.GetName()] = true
	}
	// Vectors without series yet are not gathered: their descriptions name them.
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range []prometheus.Collector{m.Requests, m.Duration, m.TTFC, m.Tokens, m.Cost, m.Rejections, m.Attempts, m.Breakers,
			m.Reloads, m.Degraded, m.Budget, m.QueueWait, m.QueueRefused, m.Dropped, m.connClosed} {
			c.Describe(ch)
		}
		for _, c := range m.alerting {
			c.Describe(ch)
		}
		close(ch)
	}()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		if s := fq.FindStringSubmatch(d.String()); s != nil {
			names[s[1]] = true
		}
	}
	for _, h := range []string{"switchyard_request_duration_seconds", "switchyard_time_to_first_chunk_seconds", "switchyard_queue_wait_seconds"} {
		if names[h] {
			names[h+"_bucket"], names[h+"_sum"], names[h+"_count"] = true, true, true
		}
	}
	return names
}
