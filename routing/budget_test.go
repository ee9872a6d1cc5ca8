package routing

import (
	"context"
	"strings"
	"testing"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/reason"
)

// quota is a retry budget that allows a fixed number of retries.
type quota struct {
	firsts, asked int
	left          int
	keys          []TierKey
}

func (q *quota) First(k TierKey, _ config.RBudget) { q.firsts++; q.keys = append(q.keys, k) }

func (q *quota) Retry(_ context.Context, k TierKey, _ config.RBudget) (BudgetVerdict, error) {
	q.asked++
	q.keys = append(q.keys, k)
	if q.left == 0 {
		return BudgetVerdict{}, nil
	}
	q.left--
	return BudgetVerdict{Allowed: true}, nil
}

// Every attempt after the first asks the budget — the next key after a 429
// as well as the next candidate — and a refusal returns the last failure as
// 503 retry_budget_exhausted, with the step not tried on the trail.
func TestRetryBudgetStopsTheChain(t *testing.T) {
	rt := world(t, func(s *config.Snapshot) {
		s.LogicModels[0].Deployments[1].Weight = 0 // only main on pa (keys 11, 12)
		s.LogicModels[0].Deployments[0].Weight = 100
		s.RouteGroups[0].Tiers[1].Candidates = []config.Candidate{{LogicModel: "main", Priority: 1, Weight: 100}, {LogicModel: "backup", Priority: 2, Weight: 100}}
		s.RouteGroups[0].RetryBudget = &config.RetryBudget{Percent: 25, MinPerS: 2, WindowMS: 4000}
	})
	limited := &adapter.Error{Class: adapter.ClassRateLimited, Status: 429, Message: "slow down"}
	down := &adapter.Error{Class: adapter.ClassServer, Status: 500, Message: "down"}
	cases := []struct {
		name     string
		plan     map[string][]error
		left     int
		calls    int // vendor calls made
		asked    int // retries asked for
		served   bool
		notTried string // the deployment refused by the budget
		class    adapter.Class
	}{
		{"healthy spends nothing", nil, 0, 1, 0, true, "", ""},
		{"429 then the next key is a retry", map[string][]error{"m-a": {limited}}, 0, 1, 1, false, "main on pa (m-a)", adapter.ClassRateLimited},
		{"server error then the next candidate is a retry", map[string][]error{"m-a": {down}}, 0, 1, 1, false, "backup on pa (bk-a)", adapter.ClassServer},
		{"a retry allowed, the next one refused", map[string][]error{"m-a": {limited, limited}}, 1, 2, 2, false, "backup on pa (bk-a)", adapter.ClassRateLimited},
		{"allowed retries serve", map[string][]error{"m-a": {limited, limited}}, 5, 3, 2, true, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := &script{plan: tc.plan}
			if sc.plan == nil {
				sc.plan = map[string][]error{}
			}
			q := &quota{left: tc.left}
			ex := &Executor{Adapters: map[config.Protocol]adapter.Adapter{"openai": sc}, State: State{Keys: &recKeys{}, Budget: q}}
			p := plan(t, rt, "standard", chat(), nil)
			var tr Trail
			out, f := ex.Chat(context.Background(), p, Call{Deadline: time.Now().Add(5 * time.Second)}, &adapter.ChatRequest{}, &tr)
			if len(sc.calls) != tc.calls || q.firsts != 1 || q.asked != tc.asked {
				t.Fatalf("calls %v, firsts %d, retries asked %d; want %d calls, 1 first, %d asked", sc.calls, q.firsts, q.asked, tc.calls, tc.asked)
			}
			for _, k := range q.keys {
				if k != (TierKey{Group: 1, Tier: config.TierStandard}) {
					t.Fatalf("budget key %+v", k)
				}
			}
			if tc.served {
				if f != nil || out.Served.Deployment == nil {
					t.Fatalf("not served: %+v", f)
				}
				return
			}
			if f == nil || f.Status != 503 || f.Code != CodeRetryBudgetExhausted || f.Class != tc.class || f.NoRetry || f.RetryAfter != time.Second {
				t.Fatalf("want 503 %s of class %s with Retry-After 1s, got %+v", CodeRetryBudgetExhausted, tc.class, f)
			}
			last := tr.Attempts[len(tr.Attempts)-1]
			if last.Outcome != "skipped" || last.Skip == nil || last.Skip.Code != reason.RetryBudgetExhausted || last.Deployment != tc.notTried ||
				last.Skip.Percent != 25 || last.Skip.PerSecond != 2 || last.Skip.WindowMS != 4000 || last.Skip.Tier != "standard" {
				t.Fatalf("trail's last step: %+v skip %+v", last, last.Skip)
			}
			msg := f.Text("req-1")
			for _, want := range []string{"retry budget of route group g, tier standard is spent (25% of first attempts, at least 2/s, over 4s)", "retry_budget_exhausted", "req-1", "skipped, not tried: the retry budget"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q: %s", want, msg)
				}
			}
		})
	}

	// Off: the budget is never asked.
	rt.Groups["g"].Budget.Off = true
	q := &quota{}
	sc := &script{plan: map[string][]error{"m-a": {down}}}
	ex := &Executor{Adapters: map[config.Protocol]adapter.Adapter{"openai": sc}, State: State{Keys: &recKeys{}, Budget: q}}
	var tr Trail
	if _, f := ex.Chat(context.Background(), plan(t, rt, "standard", chat(), nil), Call{Deadline: time.Now().Add(5 * time.Second)}, &adapter.ChatRequest{}, &tr); f != nil || q.firsts+q.asked != 0 {
		t.Fatalf("budget off: %+v, asked %d/%d", f, q.firsts, q.asked)
	}
}
