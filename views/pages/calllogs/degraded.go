package calllogs

import (
	"strconv"
	"strings"
	"time"

	"switchyard/routing"
)

// ExplainDegraded says in a sentence which rung of the degradation ladder
// answered and why.
func ExplainDegraded(d routing.Degraded) string {
	switch d.Level {
	case routing.DegradedStepDown:
		var why []string
		if d.OverP95MS > 0 {
			why = append(why, "its p95 latency was "+ms(d.P95MS)+", above the SLA's "+ms(d.OverP95MS))
		}
		if d.OverErrors > 0 {
			why = append(why, "its error rate was "+strconv.FormatFloat(d.ErrorPercent, 'f', 1, 64)+"%, above the SLA's "+strconv.Itoa(d.OverErrors)+"%")
		}
		s := "stepped down from tier " + d.From + " to " + d.To
		if len(why) > 0 {
			s += ": over the last " + strconv.FormatInt(d.Calls, 10) + " calls on this instance " + strings.Join(why, " and ")
		}
		return s
	case routing.DegradedCached:
		s := "answered from the answer cache"
		if d.AgeMS > 0 {
			s += " with an answer " + (time.Duration(d.AgeMS) * time.Millisecond).Round(time.Second).String() + " old"
		}
		if d.Scope != "" {
			s += " (" + d.Scope + " scope)"
		}
		return s + ", because every candidate failed (" + string(d.Failure) + ")"
	case routing.DegradedStatic:
		return "answered with the route group's static answer (finish_reason static_answer), because every candidate failed (" + string(d.Failure) + ")"
	}
	return "degraded: " + d.Level
}

// DegradedWords explains every rung a trail took.
func DegradedWords(tr routing.Trail) []string {
	out := make([]string, 0, len(tr.Degraded))
	for _, d := range tr.Degraded {
		out = append(out, ExplainDegraded(d))
	}
	return out
}
