package usage

import (
	"slices"
	"strconv"
	"time"

	"switchyard/views/components"
	"switchyard/views/pages/dashboard"
)

// Geometry of the SVGs, in viewBox units.
const (
	barsW, barsH                           = 640, 220
	barsLeft, barsRight, barsTop, barsBot  = 58, 12, 12, 30
	spendW, spendH, spendLeft, spendRight  = 640, 64, 8, 8
	spendBarY, spendBarH, spendMarkerExtra = 18, 22, 8
)

// Bars is a stacked bar chart laid out for rendering: a bar per day, a
// segment per logic model.
type Bars struct {
	ViewBox string
	Y0, Y1  float64
	X0, X1  float64
	YTicks  []dashboard.Tick
	XTicks  []dashboard.Tick
	Days    []Bar
	Legend  []dashboard.LegendItem
}

// Bar is one day's stack.
type Bar struct {
	Day      string
	Segments []Segment
}

// Segment is one logic model's tokens of one day.
type Segment struct {
	X, Y, W, H float64
	Color      string
	Title      string
}

// TokenBars lays out the tokens per day by logic model over the NumDays
// days from DaysFrom: one bar per day (a day without tokens has no
// segments), models coloured in order of their total tokens.
func (r Report) TokenBars() Bars {
	n := max(r.NumDays, 1)
	b := Bars{ViewBox: "0 0 " + strconv.Itoa(barsW) + " " + strconv.Itoa(barsH),
		X0: barsLeft, X1: barsW - barsRight, Y0: barsTop, Y1: barsH - barsBot}
	days := make([]time.Time, n)
	totals := make([]float64, n)
	byModel := map[string]int64{}
	for i := range days {
		days[i] = r.DaysFrom.AddDate(0, 0, i)
	}
	dayIndex := func(t time.Time) int {
		for i, d := range days {
			if d.Equal(t) {
				return i
			}
		}
		return -1
	}
	for _, d := range r.Days {
		if i := dayIndex(d.Day); i >= 0 {
			totals[i] += float64(d.PromptTokens + d.CompletionTokens)
			byModel[d.LogicModel] += d.PromptTokens + d.CompletionTokens
		}
	}
	models := make([]string, 0, len(byModel))
	for m := range byModel {
		models = append(models, m)
	}
	slices.SortFunc(models, func(a, c string) int {
		if byModel[a] != byModel[c] {
			return int(byModel[c] - byModel[a])
		}
		if a < c {
			return -1
		}
		return 1
	})
	color := map[string]string{}
	for i, m := range models {
		color[m] = dashboard.Color(i)
		b.Legend = append(b.Legend, dashboard.LegendItem{Name: m, Color: color[m]})
	}
	top, step := dashboard.NiceScale(slices.Max(totals))
	for v := 0.0; v <= top+step/2; v += step {
		b.YTicks = append(b.YTicks, dashboard.Tick{Pos: b.yOf(v, top), Label: dashboard.Compact(v)})
	}
	slot := (b.X1 - b.X0) / float64(n)
	width := slot * 0.7
	for i, day := range days {
		bar := Bar{Day: day.Format(time.DateOnly)}
		x := b.X0 + slot*float64(i) + (slot-width)/2
		base := 0.0
		for _, m := range models { // the biggest model at the bottom
			for _, d := range r.Days {
				if d.LogicModel != m || !d.Day.Equal(day) {
					continue
				}
				v := float64(d.PromptTokens + d.CompletionTokens)
				y0, y1 := b.yOf(base+v, top), b.yOf(base, top)
				bar.Segments = append(bar.Segments, Segment{X: x, Y: y0, W: width, H: y1 - y0, Color: color[m],
					Title: m + " · " + day.Format("Jan 2") + ": " + dashboard.Compact(v) + " tokens (" +
						dashboard.Compact(float64(d.PromptTokens)) + " in, " + dashboard.Compact(float64(d.CompletionTokens)) + " out)"})
				base += v
			}
		}
		b.Days = append(b.Days, bar)
		if i%max(n/6, 1) == 0 || i == n-1 {
			b.XTicks = append(b.XTicks, dashboard.Tick{Pos: x + width/2, Label: day.Format("Jan 2")})
		}
	}
	return b
}

func (b Bars) yOf(v, top float64) float64 {
	if top <= 0 {
		return b.Y1
	}
	return b.Y1 - (b.Y1-b.Y0)*v/top
}

// SpendBar is one currency's month as a horizontal bar: the budget as
// the track, the spend so far filled in, the projection as a marker.
type SpendBar struct {
	ViewBox                  string
	TrackX, TrackW           float64 // the budget (or the axis end without one)
	SpentW                   float64
	ProjectedX               float64
	BarY, BarH               float64
	MarkerY, MarkerH         float64
	Over                     bool
	HasBudget                bool
	SpentText, ProjectedText string
	BudgetText               string
}

// Bar lays out s. The axis runs to the largest of budget, spend and
// projection, so a projection past the budget shows past its end.
func (s Spend) Bar() SpendBar {
	b := SpendBar{ViewBox: "0 0 " + strconv.Itoa(spendW) + " " + strconv.Itoa(spendH), BarY: spendBarY, BarH: spendBarH,
		MarkerY: spendBarY - spendMarkerExtra/2, MarkerH: spendBarH + spendMarkerExtra, Over: s.Over(), HasBudget: s.BudgetMicros > 0,
		SpentText: components.Money(s.SpentMicros, s.Currency), ProjectedText: components.Money(s.ProjectedMicros, s.Currency),
		BudgetText: components.Money(s.BudgetMicros, s.Currency)}
	full := float64(max(s.BudgetMicros, s.SpentMicros, s.ProjectedMicros, 1))
	w := float64(spendW - spendLeft - spendRight)
	at := func(v int64) float64 { return w * float64(v) / full }
	b.TrackX = spendLeft
	b.TrackW = w
	if s.BudgetMicros > 0 {
		b.TrackW = at(s.BudgetMicros)
	}
	b.SpentW = at(s.SpentMicros)
	b.ProjectedX = spendLeft + at(s.ProjectedMicros)
	return b
}

// SpentShare is the spend so far as a percentage of the budget ("" without one).
func (s Spend) SpentShare() string {
	if s.BudgetMicros <= 0 {
		return ""
	}
	return dashboard.Percent(100 * float64(s.SpentMicros) / float64(s.BudgetMicros))
}
