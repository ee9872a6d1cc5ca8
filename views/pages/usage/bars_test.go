package usage

import (
	"testing"
	"time"
)

// The spend bar's axis runs to the largest of budget, spend and projection:
// a projection past the budget is drawn past the budget's end, in red.
func TestSpendBar(t *testing.T) {
	over := Spend{Currency: "USD", SpentMicros: 3_000_000, BudgetMicros: 4_000_000, ProjectedMicros: 8_000_000}.Bar()
	if !over.Over || over.ProjectedX <= over.TrackX+over.TrackW || over.SpentW >= over.TrackW {
		t.Errorf("over budget: %+v", over)
	}
	if markerColor(over.Over) != "#c62828" {
		t.Error("a projection past the budget is not red")
	}
	within := Spend{Currency: "USD", SpentMicros: 1_000_000, BudgetMicros: 10_000_000, ProjectedMicros: 4_000_000}.Bar()
	if within.Over || within.TrackW != 640-16 || within.SpentW != within.TrackW/10 || within.ProjectedText != "4 USD" {
		t.Errorf("within budget: %+v", within)
	}
	none := Spend{Currency: "EUR", SpentMicros: 2, ProjectedMicros: 4}.Bar()
	if none.HasBudget || none.Over || none.SpentW != none.TrackW/2 {
		t.Errorf("no budget: %+v", none)
	}
}

// Tokens per day stack the models of a day, the model with the most tokens
// at the bottom, and leave days without tokens empty.
func TestTokenBars(t *testing.T) {
	from := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	r := Report{DaysFrom: from, NumDays: 3, Days: []DayTokens{
		{Day: from, LogicModel: "small", PromptTokens: 10, CompletionTokens: 10},
		{Day: from, LogicModel: "big", PromptTokens: 100},
		{Day: from.AddDate(0, 0, 2), LogicModel: "small", PromptTokens: 5},
	}}
	b := r.TokenBars()
	if len(b.Days) != 3 || len(b.Days[0].Segments) != 2 || len(b.Days[1].Segments) != 0 || len(b.Days[2].Segments) != 1 {
		t.Fatalf("bars = %+v", b.Days)
	}
	bottom, top := b.Days[0].Segments[0], b.Days[0].Segments[1]
	if bottom.Color != b.Legend[0].Color || b.Legend[0].Name != "big" || top.Y+top.H != bottom.Y || bottom.Y+bottom.H != b.Y1 {
		t.Errorf("day 1 stack: bottom %+v, top %+v, legend %+v", bottom, top, b.Legend)
	}
	if bottom.H <= 4*top.H {
		t.Errorf("100 tokens drawn %v high, 20 tokens %v", bottom.H, top.H)
	}
}
