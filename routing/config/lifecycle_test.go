package config

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func findings(r Result, check string) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Check == check {
			out = append(out, f)
		}
	}
	return out
}

func TestTierUnservableNeedsAcknowledgementNamingTheTier(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *Snapshot)
		want   []Ack // tier_unservable acks, nil = none
		cause  string
	}{
		{"every candidate parked", func(s *Snapshot) { s.RouteGroups[0].Tiers[2].Candidates[0].Parked = true },
			[]Ack{{RouteGroup: "default", Tier: TierDeep}}, CauseAllParked},
		{"parked by the old encoding, a negative weight", func(s *Snapshot) { s.RouteGroups[0].Tiers[2].Candidates[0].Weight = -100 },
			[]Ack{{RouteGroup: "default", Tier: TierDeep}}, CauseAllParked},
		{"the only unparked candidate's deployments are all disabled", func(s *Snapshot) { s.LogicModels[1].Deployments[0].Enabled = false },
			// big serves deep alone; standard keeps small.
			[]Ack{{RouteGroup: "default", Tier: TierDeep}}, CauseOutOfService},
		{"the only unparked candidate's deployment is parked", func(s *Snapshot) { s.LogicModels[1].Deployments[0].Parked = true },
			[]Ack{{RouteGroup: "default", Tier: TierDeep}}, CauseOutOfService},
		{"provider without an active key", func(s *Snapshot) {
			s.Providers[1].Keys[0].Status = KeyDisabled
			s.Providers[0].Keys[0].Status = KeyDisabled
		},
			[]Ack{{RouteGroup: "default", Tier: TierFast}, {RouteGroup: "default", Tier: TierStandard}, {RouteGroup: "default", Tier: TierDeep}}, CauseNoDeployment},
		{"one candidate of two parked still serves", func(s *Snapshot) { s.RouteGroups[0].Tiers[1].Candidates[0].Weight = 0 }, nil, ""},
		{"a disabled caller is nobody to serve", func(s *Snapshot) {
			s.RouteGroups[0].Tiers[2].Candidates[0].Weight = 0
			s.Callers[0].Enabled = false
		}, nil, ""},
		{"a group without callers is nobody to serve", func(s *Snapshot) {
			s.RouteGroups[0].Tiers[2].Candidates[0].Weight = 0
			s.Callers[0].RouteGroup = "other"
			s.RouteGroups = append(s.RouteGroups, RouteGroup{ID: 2, Name: "other", Tiers: s.RouteGroups[0].Tiers})
			s.RouteGroups[1].Tiers = slices.Clone(s.RouteGroups[0].Tiers)
			s.RouteGroups[1].Tiers[2] = Tier{ID: 99, Name: TierDeep, TimeoutMS: 1, FirstChunkTimeoutMS: 1, Candidates: []Candidate{{ID: 50, LogicModel: "big", Priority: 1, Weight: 100}}}
		}, nil, ""},
		{"a dedicated group whose fallback serves the tier", func(s *Snapshot) {
			s.Tenants = []Tenant{{ID: 1, Name: "acme"}}
			shared := RouteGroup{ID: 2, Name: "shared", Tiers: slices.Clone(s.RouteGroups[0].Tiers)}
			shared.Tiers[2].Candidates = []Candidate{{ID: 60, LogicModel: "big", Priority: 1, Weight: 100}}
			s.RouteGroups[0].Tenant, s.RouteGroups[0].Fallback = "acme", "shared"
			s.RouteGroups[0].Tiers[2].Candidates = []Candidate{{ID: 5, LogicModel: "big", Priority: 1, Weight: 0}}
			s.RouteGroups = append(s.RouteGroups, shared)
			s.Callers[0].Tenant = "acme"
		}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validSnapshot()
			tc.mutate(&s)
			r := DryRun(s, testEnv)
			fs := findings(r, CheckTierUnservable)
			var got []Ack
			for _, f := range fs {
				if f.Severity != SeverityAcknowledge || f.Ack == nil {
					t.Fatalf("finding %+v must need acknowledgement and name its ack", f)
				}
				if f.Ack.RouteGroup != f.Object.Group || f.Ack.Tier != f.Object.Tier {
					t.Errorf("ack %v does not name the finding's tier %+v", f.Ack, f.Object)
				}
				if f.Params["cause"] != tc.cause {
					t.Errorf("cause %q, want %q", f.Params["cause"], tc.cause)
				}
				if !slices.Contains(f.Callers, "contracts") {
					t.Errorf("callers %v miss contracts", f.Callers)
				}
				got = append(got, *f.Ack)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("acks %v, want %v (findings %+v)", got, tc.want, r.Findings)
			}
			// Parking a candidate, or disabling or parking the only
			// deployment behind it, is the operator's choice: the same
			// acknowledgeable finding, never an error that makes the
			// acknowledgement useless.
			if tc.cause == CauseAllParked || tc.cause == CauseOutOfService {
				if len(r.Errors()) != 0 {
					t.Fatalf("taking a tier out of service is no error: %+v", r.Errors())
				}
				if msg := fs[0].Message; !strings.Contains(msg, "503 no_available_model") || strings.Contains(msg, "weight") {
					t.Errorf("message %q must say what publishing does, without weights", msg)
				}
			}
			if len(tc.want) > 0 && len(r.Errors()) == 0 && !r.Blocking() {
				t.Fatal("an unservable tier must block without acknowledgement")
			}
		})
	}
}

func TestAcknowledgingAnUnservableTierAdmitsThePublish(t *testing.T) {
	s := validSnapshot()
	s.RouteGroups[0].Tiers[2].Candidates[0].Weight = 0
	r := DryRun(s, testEnv)
	if len(r.Errors()) != 0 {
		t.Fatalf("parking the deep candidate is no error: %+v", r.Errors())
	}
	if got := r.Unacknowledged(nil); len(got) != 1 || got[0].Check != CheckTierUnservable {
		t.Fatalf("without ack: %+v", got)
	}
	ack, err := ParseAck("default/deep")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Unacknowledged([]Ack{ack}); len(got) != 0 {
		t.Fatalf("acknowledged, still blocking: %+v", got)
	}
	if got := r.Unacknowledged([]Ack{{RouteGroup: "default", Tier: TierFast}}); len(got) != 1 {
		t.Fatalf("an ack for another tier must not admit deep: %+v", got)
	}
	recorded, err := r.Acknowledge([]Ack{ack})
	if err != nil || len(recorded) != 1 || recorded[0].Check != CheckTierUnservable || recorded[0].Ack != ack || !slices.Equal(recorded[0].Callers, []string{"contracts"}) {
		t.Fatalf("recorded %+v, %v", recorded, err)
	}
	// A stale ack (naming a tier that needs none) is refused, not recorded.
	_, err = r.Acknowledge([]Ack{ack, {RouteGroup: "default", Tier: TierFast}})
	var ve *ValidationError
	if !errors.As(err, &ve) || !strings.Contains(ve.Fields["acknowledge"], "default/fast") {
		t.Fatalf("stale ack: %v", err)
	}
	// Errors are never admitted by an acknowledgement.
	s.RouteGroups[0].Tiers[0].TimeoutMS = 0
	if got := DryRun(s, testEnv).Unacknowledged([]Ack{ack}); len(got) != 1 || got[0].Check != "tier_timeout" {
		t.Fatalf("an error must block whatever is acknowledged: %+v", got)
	}
}

func TestAckTextForm(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Ack
		bad  bool
	}{
		{in: "default/deep", want: Ack{RouteGroup: "default", Tier: TierDeep}},
		{in: " default/qwen3-max ", want: Ack{RouteGroup: "default", LogicModel: "qwen3-max"}},
		{in: "deep", bad: true},
		{in: "/deep", bad: true},
		{in: "default/", bad: true},
		{in: "a/b/c", bad: true},
	} {
		got, err := ParseAck(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseAck(%q) = %v, %v", tc.in, got, err)
		}
		if !tc.bad && got.String() != strings.TrimSpace(tc.in) {
			t.Errorf("String() = %q", got.String())
		}
	}
	// In JSON an ack is its text form both ways.
	f := Finding{Ack: &Ack{RouteGroup: "g", Tier: TierDeep}}
	b, _ := json.Marshal(f)
	if !strings.Contains(string(b), `"ack":"g/deep"`) {
		t.Fatalf("json %s", b)
	}
	var acks []Ack
	if err := json.Unmarshal([]byte(`["g/deep","g/m1"]`), &acks); err != nil || acks[1].LogicModel != "m1" {
		t.Fatalf("%v %v", acks, err)
	}
	if err := json.Unmarshal([]byte(`["nope"]`), &acks); err == nil {
		t.Fatal("a malformed ack must not decode")
	}
	if _, err := ParseAcks([]string{"", "g/deep", "bad"}); err == nil {
		t.Fatal("ParseAcks accepted a bad ack")
	}
}

func TestWeightsSumOverDeploymentsInService(t *testing.T) {
	dep := func(id int64, w int, on bool) Deployment {
		return Deployment{ID: id, Provider: "openai", UpstreamModel: "m" + string(rune('a'+id)), Weight: w, Enabled: on}
	}
	parked := func(d Deployment) Deployment { d.Parked = true; return d }
	cases := []struct {
		name string
		ds   []Deployment
		ok   bool
	}{
		{"70/30", []Deployment{dep(1, 70, true), dep(2, 30, true)}, true},
		{"70/20", []Deployment{dep(1, 70, true), dep(2, 20, true)}, false},
		{"a disabled one no longer counts", []Deployment{dep(1, 100, false), dep(2, 100, true)}, true},
		{"disabling one of 70/30 needs no re-weighting", []Deployment{dep(1, 70, true), dep(2, 30, false)}, true},
		{"parking remembers the share", []Deployment{dep(1, 70, true), parked(dep(2, 30, true))}, true},
		{"a share parked at 0 is forgotten", []Deployment{dep(1, 70, true), parked(dep(2, 0, true))}, false},
		{"still wrong with the out-of-service share", []Deployment{dep(1, 60, true), dep(2, 30, false)}, false},
		{"nothing in service: another check speaks", []Deployment{dep(1, 50, false)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validSnapshot()
			s.LogicModels[0].Deployments = tc.ds
			got := len(findings(DryRun(s, testEnv), "weights_sum")) == 0
			if got != tc.ok || SumWeights(tc.ds).Balanced() != tc.ok {
				t.Fatalf("weights_sum passes = %v, want %v", got, tc.ok)
			}
		})
	}
}

func TestProposedWeightKeepsTheSum(t *testing.T) {
	dep := func(id int64, w int, on bool) Deployment { return Deployment{ID: id, Weight: w, Enabled: on} }
	cases := []struct {
		name      string
		ds        []Deployment
		weight    int
		rebalance map[int64]int
	}{
		{"first deployment", nil, 100, nil},
		{"the rest of 100", []Deployment{dep(1, 70, true)}, 30, nil},
		{"all out of service", []Deployment{dep(1, 100, false)}, 100, nil},
		{"the others take 100: an even share, others scaled", []Deployment{dep(1, 100, true)}, 50, map[int64]int{1: 50}},
		{"three ways", []Deployment{dep(1, 60, true), dep(2, 40, true)}, 33, map[int64]int{1: 40, 2: 27}},
		{"disabled ones keep their weight", []Deployment{dep(1, 70, true), dep(2, 30, false)}, 50, map[int64]int{1: 50}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := ProposeWeight(tc.ds)
			if p.Weight != tc.weight || len(p.Rebalance) != len(tc.rebalance) {
				t.Fatalf("proposal %+v, want %d %v", p, tc.weight, tc.rebalance)
			}
			after := []Deployment{{ID: 99, Weight: p.Weight, Enabled: true}}
			for _, d := range tc.ds {
				if w, ok := p.Rebalance[d.ID]; ok {
					if w != tc.rebalance[d.ID] {
						t.Errorf("deployment %d → %d, want %d", d.ID, w, tc.rebalance[d.ID])
					}
					d.Weight = w
				}
				after = append(after, d)
			}
			if !SumWeights(after).Balanced() {
				t.Fatalf("the proposal breaks the rule: %+v", SumWeights(after))
			}
		})
	}
}

func TestChangesMatchObjectsByNameNotID(t *testing.T) {
	a := validSnapshot()
	b := validSnapshot()
	// Every id changes (a rollback recreated the rows)…
	for i := range b.RouteGroups {
		for j := range b.RouteGroups[i].Tiers {
			b.RouteGroups[i].Tiers[j].ID += 1000
			for k := range b.RouteGroups[i].Tiers[j].Candidates {
				b.RouteGroups[i].Tiers[j].Candidates[k].ID += 1000
			}
		}
	}
	for i := range b.LogicModels {
		for j := range b.LogicModels[i].Deployments {
			b.LogicModels[i].Deployments[j].ID += 1000
		}
	}
	if got := Changes(a, b); len(got) != 0 {
		t.Fatalf("id churn is no change: %+v", got)
	}
	// …and the deep candidate is parked, a deployment re-priced, a caller
	// limit raised, a model added and a provider removed.
	b.RouteGroups[0].Tiers[2].Candidates[0].Parked = true
	b.LogicModels[0].Deployments[0].Prices.InputMicros = 2_500_000
	b.Callers[0].Limits = []TierLimit{{Tier: TierFast, RPM: 120}}
	b.LogicModels = append(b.LogicModels, LogicModel{ID: 77, Code: "spare", Kind: KindChat})
	b.Providers = b.Providers[:1]
	got := Changes(a, b)
	want := []Change{
		{Op: Removed, Object: ObjectRef{Kind: "provider", Name: "claude", ID: 2}},
		{Op: Changed, Object: ObjectRef{Kind: "deployment", Name: "openai/gpt-4o-mini", ID: 1101, Model: "small", ModelID: 1}, Field: "prices.input", From: "0", To: "2.5"},
		{Op: Added, Object: ObjectRef{Kind: "logic_model", Name: "spare", ID: 77, Model: "spare", ModelID: 77}},
		{Op: Changed, Object: ObjectRef{Kind: "candidate", Name: "big", ID: 1005, Group: "default", Tier: TierDeep, Model: "big"}, Field: "parked", From: "false", To: "true"},
		{Op: Changed, Object: ObjectRef{Kind: "caller", Name: "contracts", ID: 1}, Field: "limits.fast.rpm", From: "60", To: "120"},
	}
	if len(got) != len(want) {
		t.Fatalf("changes:\n%+v\nwant\n%+v", got, want)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("missing %+v in %+v", w, got)
		}
	}
}

func TestWithoutIDsHidesOnlyIDs(t *testing.T) {
	s := validSnapshot()
	s.Providers[0].Headers = []ProviderHeader{{Name: "X-Secret", Secret: true, Value: SecretSet, SecretID: 7}}
	text, _ := Encode(s)
	out := WithoutIDs(string(text))
	if strings.Contains(out, "\n  - id:") || strings.Contains(out, " id: ") {
		t.Fatalf("ids left:\n%s", out)
	}
	if !strings.Contains(out, "secret_id: 7") {
		t.Fatal("secret_id must stay: it changes when the secret does")
	}
	// What is left is the same configuration, every id 0.
	back, err := Decode([]byte(out))
	if err != nil {
		t.Fatalf("id-free text no longer decodes: %v\n%s", err, out)
	}
	zero := validSnapshot()
	zero.Providers[0].Headers = s.Providers[0].Headers
	if len(Changes(zero, back)) != 0 || back.LogicModels[0].Deployments[0].ID != 0 || back.RouteGroups[0].Tiers[0].Candidates[0].ID != 0 {
		t.Fatalf("round trip differs: %+v", Changes(zero, back))
	}
}
