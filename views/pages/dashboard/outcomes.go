package dashboard

import (
	"cmp"
	"slices"
	"time"
)

// OutcomePoint is one step of one route group × tier × outcome of the
// per-minute outcome roll-up: Outcome is "" for answered (2xx) requests,
// else the error code — every non-2xx, ours and the vendors'.
type OutcomePoint struct {
	Time                 time.Time
	Group, Tier, Outcome string
	Requests             int64
	Hist                 []int64
}

// ErrorCause is one route group × tier × cause over the range, with the
// group × tier's requests.
type ErrorCause struct {
	Group, Tier, Cause string
	Count, Requests    int64
}

// Rate is the cause's share of the group × tier's requests, in percent.
func (e ErrorCause) Rate() float64 { return rate(e.Count, e.Requests) }

// maxCauses is how many causes get their own line in the error chart.
const maxCauses = 6

// Causes sums outcome points into every route group × tier × cause with
// its share, the largest share first.
func Causes(points []OutcomePoint) []ErrorCause {
	type gt struct{ g, t string }
	reqs := map[gt]int64{}
	idx := map[ErrorCause]int{}
	var out []ErrorCause
	for _, p := range points {
		k := gt{p.Group, p.Tier}
		reqs[k] += p.Requests
		if p.Outcome == "" {
			continue
		}
		key := ErrorCause{Group: p.Group, Tier: p.Tier, Cause: p.Outcome}
		i, ok := idx[key]
		if !ok {
			i = len(out)
			out = append(out, key)
			idx[key] = i
		}
		out[i].Count += p.Requests
	}
	for i := range out {
		out[i].Requests = reqs[gt{out[i].Group, out[i].Tier}]
	}
	slices.SortFunc(out, func(a, b ErrorCause) int {
		return cmp.Or(cmp.Compare(b.Rate(), a.Rate()), cmp.Compare(b.Count, a.Count), cmp.Compare(a.Group, b.Group),
			cmp.Compare(a.Tier, b.Tier), cmp.Compare(a.Cause, b.Cause))
	})
	return out
}

// errorLines labels each error line, busiest first (past maxCauses, by
// code, "other"), and returns the labels in order.
func errorLines(points []OutcomePoint, line func(OutcomePoint) string, byTier bool) (map[string]string, []string) {
	counts := map[string]int64{}
	for _, p := range points {
		if p.Outcome != "" {
			counts[line(p)] += p.Requests
		}
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b)) })
	label := map[string]string{}
	var order []string
	for i, n := range names {
		l := n
		if !byTier && i >= maxCauses {
			l = "other"
		}
		label[n] = l
		if !slices.Contains(order, l) {
			order = append(order, l)
		}
	}
	return label, order
}

// ErrorChart is the error rate from the outcome roll-up: every non-2xx as
// a share of requests. Ungrouped, one line per cause (the most frequent
// ones, the rest as "other") and one for every cause together; by tier,
// one line per tier.
func ErrorChart(points []OutcomePoint, times []time.Time, byTier bool) Chart {
	c := Chart{TestID: "chart-errors", Title: "Error rate", Unit: "% of requests, every non-2xx", Times: times, Format: Percent, NoData: len(points) == 0}
	idx := make(map[int64]int, len(times))
	for i, t := range times {
		idx[t.Unix()] = i
	}
	line := func(p OutcomePoint) string { return p.Outcome }
	if byTier {
		line = func(p OutcomePoint) string { return orNone(p.Tier, "(no tier)") }
	}
	label, order := errorLines(points, line, byTier)
	n := len(times)
	total := make([]int64, n)
	bad := map[string][]int64{}
	all := make([]int64, n)
	groupReqs := map[string][]int64{}
	for _, p := range points {
		i, ok := idx[p.Time.Unix()]
		if !ok {
			continue
		}
		total[i] += p.Requests
		if byTier {
			t := orNone(p.Tier, "(no tier)")
			if groupReqs[t] == nil {
				groupReqs[t] = make([]int64, n)
			}
			groupReqs[t][i] += p.Requests
		}
		if p.Outcome == "" {
			continue
		}
		all[i] += p.Requests
		l := label[line(p)]
		if bad[l] == nil {
			bad[l] = make([]int64, n)
		}
		bad[l][i] += p.Requests
	}
	share := func(name string, num, of []int64, color string) Series {
		s := Series{Name: name, Color: color, Values: make([]float64, n), Has: make([]bool, n)}
		for i := range s.Values {
			if of != nil && of[i] > 0 {
				s.Values[i], s.Has[i] = rate(num[i], of[i]), true
			}
		}
		return s
	}
	if !byTier {
		c.Series = append(c.Series, share("every non-2xx", all, total, ColorUpstreamError))
	}
	for i, l := range order {
		of := total
		if byTier {
			of = groupReqs[l]
		}
		c.Series = append(c.Series, share(l, bad[l], of, Color(i+1)))
	}
	if len(order) == 0 {
		c.Series = append(c.Series, share("every non-2xx", all, total, ColorUpstreamError))
	}
	c.Note = "Every non-2xx answer counts — upstream errors, our own refusals (rate and budget limits, full queues) and 503s when nothing can serve — by its error code; the table under the charts splits them by route group × tier."
	return c
}

// MinutePoints turns outcome points into series points for the requests
// and latency charts of a per-minute range (grouped by tier or not):
// Errors holds every non-2xx.
func MinutePoints(points []OutcomePoint, byTier bool) []Point {
	var out []Point
	at := map[[2]string]int{}
	for _, p := range points {
		g := ""
		if byTier {
			g = p.Tier
		}
		k := [2]string{p.Time.Format(time.RFC3339), g}
		i, ok := at[k]
		if !ok {
			i = len(out)
			out = append(out, Point{Time: p.Time, Group: g, Hist: make([]int64, len(p.Hist))})
			at[k] = i
		}
		q := &out[i]
		q.Requests += p.Requests
		if p.Outcome != "" {
			q.Errors += p.Requests
		}
		for j, v := range p.Hist {
			q.Hist[j] += v
		}
	}
	return out
}
