package dashboard

import (
	"cmp"
	"math"
	"strconv"
	"strings"
	"time"

	"switchyard/routing/record"
)

// Chart is a server-rendered SVG line chart over evenly spaced time steps.
type Chart struct {
	TestID string
	Title  string
	// Unit labels the y axis ("requests", "%", "ms", "tokens", "USD").
	Unit   string
	Times  []time.Time // one per step, oldest first
	Series []Series
	// Format formats a y value for ticks; nil uses Compact.
	Format func(float64) string
	// Note is shown under the chart (e.g. what is counted).
	Note string
	// NoData marks a range without any call: the chart says so instead of
	// drawing flat lines.
	NoData bool
	// EmptyText replaces the "no calls" message of a chart with nothing to
	// draw when the range has calls (e.g. none of them queued).
	EmptyText string
}

// Series is one line. Values has one entry per step; where Has is set and
// false the step has no value (the line breaks there).
type Series struct {
	Name string
	// Color is the line's colour; "" takes the palette's next one. Status
	// series use their status colour (StatusColor).
	Color  string
	Values []float64
	Has    []bool
	// Dashed draws the line dashed and without dots (a limit, not data).
	Dashed bool
}

func (s Series) has(i int) bool {
	if i >= len(s.Values) {
		return false
	}
	return s.Has == nil || (i < len(s.Has) && s.Has[i])
}

// Geometry of the SVG, in viewBox units.
const (
	chartW   = 640
	chartH   = 220
	padLeft  = 58
	padRight = 24
	padTop   = 12
	padBot   = 30
)

// Status colours: a call status has one colour in every chart, the same as
// its badge in the call log (app.css): answered green, an upstream error
// red, rejected by us amber, cancelled grey; the total of requests is blue.
const (
	ColorRequests      = "#2557d6"
	ColorOK            = "#1a7f37"
	ColorUpstreamError = "#c62828"
	ColorRejected      = "#9a6700"
	ColorCancelled     = "#5d6778"
)

// Palette colours series that are not statuses (groups, quantiles, token
// kinds) in order; the status colours come last, so a group is not read
// as an error or a rejection.
var Palette = []string{"#2557d6", "#7b3fb8", "#0a7e8c", "#d4570b", "#b0307a", "#4a6b00", "#5d6778", "#c62828", "#1a7f37", "#9a6700"}

// Color is the colour of the i-th series.
func Color(i int) string { return Palette[i%len(Palette)] }

// StatusColor is the colour of a call status (record.Status*), "" for
// anything else.
func StatusColor(status record.Status) string {
	switch status {
	case record.StatusOK:
		return ColorOK
	case record.StatusUpstreamError:
		return ColorUpstreamError
	case record.StatusRejected:
		return ColorRejected
	case record.StatusClientCancelled:
		return ColorCancelled
	}
	return ""
}

// Empty reports whether there is nothing to draw.
func (c Chart) Empty() bool {
	if c.NoData || len(c.Times) == 0 {
		return true
	}
	for _, s := range c.Series {
		for i := range s.Values {
			if s.has(i) {
				return false
			}
		}
	}
	return true
}

// Plot is a chart laid out for rendering.
type Plot struct {
	W, H         int
	X0, X1       float64 // plot area
	Y0, Y1       float64 // Y0 top, Y1 bottom
	YTicks       []Tick
	XTicks       []Tick
	Lines        []Line
	ViewBox      string
	AriaLabel    string
	LegendSeries []LegendItem
}

// Tick is an axis tick: its position and label.
type Tick struct {
	Pos   float64
	Label string
}

// Line is one series' path and its points.
type Line struct {
	Name   string
	Color  string
	D      string
	Dots   []Dot
	Dashed bool
}

// Dot is one data point, with a tooltip.
type Dot struct {
	X, Y  float64
	Title string
}

// LegendItem is one entry of the legend.
type LegendItem struct {
	Name, Color string
}

// Layout computes the plot.
func (c Chart) Layout() Plot {
	format := c.Format
	if format == nil {
		format = Compact
	}
	p := Plot{W: chartW, H: chartH, X0: padLeft, X1: chartW - padRight, Y0: padTop, Y1: chartH - padBot}
	p.ViewBox = "0 0 " + strconv.Itoa(chartW) + " " + strconv.Itoa(chartH)
	p.AriaLabel = c.Title
	n := len(c.Times)
	maxV := 0.0
	for _, s := range c.Series {
		for i, v := range s.Values {
			if s.has(i) && v > maxV {
				maxV = v
			}
		}
	}
	top, step := niceScale(maxV)
	for v := 0.0; v <= top+step/2; v += step {
		p.YTicks = append(p.YTicks, Tick{Pos: p.yOf(v, top), Label: format(v)})
	}
	x := func(i int) float64 {
		if n <= 1 {
			return (p.X0 + p.X1) / 2
		}
		return p.X0 + (p.X1-p.X0)*float64(i)/float64(n-1)
	}
	for _, i := range tickIndexes(n, 6) {
		p.XTicks = append(p.XTicks, Tick{Pos: x(i), Label: timeLabel(c.Times, i)})
	}
	for si, s := range c.Series {
		l := Line{Name: s.Name, Color: cmp.Or(s.Color, Color(si)), Dashed: s.Dashed}
		var b strings.Builder
		pen := false
		for i := 0; i < n; i++ {
			if !s.has(i) {
				pen = false
				continue
			}
			v := s.Values[i]
			px, py := x(i), p.yOf(v, top)
			if pen {
				b.WriteString(" L")
			} else {
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
				b.WriteString("M")
			}
			b.WriteString(num(px) + " " + num(py))
			pen = true
			if s.Dashed {
				continue
			}
			l.Dots = append(l.Dots, Dot{X: px, Y: py, Title: s.Name + " · " + timeLabel(c.Times, i) + ": " + format(v)})
		}
		l.D = b.String()
		p.Lines = append(p.Lines, l)
		p.LegendSeries = append(p.LegendSeries, LegendItem{Name: s.Name, Color: l.Color})
	}
	return p
}

func (p Plot) yOf(v, top float64) float64 {
	if top <= 0 {
		return p.Y1
	}
	return p.Y1 - (p.Y1-p.Y0)*v/top
}

// NiceScale is niceScale, for other pages' charts.
func NiceScale(max float64) (top, step float64) { return niceScale(max) }

// niceScale returns an axis top >= max and a tick step, both round numbers
// (1, 2 or 5 × 10^k), with about four steps.
func niceScale(max float64) (top, step float64) {
	if max <= 0 || math.IsNaN(max) || math.IsInf(max, 0) {
		return 1, 0.2
	}
	raw := max / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / mag; {
	case f <= 1:
		step = mag
	case f <= 2:
		step = 2 * mag
	case f <= 5:
		step = 5 * mag
	default:
		step = 10 * mag
	}
	top = math.Ceil(max/step) * step
	return top, step
}

// tickIndexes picks at most k evenly spread indexes of n steps.
func tickIndexes(n, k int) []int {
	if n <= 0 {
		return nil
	}
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, 0, k)
	for j := 0; j < k; j++ {
		out = append(out, j*(n-1)/(k-1))
	}
	return out
}

func timeLabel(ts []time.Time, i int) string {
	if i >= len(ts) {
		return ""
	}
	t := ts[i].UTC()
	if len(ts) > 1 {
		span := ts[len(ts)-1].Sub(ts[0])
		step := ts[1].Sub(ts[0])
		switch {
		case step >= 24*time.Hour:
			return t.Format("Jan 2")
		case span > 36*time.Hour:
			return t.Format("Jan 2 15:04")
		}
	}
	return t.Format("15:04")
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// Compact formats a count: 950, 1.2k, 3.4M.
func Compact(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return trimZero(strconv.FormatFloat(v/1e9, 'f', 1, 64)) + "G"
	case a >= 1e6:
		return trimZero(strconv.FormatFloat(v/1e6, 'f', 1, 64)) + "M"
	case a >= 1e3:
		return trimZero(strconv.FormatFloat(v/1e3, 'f', 1, 64)) + "k"
	case a == math.Trunc(a):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return trimZero(strconv.FormatFloat(v, 'f', 1, 64))
	}
	// Small amounts (per-hour costs): two significant digits.
	decimals := min(int(-math.Floor(math.Log10(a)))+1, 10)
	return trimZero(strconv.FormatFloat(v, 'f', decimals, 64))
}

// Percent formats a percentage.
func Percent(v float64) string {
	decimals := 1
	if a := math.Abs(v); a > 0 && a < 1 {
		decimals = 2
	}
	return trimZero(strconv.FormatFloat(v, 'f', decimals, 64)) + "%"
}

// Millis formats milliseconds.
func Millis(v float64) string {
	if v >= 10000 {
		return trimZero(strconv.FormatFloat(v/1000, 'f', 1, 64)) + " s"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
}

func trimZero(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
