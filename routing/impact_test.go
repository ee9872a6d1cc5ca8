package routing

import (
	"math"
	"testing"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/reason"
	"switchyard/routing/record"
)

// replayWorld compiles world's snapshot (mutated) for replay: no secrets.
func replayWorld(t *testing.T, mutate func(s *config.Snapshot)) *config.Runtime {
	t.Helper()
	rt := world(t, mutate)
	out, err := CompileForReplay(*rt.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFirstChoiceMatchesSamplingBuild checks the analytic first-choice
// shares against the router itself: 20,000 plans built by Build.
func TestFirstChoiceMatchesSamplingBuild(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *config.Snapshot)
		model  string
		needs  Needs
	}{
		{"canary and deployment weights", nil, "standard", chat()},
		{"first level without a usable deployment falls to the next", func(s *config.Snapshot) {
			s.LogicModels[0].Deployments[0].Enabled = false
			s.LogicModels[0].Deployments[1].Weight = 0
		}, "standard", chat()},
		{"a need narrows the deployments", func(s *config.Snapshot) {
			s.LogicModels[0].Deployments[0].Capabilities.Vision = true
			s.LogicModels[2].Deployments[0].Capabilities.Vision = true
		}, "standard", Needs{Kind: config.KindChat, Vision: true}},
		{"explicit logic model", nil, "main", chat()},
		{"same model twice in a level", func(s *config.Snapshot) {
			s.RouteGroups[0].Tiers[1].Candidates = append(s.RouteGroups[0].Tiers[1].Candidates, config.Candidate{LogicModel: "canary", Priority: 1, Weight: 40})
		}, "standard", chat()},
		{"dedicated group falls back", func(s *config.Snapshot) {
			s.Tenants = []config.Tenant{{ID: 1, Name: "acme"}}
			shared := s.RouteGroups[0]
			shared.ID, shared.Name = 2, "shared"
			s.RouteGroups[0].Tenant, s.RouteGroups[0].Fallback = "acme", "shared"
			s.RouteGroups[0].Tiers = []config.Tier{
				{Name: "fast", TimeoutMS: 1, FirstChunkTimeoutMS: 1}, {Name: "deep", TimeoutMS: 1, FirstChunkTimeoutMS: 1},
				{Name: "standard", TimeoutMS: 1, FirstChunkTimeoutMS: 1, Candidates: []config.Candidate{{LogicModel: "canary", Priority: 1, Weight: 0}}},
			}
			s.RouteGroups = append(s.RouteGroups, shared)
			s.Callers[0].Tenant = "acme"
		}, "standard", chat()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := world(t, tc.mutate)
			caller := rt.Callers[1]
			target, err := Resolve(caller, tc.model, tc.needs.Kind, tc.needs.Thinking)
			if err != nil {
				t.Fatal(err)
			}
			want := map[int64]float64{}
			sum := 0.0
			for _, s := range firstChoice(caller, target, tc.needs) {
				want[s.d.ID] += s.p
				sum += s.p
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Fatalf("shares sum to %v: %v", sum, want)
			}
			const n = 20000
			got := map[int64]float64{}
			for range n {
				p := NewPlan()
				Build(p, caller, target, tc.needs, nil)
				got[p.Steps[0].Deployment.ID]++
				p.Release()
			}
			for id := range got {
				if _, ok := want[id]; !ok {
					t.Errorf("Build chose deployment %d first, which has no share", id)
				}
			}
			for id, share := range want {
				if d := math.Abs(got[id]/n - share); d > 0.015 {
					t.Errorf("deployment %d: sampled %.3f, analytic %.3f", id, got[id]/n, share)
				}
			}
		})
	}
}

func priced(s *config.Snapshot) {
	for i := range s.LogicModels {
		for j := range s.LogicModels[i].Deployments {
			d := &s.LogicModels[i].Deployments[j]
			d.Prices = config.Prices{InputMicros: 1_000_000 * config.Micros(j+1), OutputMicros: 2_000_000, Currency: "USD"}
		}
	}
}

func TestReplayParkedDeploymentShiftsTrafficAndLosesDeep(t *testing.T) {
	live := replayWorld(t, priced)
	draft := replayWorld(t, func(s *config.Snapshot) {
		priced(s)
		s.LogicModels[0].Deployments[1].Weight = 0 // main on pb parked
		s.LogicModels[2].Deployments[0].Weight = 0 // backup (deep's only model) parked
	})
	shapes := []TrafficShape{
		{CallerID: 1, Caller: "c", Model: "fast", Requests: 100, Served: 100, Usage: 100, PromptTokens: 100_000, CompletionTokens: 50_000},
		{CallerID: 1, Caller: "c", Model: "deep", Requests: 40, Served: 38, Usage: 20, PromptTokens: 20_000, CompletionTokens: 20_000},
		// A request for deep the live version refuses already is not "lost".
		{CallerID: 1, Caller: "c", Model: "deep", Needs: record.NeedVision, Requests: 5, Served: 0},
	}
	im, err := Replay(live, draft, shapes, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if im.Requests != 145 || len(im.Lost) != 1 {
		t.Fatalf("impact: %+v", im)
	}
	l := im.Lost[0]
	if l.Tier != config.TierDeep || l.RouteGroup != "g" || l.Code != "no_available_model" || l.Requests != 40 || l.Served != 38 || !l.AllLost || l.Total != 45 {
		t.Fatalf("loss: %+v", l)
	}
	if len(l.Skips) != 1 || l.Skips[0].Reason != (reason.Of(reason.Parked)) || l.Skips[0].Deployment != "pa/bk-a" {
		t.Fatalf("skips: %+v", l.Skips)
	}
	lost, partly := im.Findings()
	if len(lost) != 1 || len(partly) != 0 || lost[0].Ack.String() != "g/deep" || lost[0].Object.Kind != "tier" {
		t.Fatalf("findings: %+v %+v", lost, partly)
	}
	// fast: main 70/30 on pa/pb (emb is another kind) → all on pa.
	shift := map[string]Shift{}
	for _, s := range im.Deployments {
		shift[s.Key] = s
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-6 }
	if a := shift["main/pa/m-a"]; !near(a.Before, 70) || !near(a.After, 100) {
		t.Errorf("main on pa: %+v", a)
	}
	if b := shift["main/pb/m-b"]; !near(b.Before, 30) || !near(b.After, 0) {
		t.Errorf("main on pb: %+v", b)
	}
	if d := shift["backup/pa/bk-a"]; !near(d.Before, 40) || !near(d.After, 0) {
		t.Errorf("backup: %+v", d)
	}
	prov := map[string]Shift{}
	for _, s := range im.Providers {
		prov[s.Key] = s
	}
	if !near(prov["pa"].Before, 110) || !near(prov["pa"].After, 100) || !near(prov["pb"].Before, 30) || !near(prov["pb"].After, 0) {
		t.Errorf("providers: %+v", im.Providers)
	}
	// Cost per day: fast 100k prompt + 50k completion tokens; on pa (input
	// 1/M) 70 %, on pb (input 2/M) 30 %; output 2/M everywhere. deep:
	// 20k+20k tokens for 20 of 40 requests → 40k+40k for the 40, on bk-a.
	// The vision requests route nowhere live: unpriced, no share.
	before := int64(70_000*1+30_000*2+50_000*2) + int64(40_000*1+40_000*2)
	after := int64(100_000*1 + 50_000*2)
	if len(im.Costs) != 1 || im.Costs[0].Currency != "USD" || im.Costs[0].Before != before || im.Costs[0].After != after {
		t.Fatalf("costs %+v, want %d → %d", im.Costs, before, after)
	}
	if im.Unpriced != 5 {
		t.Errorf("unpriced %d", im.Unpriced)
	}
}

func TestReplayNeedsFieldsAndExplicitModels(t *testing.T) {
	live := replayWorld(t, func(s *config.Snapshot) {
		s.LogicModels[0].Deployments[0].Capabilities.Vision = true
		s.LogicModels[2].Deployments[0].Capabilities.Vision = true
	})
	logprobs := uint64(adapter.FieldSet(0).With("logprobs"))
	draft := replayWorld(t, func(s *config.Snapshot) {
		// main on pa loses vision; pb becomes an Anthropic provider, which
		// refuses logprobs; the explicit model canary leaves the group.
		s.Providers[1].Protocol = config.ProtocolAnthropic
		s.LogicModels[2].Deployments[0].Capabilities.Vision = true
		s.RouteGroups[0].Tiers[1].Candidates = s.RouteGroups[0].Tiers[1].Candidates[:1]
		s.RouteGroups[0].Tiers[1].Candidates = append(s.RouteGroups[0].Tiers[1].Candidates, config.Candidate{LogicModel: "backup", Priority: 2, Weight: 100})
	})
	shapes := []TrafficShape{
		{CallerID: 1, Caller: "c", Model: "fast", Needs: record.NeedVision, Requests: 10, Served: 10},
		{CallerID: 1, Caller: "c", Model: "fast", Requests: 90, Served: 90},
		{CallerID: 1, Caller: "c", Model: "canary", Fields: logprobs, Requests: 7, Served: 7},
		{CallerID: 1, Caller: "c", Model: "canary", Requests: 3, Served: 3},
		{CallerID: 2, Caller: "old", Model: "fast", Requests: 50, Served: 50}, // not a caller of the live version
	}
	im, err := Replay(live, draft, shapes, 12*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	byTarget := map[string]Loss{}
	for _, l := range im.Lost {
		byTarget[l.Target()+"/"+string(l.Code)] = l
	}
	v := byTarget["fast/no_available_model"]
	if v.Requests != 10 || v.AllLost || v.TotalServed != 100 || len(v.Skips) == 0 {
		t.Fatalf("vision loss: %+v (all %+v)", v, im.Lost)
	}
	foundVision := false
	for _, s := range v.Skips {
		foundVision = foundVision || s.Reason == reason.Reason{Code: reason.LacksCapability, Capability: "vision"}
	}
	if !foundVision {
		t.Errorf("skips name no missing vision: %+v", v.Skips)
	}
	c := byTarget["canary/model_not_found"]
	if c.LogicModel != "canary" || c.Requests != 10 || !c.AllLost {
		t.Fatalf("canary loss: %+v", im.Lost)
	}
	lost, partly := im.Findings()
	if len(lost) != 1 || lost[0].Ack.String() != "g/canary" || len(partly) != 1 || partly[0].Params["target"] != "fast" {
		t.Fatalf("findings %+v / %+v", lost, partly)
	}
	// Over a 12 h window a day is twice the traffic.
	for _, s := range im.Deployments {
		if s.Key == "main/pa/m-a" && math.Abs(s.Before-(10+63)*2) > 1e-6 {
			t.Errorf("per-day scaling: %+v", s)
		}
	}

	// A field the draft's protocol refuses is unsupported_parameter.
	draft2 := replayWorld(t, func(s *config.Snapshot) {
		s.Providers[0].Protocol, s.Providers[1].Protocol = config.ProtocolAnthropic, config.ProtocolAnthropic
	})
	im2, _ := Replay(live, draft2, []TrafficShape{{CallerID: 1, Caller: "c", Model: "deep", Fields: logprobs, Requests: 4, Served: 4}}, 0)
	if len(im2.Lost) != 1 || im2.Lost[0].Code != "unsupported_parameter" || im2.Lost[0].Param != "logprobs" {
		t.Fatalf("unsupported parameter: %+v", im2.Lost)
	}
}

func TestReplayRemovedCallersAreNotLosses(t *testing.T) {
	live := replayWorld(t, nil)
	draft := replayWorld(t, func(s *config.Snapshot) { s.Callers[0].Enabled = false })
	im, err := Replay(live, draft, []TrafficShape{{CallerID: 1, Caller: "c", Model: "fast", Requests: 9, Served: 9}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Lost) != 0 || len(im.Gone) != 1 || im.Gone[0].Removed || im.Gone[0].Requests != 9 {
		t.Fatalf("%+v", im)
	}
	if _, err := Replay(nil, draft, nil, 0); err != ErrNoLive {
		t.Fatalf("no live version: %v", err)
	}
}

func TestNeedsRecordRoundTrip(t *testing.T) {
	req := &adapter.ChatRequest{Set: adapter.FieldSet(0).With("tools").With("seed"), Unknown: []string{"top_k"}}
	n := Needs{Kind: config.KindChat, Thinking: true, Tools: true, Chat: req}
	bits, fields := n.Record()
	if !bits.Has(record.NeedThinking|record.NeedTools|record.NeedOtherField) || bits.Has(record.NeedVision) || fields != uint64(req.Set) {
		t.Fatalf("record %b %b", bits, fields)
	}
	back := ReplayNeeds(bits, fields)
	if !back.Thinking || !back.Tools || back.Vision || back.Chat == nil || back.Chat.Set != req.Set || len(back.Chat.Unknown) != 1 {
		t.Fatalf("replayed %+v", back)
	}
	if e, _ := (Needs{Kind: config.KindEmbedding}).Record(); ReplayNeeds(e, 0).Kind != config.KindEmbedding {
		t.Fatal("embedding kind lost")
	}
}

// BenchmarkReplay replays 1,000 request shapes (the preview of a busy
// installation) against a live version and a draft.
func BenchmarkReplay(b *testing.B) {
	live := world(b, nil)
	draft := world(b, func(s *config.Snapshot) { s.LogicModels[0].Deployments[1].Weight = 0 })
	models := []string{"fast", "standard", "deep", "main", "canary"}
	var shapes []TrafficShape
	for i := range 1000 {
		shapes = append(shapes, TrafficShape{CallerID: 1, Caller: "c", Model: models[i%len(models)], Needs: record.Needs(i % 8 &^ int(record.NeedEmbedding)),
			Fields: uint64(i), Requests: 10, Served: 9, Usage: 9, PromptTokens: 9000, CompletionTokens: 900})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Replay(live, draft, shapes, 24*time.Hour); err != nil {
			b.Fatal(err)
		}
	}
}
