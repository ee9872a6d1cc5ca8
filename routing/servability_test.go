package routing

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/reason"
)

// servCase is one constructed runtime state and the verdict each tier of
// group g must get (fast, standard, deep), with the first cause's code.
type servCase struct {
	name   string
	mutate func(s *config.Snapshot)
	state  State
	want   [3]Verdict
	cause  [3]reason.Code
}

var servCases = []servCase{
	{name: "everything serves", want: [3]Verdict{VerdictServable, VerdictServable, VerdictServable}},
	{name: "a parked deployment is configuration, not degradation",
		mutate: func(s *config.Snapshot) { s.LogicModels[0].Deployments[1].Weight = 0 },
		want:   [3]Verdict{VerdictServable, VerdictServable, VerdictServable}},
	{name: "deep's only candidate parked",
		mutate: func(s *config.Snapshot) { s.RouteGroups[0].Tiers[2].Candidates[0].Weight = 0 },
		want:   [3]Verdict{VerdictServable, VerdictServable, VerdictUnservable}, cause: [3]reason.Code{"", "", reason.CandidateParked}},
	{name: "deep's only deployment disabled",
		mutate: func(s *config.Snapshot) { s.LogicModels[2].Deployments[0].Enabled = false },
		want:   [3]Verdict{VerdictServable, VerdictServable, VerdictUnservable}, cause: [3]reason.Code{"", "", reason.DisabledByOperator}},
	{name: "deep's breaker open",
		state: State{Breakers: untilBreakers{301: {}}},
		want:  [3]Verdict{VerdictServable, VerdictDegraded, VerdictUnservable}, cause: [3]reason.Code{"", reason.BreakerOpen, reason.BreakerOpen}},
	{name: "every breaker open",
		state: State{Breakers: untilBreakers{101: {}, 102: {}, 201: {}, 301: {}}},
		want:  [3]Verdict{VerdictUnservable, VerdictUnservable, VerdictUnservable}, cause: [3]reason.Code{reason.BreakerOpen, reason.BreakerOpen, reason.BreakerOpen}},
	{name: "every key of provider pa quarantined",
		state: State{Keys: coolingKeys{11: {}, 12: {}}},
		want:  [3]Verdict{VerdictDegraded, VerdictDegraded, VerdictUnservable}, cause: [3]reason.Code{reason.KeysQuarantined, reason.KeysQuarantined, reason.KeysQuarantined}},
	{name: "the health checker marked everything down",
		state: State{Health: downSet{101: true, 102: true, 201: true, 301: true, 401: true}},
		want:  [3]Verdict{VerdictUnservable, VerdictUnservable, VerdictUnservable}, cause: [3]reason.Code{reason.Unhealthy, reason.Unhealthy, reason.Unhealthy}},
	{name: "provider pb disabled",
		mutate: func(s *config.Snapshot) { s.Providers[1].Enabled = false },
		want:   [3]Verdict{VerdictServable, VerdictServable, VerdictServable}},
}

func TestServabilityPerCause(t *testing.T) {
	for _, c := range servCases {
		t.Run(c.name, func(t *testing.T) {
			rt := world(t, c.mutate)
			vs := Servability(rt, &c.state)
			if len(vs) != 3 {
				t.Fatalf("verdicts: %+v", vs)
			}
			for i, v := range vs {
				if v.Group != "g" || v.Tier != config.TierNames[i] {
					t.Fatalf("order: %+v", vs)
				}
				if v.Verdict != c.want[i] {
					t.Errorf("%s: verdict %s, want %s (%+v)", v.Tier, v.Verdict, c.want[i], v)
				}
				var first reason.Code
				if len(v.Causes) > 0 {
					first = v.Causes[0].Reason.Code
				}
				if first != c.cause[i] {
					t.Errorf("%s: first cause %q, want %q (%+v)", v.Tier, first, c.cause[i], v.Causes)
				}
				if v.Verdict == VerdictUnservable && v.Serving != 0 {
					t.Errorf("%s: unservable with %d serving", v.Tier, v.Serving)
				}
			}
		})
	}
}

// TestServabilityAgreesWithTheJourney: for every constructed state and
// tier, the verdict is VerdictUnservable exactly when a real chat request to the
// tier through the journey is answered 503 no_available_model.
func TestServabilityAgreesWithTheJourney(t *testing.T) {
	for _, c := range servCases {
		t.Run(c.name, func(t *testing.T) {
			rt := world(t, c.mutate)
			st := c.state
			j := &Journey{Live: staticLive{rt}, Exec: &Executor{State: st, Adapters: map[config.Protocol]adapter.Adapter{config.ProtocolOpenAI: stubAdapter{}}},
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			for _, v := range Servability(rt, &st) {
				body := []byte(`{"model":"` + string(v.Tier) + `","messages":[{"role":"user","content":"hi"}]}`)
				a := j.Serve(context.Background(), Request{Endpoint: EndpointChat, Path: "/v1/chat/completions", CallerID: 1, Body: bytes.NewReader(body)})
				refused := a.Status == http.StatusServiceUnavailable && bytes.Contains(a.Body, []byte("no_available_model"))
				a.Done(nil)
				if refused != (v.Verdict == VerdictUnservable) {
					t.Errorf("%s: verdict %s but the journey answered %d %s", v.Tier, v.Verdict, a.Status, a.Body)
				}
				if !refused && a.Status != http.StatusOK {
					t.Errorf("%s: status %d %s", v.Tier, a.Status, a.Body)
				}
			}
		})
	}
}

func TestServabilityFallbackOnlyIsDegraded(t *testing.T) {
	rt := world(t, func(s *config.Snapshot) {
		s.Tenants = append(s.Tenants, config.Tenant{Name: "t"})
		s.RouteGroups = append(s.RouteGroups, config.RouteGroup{ID: 2, Name: "t-pool", Tenant: "t", Fallback: "g", Tiers: []config.Tier{
			{Name: "fast", TimeoutMS: 1000, FirstChunkTimeoutMS: 500, Candidates: []config.Candidate{{LogicModel: "canary", Priority: 1, Weight: 100}}},
			{Name: "standard", TimeoutMS: 1000, FirstChunkTimeoutMS: 500, Candidates: []config.Candidate{{LogicModel: "canary", Priority: 1, Weight: 100}}},
			{Name: "deep", TimeoutMS: 1000, FirstChunkTimeoutMS: 500, Candidates: []config.Candidate{{LogicModel: "canary", Priority: 1, Weight: 100}}},
		}})
	})
	v := TierServability(rt.Groups["t-pool"], config.TierDeep, &State{Breakers: untilBreakers{201: {}}})
	if v.Verdict != VerdictDegraded || v.Serving != 1 || v.Fallback != 1 || len(v.Causes) != 1 || v.Causes[0].Reason.Code != reason.BreakerOpen {
		t.Fatalf("verdict: %+v", v)
	}
}
