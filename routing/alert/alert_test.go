package alert

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func tier(name string) Finding { return Finding{Subject: Subject{Kind: SubjectTier, Name: name}} }

// A finding fires once it has held for the rule's For, exactly once however
// many passes follow, and resolves exactly once when it is gone.
func TestStepFiresAndResolvesOnce(t *testing.T) {
	r := Rule{ID: 1, Kind: KindTierUnservable, For: 30 * time.Second, Enabled: true}
	var st []State
	var all []Notice
	pass := func(at time.Duration, found ...Finding) {
		var n []Notice
		st, n = Step(r, st, found, t0.Add(at))
		all = append(all, n...)
	}
	pass(0, tier("main/deep"))
	pass(10*time.Second, tier("main/deep"))
	if len(all) != 0 || len(st) != 1 || st[0].Status != StatusPending {
		t.Fatalf("before For: notices %v, states %v", all, st)
	}
	pass(30*time.Second, tier("main/deep"))
	pass(40*time.Second, tier("main/deep"))
	pass(50*time.Second, tier("main/deep"))
	if len(all) != 1 || all[0].Event != EventFiring || !all[0].FiredAt.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("after For: notices %v", all)
	}
	pass(60 * time.Second)
	pass(70 * time.Second)
	if len(all) != 2 || all[1].Event != EventResolved || all[1].DedupKey() == all[0].DedupKey() {
		t.Fatalf("after the fix: notices %v", all)
	}
	if len(st) != 0 {
		t.Fatalf("states left: %v", st)
	}
}

// A finding gone before For never fires nor resolves; For 0 fires at once.
func TestStepPendingForgottenAndImmediate(t *testing.T) {
	r := Rule{ID: 2, Kind: KindTierUnservable, For: time.Minute, Enabled: true}
	st, n := Step(r, nil, []Finding{tier("a/fast")}, t0)
	st, n2 := Step(r, st, nil, t0.Add(10*time.Second))
	if len(n)+len(n2) != 0 || len(st) != 0 {
		t.Fatalf("a blip sent %v, kept %v", append(n, n2...), st)
	}
	b := Rule{ID: 3, Kind: KindBudget, Params: Params{Percent: 80}, Enabled: true}
	found := []Finding{{Subject: Subject{Kind: SubjectCaller, Name: "app"}, Value: 85}}
	st, n = Step(b, nil, found, t0)
	_, n2 = Step(b, st, found, t0.Add(time.Second))
	if len(n) != 1 || len(n2) != 0 {
		t.Fatalf("budget: first pass %v, second %v", n, n2)
	}
}

// A disabled rule keeps nothing and says nothing.
func TestStepDisabled(t *testing.T) {
	r := Rule{ID: 4, Kind: KindRedisDegraded}
	prev := []State{{RuleID: 4, Subject: Subject{Kind: SubjectInstance}, Status: StatusFiring, FiredAt: t0}}
	st, n := Step(r, prev, []Finding{{Subject: Subject{Kind: SubjectInstance}}}, t0)
	if st != nil || n != nil {
		t.Fatalf("disabled: %v %v", st, n)
	}
}

// The dedup key of one alert's firing is the same on every pass and
// instance; a second firing of the same subject later is a new key.
func TestDedupKey(t *testing.T) {
	r := Rule{ID: 7}
	a := Notice{Rule: r, Subject: Subject{Kind: SubjectTier, Name: "g/deep"}, Event: EventFiring, FiredAt: t0, At: t0}
	b := a
	b.At = t0.Add(time.Minute)
	c := a
	c.FiredAt = t0.Add(time.Hour)
	if a.DedupKey() != b.DedupKey() || a.DedupKey() == c.DedupKey() {
		t.Fatalf("keys %q %q %q", a.DedupKey(), b.DedupKey(), c.DedupKey())
	}
}

func TestBodyShapes(t *testing.T) {
	n := Notice{Rule: Rule{ID: 9, Kind: KindBudget, Params: Params{Percent: 80}}, Subject: Subject{Kind: SubjectCaller, Name: "app"},
		Event: EventFiring, Value: 83, FiredAt: t0, At: t0}
	var p Payload
	b, _ := n.Body(ShapeGeneric)
	if err := json.Unmarshal(b, &p); err != nil || p.Status != EventFiring || p.Rule != KindBudget || p.Subject.Name != "app" || p.DedupKey == "" {
		t.Fatalf("generic: %s (%v)", b, err)
	}
	var s map[string]string
	b, _ = n.Body(ShapeSlack)
	if err := json.Unmarshal(b, &s); err != nil || !strings.Contains(s["text"], "app") || !strings.Contains(s["text"], "83%") {
		t.Fatalf("slack: %s (%v)", b, err)
	}
}

func TestValidate(t *testing.T) {
	for _, r := range Defaults() {
		if err := r.Validate(); err != nil {
			t.Errorf("default %s: %v", r.Kind, err)
		}
	}
	if err := (Rule{Kind: "nope"}).Validate(); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown kind: %v", err)
	}
	if err := (Rule{Kind: KindErrorRate, Params: Params{Percent: 20, WindowSeconds: 1}}).Validate(); !errors.Is(err, ErrParam) {
		t.Errorf("window 1s: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	if Backoff(1) != 5*time.Second || Backoff(2) != 10*time.Second || Backoff(20) != 10*time.Minute {
		t.Fatalf("backoff %v %v %v", Backoff(1), Backoff(2), Backoff(20))
	}
}

// Every kind explains itself with its own thresholds, never with a
// placeholder subject.
func TestExplainEveryKind(t *testing.T) {
	for _, r := range Defaults() {
		got := Explain(r)
		if got == string(r.Kind) || strings.Contains(got, "…") {
			t.Errorf("%s: %q", r.Kind, got)
		}
	}
	r := Rule{Kind: KindErrorRate, Params: Params{Percent: 20, WindowSeconds: 300, MinRequests: 20}}
	if got := Explain(r); !strings.Contains(got, "20%") || !strings.Contains(got, "5m0s") {
		t.Errorf("error rate: %q", got)
	}
}
