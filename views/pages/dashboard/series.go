package dashboard

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"switchyard/routing/record"
)

// maxGroups is how many groups get their own line; the rest are "other".
const maxGroups = 7

// Steps lists the step times of [from, to) (from aligned to the step).
func Steps(from, to time.Time, step time.Duration) []time.Time {
	var out []time.Time
	for t := from.UTC(); t.Before(to); t = t.Add(step) {
		out = append(out, t)
	}
	return out
}

// Total sums every point of a series query (grouped or not).
func Total(points []Point, quantile Quantile) Totals {
	t := Totals{CostMicros: map[string]int64{}}
	var hist []int64
	for _, p := range points {
		t.Requests += p.Requests
		t.Errors += p.Errors
		t.Rejected += p.Rejected
		t.Cancelled += p.Cancelled
		t.Tokens += p.PromptTokens + p.CompletionTokens
		for c, v := range p.CostMicros {
			t.CostMicros[c] += v
		}
		if hist == nil {
			hist = make([]int64, len(p.Hist))
		}
		for i, c := range p.Hist {
			hist[i] += c
		}
	}
	t.P95MS = quantile(hist, 0.95)
	return t
}

// bucket is one group at one step.
type bucket struct {
	requests, errors, rejected int64
	cancelled                  int64
	prompt, completion, cached int64
	costMicros                 map[string]int64
	hist                       []int64
}

func (b *bucket) add(p Point) {
	b.requests += p.Requests
	b.errors += p.Errors
	b.rejected += p.Rejected
	b.cancelled += p.Cancelled
	b.prompt += p.PromptTokens
	b.completion += p.CompletionTokens
	b.cached += p.CachedTokens
	if b.costMicros == nil {
		b.costMicros = map[string]int64{}
	}
	for c, v := range p.CostMicros {
		b.costMicros[c] += v
	}
	if b.hist == nil {
		b.hist = make([]int64, len(p.Hist))
	}
	for i, c := range p.Hist {
		b.hist[i] += c
	}
}

func (b *bucket) latencyCount() int64 {
	var n int64
	for _, c := range b.hist {
		n += c
	}
	return n
}

// Charts builds the five charts from a series query's points. Ungrouped,
// each chart shows the parts of one total (requests / errors / rejected,
// p50 / p95, prompt / completion / cached tokens, cost per currency);
// grouped, each chart has one line per group (the busiest seven, the rest
// summed as "other").
func Charts(points []Point, times []time.Time, groupBy string, quantile Quantile) []Chart {
	line, order := lineLabels(points, groupBy)
	grid := gridOf(points, times, line, order)
	noData := len(points) == 0
	mk := func(id, title, unit string, f func(float64) string) Chart {
		return Chart{TestID: id, Title: title, Unit: unit, Times: times, Format: f, NoData: noData}
	}
	cs := chartSet{
		req:  mk("chart-requests", "Requests", "per "+stepWord(times), Compact),
		err:  mk("chart-errors", "Error rate", "% of requests", Percent),
		lat:  mk("chart-latency", "Latency", "ms, calls not rejected", Millis),
		tok:  mk("chart-tokens", "Tokens", "per "+stepWord(times), Compact),
		cost: mk("chart-cost", "Cost", "per "+stepWord(times), Compact),
		plot: plotter{n: len(times), quantile: quantile},
	}
	currencies := currenciesOf(points)
	if groupBy == "" {
		all := make([]bucket, len(times))
		if len(order) > 0 {
			all = grid[order[0]]
		}
		cs.overall(all, currencies)
	} else {
		cs.grouped(order, grid, currencies, stepWord(times))
	}
	return []Chart{cs.req, cs.err, cs.lat, cs.tok, cs.cost}
}

// lineLabels picks the groups that get a line, busiest first: each group's
// line label, and the labels in order (past maxGroups, "other").
func lineLabels(points []Point, groupBy string) (map[string]string, []string) {
	reqs := map[string]int64{}
	for _, p := range points {
		reqs[p.Group] += p.Requests
	}
	names := make([]string, 0, len(reqs))
	for g := range reqs {
		names = append(names, g)
	}
	sort.Slice(names, func(a, b int) bool {
		if reqs[names[a]] != reqs[names[b]] {
			return reqs[names[a]] > reqs[names[b]]
		}
		return names[a] < names[b]
	})
	line := map[string]string{}
	var order []string
	for i, g := range names {
		label := g
		if groupBy == "" {
			label = ""
		} else if label == "" {
			label = "(none)"
		}
		if groupBy != "" && i >= maxGroups {
			label = "other"
		}
		line[g] = label
		if !slices.Contains(order, label) {
			order = append(order, label)
		}
	}
	return line, order
}

// gridOf sums the points into one bucket per line and time.
func gridOf(points []Point, times []time.Time, line map[string]string, order []string) map[string][]bucket {
	idx := make(map[int64]int, len(times))
	for i, t := range times {
		idx[t.Unix()] = i
	}
	grid := map[string][]bucket{}
	for _, l := range order {
		grid[l] = make([]bucket, len(times))
	}
	for _, p := range points {
		i, ok := idx[p.Time.Unix()]
		if !ok {
			continue
		}
		grid[line[p.Group]][i].add(p)
	}
	return grid
}

// plotter turns buckets into series.
type plotter struct {
	n        int
	quantile Quantile
}

func (pl plotter) series(name string, f func(b *bucket) (float64, bool), buckets []bucket) Series {
	s := Series{Name: name, Values: make([]float64, pl.n), Has: make([]bool, pl.n)}
	for i := range buckets {
		s.Values[i], s.Has[i] = f(&buckets[i])
	}
	return s
}

func count(get func(b *bucket) int64) func(b *bucket) (float64, bool) {
	return func(b *bucket) (float64, bool) { return float64(get(b)), true }
}

func errRate(b *bucket) (float64, bool) { return rate(b.errors, b.requests), b.requests > 0 }

func rejRate(b *bucket) (float64, bool) { return rate(b.rejected, b.requests), b.requests > 0 }

func non2xx(b *bucket) (float64, bool) {
	return rate(b.errors+b.rejected+b.cancelled, b.requests), b.requests > 0
}

func (pl plotter) quant(q float64) func(b *bucket) (float64, bool) {
	return func(b *bucket) (float64, bool) {
		if b.latencyCount() == 0 {
			return 0, false
		}
		return pl.quantile(b.hist, q), true
	}
}

// costIn is a bucket's cost in cur. A chart plots coordinates: whole
// currency units as a float are exact enough to draw; amounts as text use
// components.Money.
func costIn(cur string) func(b *bucket) (float64, bool) {
	return func(b *bucket) (float64, bool) { return float64(b.costMicros[cur]) / 1e6, true }
}

// chartSet is the dashboard's five charts being filled.
type chartSet struct {
	req, err, lat, tok, cost Chart
	plot                     plotter
}

// overall fills the charts of all traffic: a line per status, quantile,
// token kind and currency.
func (cs *chartSet) overall(all []bucket, currencies []string) {
	s := cs.plot.series
	colored := func(s Series, color string) Series { s.Color = color; return s }
	cs.req.Series = []Series{
		colored(s("requests", count(func(b *bucket) int64 { return b.requests }), all), ColorRequests),
		colored(s("upstream errors", count(func(b *bucket) int64 { return b.errors }), all), StatusColor(record.StatusUpstreamError)),
		colored(s("rejected by us", count(func(b *bucket) int64 { return b.rejected }), all), StatusColor(record.StatusRejected)),
	}
	cs.err.Series = []Series{
		colored(s("upstream errors", errRate, all), StatusColor(record.StatusUpstreamError)),
		colored(s("rejected by us", rejRate, all), StatusColor(record.StatusRejected)),
	}
	cs.lat.Series = []Series{s("p50", cs.plot.quant(0.5), all), s("p95", cs.plot.quant(0.95), all)}
	cs.tok.Series = []Series{
		s("prompt", count(func(b *bucket) int64 { return b.prompt }), all),
		s("completion", count(func(b *bucket) int64 { return b.completion }), all),
		s("cached", count(func(b *bucket) int64 { return b.cached }), all),
	}
	for _, cur := range currencies {
		cs.cost.Series = append(cs.cost.Series, s(orNone(cur, "no currency"), costIn(cur), all))
	}
	if len(currencies) == 0 {
		cs.cost.Series = []Series{s("cost", count(func(*bucket) int64 { return 0 }), all)}
	}
}

// grouped fills the charts with a line per group; cost in the first
// currency only.
func (cs *chartSet) grouped(order []string, grid map[string][]bucket, currencies []string, step string) {
	s := cs.plot.series
	cur := ""
	if len(currencies) > 0 {
		cur = currencies[0]
	}
	for _, l := range order {
		b := grid[l]
		cs.req.Series = append(cs.req.Series, s(l, count(func(b *bucket) int64 { return b.requests }), b))
		cs.err.Series = append(cs.err.Series, s(l, non2xx, b))
		cs.lat.Series = append(cs.lat.Series, s(l+" p95", cs.plot.quant(0.95), b))
		cs.tok.Series = append(cs.tok.Series, s(l, count(func(b *bucket) int64 { return b.prompt + b.completion }), b))
		cs.cost.Series = append(cs.cost.Series, s(l, costIn(cur), b))
	}
	cs.err.Note = "Every non-2xx answer (upstream errors, our refusals and 503s, cancellations) as a share of each group's requests."
	cs.tok.Note = "Prompt + completion tokens."
	if cur != "" {
		cs.cost.Unit = cur + " per " + step
	}
	if len(currencies) > 1 {
		cs.cost.Note = "Only " + cur + " is drawn; the tables below list every currency."
	}
}

func currenciesOf(points []Point) []string {
	sum := map[string]int64{}
	for _, p := range points {
		for c, v := range p.CostMicros {
			sum[c] += v
		}
	}
	out := make([]string, 0, len(sum))
	for c := range sum {
		out = append(out, c)
	}
	sort.Slice(out, func(a, b int) bool {
		if sum[out[a]] != sum[out[b]] {
			return sum[out[a]] > sum[out[b]]
		}
		return out[a] < out[b]
	})
	return out
}

func stepWord(times []time.Time) string {
	switch {
	case len(times) > 1 && times[1].Sub(times[0]) >= 24*time.Hour:
		return "day"
	case len(times) > 1 && times[1].Sub(times[0]) < time.Hour:
		return "minute"
	}
	return "hour"
}

// QueuePoint is one step of one priority class of the queue roll-up.
type QueuePoint struct {
	Time            time.Time
	Class           string // interactive | normal | batch
	Queued, Refused int64
	// MeanDepth is the mean number of requests waiting over the step.
	MeanDepth float64
	// Hist is the wait histogram (the store's fixed buckets).
	Hist []int64
}

// QueueClasses are the priority classes, one line each.
var QueueClasses = []string{"interactive", "normal", "batch"}

// QueueCharts builds the two queue charts (calls is how many calls the
// range holds: a range with calls but no queueing draws flat lines, not
// "no calls"): mean queue depth per class (the
// waits summed over the step, divided by its length) and the p95 wait per
// class of the requests that queued; the note counts what the queues
// refused.
func QueueCharts(points []QueuePoint, times []time.Time, calls int64, quantile Quantile) []Chart {
	idx := make(map[int64]int, len(times))
	for i, t := range times {
		idx[t.Unix()] = i
	}
	n := len(times)
	depth := Chart{TestID: "chart-queue-depth", Title: "Queue depth", Unit: "mean requests waiting", Times: times, Format: Compact, NoData: calls == 0 && len(points) == 0}
	wait := Chart{TestID: "chart-queue-wait", Title: "Queue wait", Unit: "ms, p95 of requests that queued", Times: times, Format: Millis, NoData: calls == 0 && len(points) == 0}
	var refused []string
	for _, class := range QueueClasses {
		d := Series{Name: class, Values: make([]float64, n), Has: make([]bool, n)}
		w := Series{Name: class + " p95", Values: make([]float64, n), Has: make([]bool, n)}
		for i := range d.Has {
			d.Has[i] = true // no point: nobody waited
		}
		var ref int64
		for _, p := range points {
			if p.Class != class {
				continue
			}
			ref += p.Refused
			i, ok := idx[p.Time.Unix()]
			if !ok {
				continue
			}
			d.Values[i] = p.MeanDepth
			if p.Queued > 0 {
				w.Values[i], w.Has[i] = quantile(p.Hist, 0.95), true
			}
		}
		depth.Series = append(depth.Series, d)
		wait.Series = append(wait.Series, w)
		if ref > 0 {
			refused = append(refused, class+" "+strconv.FormatInt(ref, 10))
		}
	}
	depth.Note = "Requests wait in their class's queue when the instance or every deployment they may use is at capacity; they are let in 10 : 3 : 1."
	wait.EmptyText = "No request waited in a queue in this range, so there is no wait to draw."
	if len(points) == 0 && calls > 0 {
		depth.Note = strconv.FormatInt(calls, 10) + " call(s) in this range, none of which waited in a queue: every one was let in at once. " + depth.Note
	}
	if len(refused) > 0 {
		wait.Note = "Refused by a full queue or shed for an interactive request: " + strings.Join(refused, ", ") + "."
	} else {
		wait.Note = "No request was refused by a full queue in this range."
	}
	return []Chart{depth, wait}
}
