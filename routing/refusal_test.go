package routing

import (
	"testing"
	"time"

	"switchyard/routing/limit"
	"switchyard/routing/reason"
)

func TestCapRefusalOnlyWhenEveryDeploymentWasAtItsCap(t *testing.T) {
	over := func(max int) Attempt {
		return Attempt{Outcome: "skipped", Skip: &reason.Reason{Code: reason.OverCapacity, Max: max}}
	}
	breaker := Attempt{Outcome: "skipped", Skip: &reason.Reason{Code: reason.BreakerOpen}}
	failed := Attempt{Outcome: "failed", Class: "server"}
	noModel := &Failure{Code: "no_available_model", RetryAfter: time.Second}
	for _, tc := range []struct {
		name  string
		tr    Trail
		f     *Failure
		slots int64 // 0: no refusal
	}{
		{"one deployment at its cap", Trail{Attempts: []Attempt{over(2)}}, noModel, 2},
		{"every deployment at its cap", Trail{Attempts: []Attempt{over(2), over(3)}}, noModel, 5},
		{"plan skips are configuration", Trail{Skips: []Skip{{Reason: reason.Of(reason.DisabledByOperator)}}, Attempts: []Attempt{over(1)}}, noModel, 1},
		{"a breaker stood in the way too", Trail{Attempts: []Attempt{over(2), breaker}}, noModel, 0},
		{"a vendor was called", Trail{Attempts: []Attempt{failed, over(2)}}, noModel, 0},
		{"nothing at its cap", Trail{Attempts: []Attempt{breaker}}, noModel, 0},
		{"another failure", Trail{Attempts: []Attempt{over(2)}}, &Failure{Code: "timeout"}, 0},
	} {
		r := capRefusal(&tc.tr, tc.f)
		switch {
		case tc.slots == 0 && r != nil:
			t.Errorf("%s: %+v, want no refusal", tc.name, r)
		case tc.slots != 0 && (r == nil || r.Limit != limit.KindDeploymentCap || r.Value != tc.slots || r.RetryAfter != time.Second):
			t.Errorf("%s: %+v, want deployment_cap %d retry 1s", tc.name, r, tc.slots)
		}
	}
}
