package routing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/reason"
)

// world builds a compiled runtime from a small snapshot, adjustable per test.
func world(t testing.TB, mutate func(s *config.Snapshot)) *config.Runtime {
	t.Helper()
	tier := func(name config.TierName, cands ...config.Candidate) config.Tier {
		return config.Tier{Name: name, TimeoutMS: 1000, FirstChunkTimeoutMS: 500, Candidates: cands}
	}
	s := config.Snapshot{
		Format: config.FormatV1,
		Providers: []config.Provider{
			{ID: 1, Name: "pa", Protocol: "openai", BaseURL: "http://a", Enabled: true, TimeoutMS: 1000, Keys: []config.ProviderKey{{ID: 11, Fingerprint: "k11", Status: "active"}, {ID: 12, Fingerprint: "k12", Status: "active"}}},
			{ID: 2, Name: "pb", Protocol: "openai", BaseURL: "http://b", Enabled: true, TimeoutMS: 1000, Keys: []config.ProviderKey{{ID: 21, Fingerprint: "k21", Status: "active"}}},
		},
		LogicModels: []config.LogicModel{
			{ID: 1, Code: "main", Kind: "chat", Deployments: []config.Deployment{
				{ID: 101, Provider: "pa", UpstreamModel: "m-a", Weight: 70, Enabled: true},
				{ID: 102, Provider: "pb", UpstreamModel: "m-b", Weight: 30, Enabled: true},
			}},
			{ID: 2, Code: "canary", Kind: "chat", Deployments: []config.Deployment{{ID: 201, Provider: "pb", UpstreamModel: "c-b", Weight: 100, Enabled: true}}},
			{ID: 3, Code: "backup", Kind: "chat", Deployments: []config.Deployment{{ID: 301, Provider: "pa", UpstreamModel: "bk-a", Weight: 100, Enabled: true, Capabilities: config.Capabilities{Thinking: true}}}},
			{ID: 4, Code: "emb", Kind: "embedding", EmbeddingDimension: 4, Deployments: []config.Deployment{{ID: 401, Provider: "pa", UpstreamModel: "e-a", Weight: 100, Enabled: true, EmbeddingBatchLimit: 3}}},
		},
		RouteGroups: []config.RouteGroup{{ID: 1, Name: "g", Tiers: []config.Tier{
			tier("fast", config.Candidate{LogicModel: "main", Priority: 1, Weight: 100}, config.Candidate{LogicModel: "emb", Priority: 1, Weight: 100}),
			tier("standard", config.Candidate{LogicModel: "main", Priority: 1, Weight: 90}, config.Candidate{LogicModel: "canary", Priority: 1, Weight: 10}, config.Candidate{LogicModel: "backup", Priority: 2, Weight: 100}),
			tier("deep", config.Candidate{LogicModel: "backup", Priority: 1, Weight: 100}),
		}}},
		Callers: []config.Caller{{ID: 1, Name: "c", RouteGroup: "g", PriorityClass: "interactive", Enabled: true}},
	}
	if mutate != nil {
		mutate(&s)
	}
	secrets := map[int64]string{}
	for _, p := range s.Providers {
		for _, k := range p.Keys {
			secrets[k.ID] = "secret-" + k.Fingerprint
		}
	}
	rt, err := config.Compile(1, s, config.Credentials{ProviderKeySecrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func plan(t testing.TB, rt *config.Runtime, model string, needs Needs, st *State) *Plan {
	t.Helper()
	tg, err := Resolve(rt.Callers[1], model, needs.Kind, needs.Thinking)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlan()
	Build(p, rt.Callers[1], tg, needs, st)
	return p
}

func chat() Needs { return Needs{Kind: config.KindChat} }

func TestCanaryAndDeploymentWeights(t *testing.T) {
	rt := world(t, nil)
	const n = 10000
	first := map[string]int{}
	firstDep := map[string]int{}
	for range n {
		p := plan(t, rt, "standard", chat(), nil)
		first[p.Steps[0].Deployment.Model.Code]++
		// Priority is never reordered by weights: backup (priority 2) is last.
		if last := p.Steps[len(p.Steps)-1]; last.Deployment.Model.Code != "backup" {
			t.Fatalf("priority 2 candidate not last: %s", last.Deployment.Model.Code)
		}
		for _, s := range p.Steps {
			if s.Deployment.Model.Code == "main" {
				firstDep[s.Deployment.Provider.Name]++
				break
			}
		}
		p.Release()
	}
	within := func(name string, got int, share float64) {
		if diff := math.Abs(float64(got)/n - share); diff > 0.02 {
			t.Errorf("%s: %.3f of traffic, want %.2f ± 0.02", name, float64(got)/n, share)
		}
	}
	within("canary 90 (main)", first["main"], 0.90)
	within("canary 10 (canary)", first["canary"], 0.10)
	within("deployment 70 (pa)", firstDep["pa"], 0.70)
	within("deployment 30 (pb)", firstDep["pb"], 0.30)
}

func TestPlanSkipReasons(t *testing.T) {
	rt := world(t, func(s *config.Snapshot) {
		s.LogicModels[0].Deployments[1].Weight = 0      // main on pb parked
		s.LogicModels[1].Deployments[0].Enabled = false // canary disabled
		s.Providers = append(s.Providers, config.Provider{ID: 3, Name: "off", Protocol: "openai", BaseURL: "http://c", Enabled: false, TimeoutMS: 1000,
			Keys: []config.ProviderKey{{ID: 31, Fingerprint: "k31", Status: "active"}}})
		s.LogicModels[2].Deployments = append(s.LogicModels[2].Deployments, config.Deployment{ID: 302, Provider: "off", UpstreamModel: "x", Weight: 0, Enabled: true})
	})
	p := plan(t, rt, "standard", chat(), &State{Health: downSet{101: true}})
	reasons := map[string]reason.Reason{}
	for _, s := range p.Skips {
		reasons[s.Deployment] = s.Reason
	}
	want := map[string]reason.Reason{
		"pb/m-b": {Code: reason.Parked, Weight: 0},
		"pb/c-b": reason.Of(reason.DisabledByOperator),
		"pa/m-a": reason.Of(reason.Unhealthy),
		"off/x":  {Code: reason.Parked, Weight: 0},
	}
	for d, r := range want {
		if reasons[d] != r {
			t.Errorf("skip %s = %+v, want %+v (all: %+v)", d, reasons[d], r, p.Skips)
		}
	}
	if len(p.Steps) != 1 || p.Steps[0].Deployment.ID != 301 {
		t.Fatalf("steps: %+v", p.Steps)
	}
	// Thinking needs a capable deployment; the chain goes to deep.
	p2 := plan(t, rt, "fast", Needs{Kind: config.KindChat, Thinking: true}, nil)
	if p2.Target.Tier != config.TierDeep || !p2.Target.Forced || p2.Steps[0].Deployment.ID != 301 {
		t.Fatalf("reasoning request: %+v", p2.Target)
	}
	p3 := plan(t, rt, "fast", chat(), nil)
	var kindSkip bool
	for _, s := range p3.Skips {
		kindSkip = kindSkip || (s.Model == "emb" && s.Reason == reason.Reason{Code: reason.WrongKind, Kind: "embedding", Want: "chat"})
	}
	if !kindSkip || len(p3.Steps) != 1 {
		t.Fatalf("chat request in a mixed tier: %+v %+v", p3.Steps, p3.Skips)
	}
}

type downSet map[int64]bool

func (d downSet) Down(id int64) bool { return d[id] }

func TestResolve(t *testing.T) {
	rt := world(t, nil)
	c := rt.Callers[1]
	if tg, _ := Resolve(c, "backup", config.KindChat, true); tg.Explicit == nil || tg.Explicit.Code != "backup" {
		t.Fatal("an explicit model must not be moved to deep")
	}
	_, err := Resolve(c, "gpt-4", config.KindChat, false)
	var nf *ModelNotFoundError
	if !errors.As(err, &nf) || !strings.Contains(nf.Error(), "fast, standard, deep, backup, canary, main") {
		t.Fatalf("unknown model: %v", err)
	}
	if _, err := Resolve(c, "main", config.KindEmbedding, false); err == nil {
		t.Fatal("a chat model resolved for an embedding request")
	}
	if tg, _ := Resolve(c, "auto", config.KindChat, false); tg.Tier != config.TierStandard {
		t.Fatal("auto is standard")
	}
}

// script is a fake adapter: each call pops the next behaviour for its model.
type script struct {
	mu    sync.Mutex
	plan  map[string][]error // per upstream model; nil error = success
	calls []string           // "model/key" in order
	delay time.Duration
}

func (s *script) next(t adapter.Target) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, t.UpstreamModel+"/"+t.APIKey)
	q := s.plan[t.UpstreamModel]
	if len(q) == 0 {
		return nil
	}
	err := q[0]
	s.plan[t.UpstreamModel] = q[1:]
	return err
}

func (s *script) Chat(ctx context.Context, t adapter.Target, _ *adapter.ChatRequest) (*adapter.ChatResult, error) {
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := s.next(t); err != nil {
		return nil, err
	}
	return &adapter.ChatResult{Body: []byte(`{"ok":"` + t.UpstreamModel + `"}`), Usage: adapter.Usage{Prompt: 3, Completion: 2, Known: true}}, nil
}

func (s *script) ChatStream(ctx context.Context, t adapter.Target, _ *adapter.ChatRequest) (adapter.Stream, error) {
	if err := s.next(t); err != nil {
		return nil, err
	}
	return &fakeStream{ctx: ctx, delay: s.delay, chunks: []adapter.Chunk{{Data: []byte(`role`)}, {Data: []byte(`hello`), Content: true}, {Data: []byte(`end`), FinishReason: "stop"}}}, nil
}

func (s *script) Embed(_ context.Context, t adapter.Target, r *adapter.EmbedRequest) (*adapter.EmbedResult, error) {
	if err := s.next(t); err != nil {
		return nil, err
	}
	out := &adapter.EmbedResult{Usage: adapter.Usage{Prompt: int64(len(r.Inputs)), Known: true}}
	for _, in := range r.Inputs {
		out.Vectors = append(out.Vectors, []float32{float32(len(in)), 0, 0, 0})
	}
	return out, nil
}

func (s *script) ListModels(context.Context, adapter.Target) (*adapter.ModelList, error) {
	return &adapter.ModelList{}, nil
}

type fakeStream struct {
	ctx    context.Context
	delay  time.Duration
	chunks []adapter.Chunk
	i      int
}

func (f *fakeStream) Next() (adapter.Chunk, error) {
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-f.ctx.Done():
			return adapter.Chunk{}, f.ctx.Err()
		}
	}
	if f.i >= len(f.chunks) {
		return adapter.Chunk{}, io.EOF
	}
	f.i++
	return f.chunks[f.i-1], nil
}
func (f *fakeStream) Usage() adapter.Usage { return adapter.Usage{} }
func (f *fakeStream) Close() error         { return nil }

// recKeys records key actions and rotates keys in order.
type recKeys struct {
	cooled, quarantined []int64
}

func (r *recKeys) Pick(_ int64, ids []int64, tried []int64) (int64, reason.Reason, bool) {
	for _, id := range ids {
		if !contains(tried, id) && !contains(r.quarantined, id) {
			return id, reason.Reason{}, true
		}
	}
	return 0, reason.Of(reason.KeysTried), false
}
func (r *recKeys) Usable(ids []int64) (reason.Reason, bool) {
	for _, id := range ids {
		if !contains(r.quarantined, id) {
			return reason.Reason{}, true
		}
	}
	return reason.Of(reason.KeysQuarantined), false
}
func (r *recKeys) Cool(id int64, _ time.Duration)  { r.cooled = append(r.cooled, id) }
func (r *recKeys) Quarantine(id int64, _ KeyFault) { r.quarantined = append(r.quarantined, id) }
func contains(s []int64, v int64) bool             { return indexOf(s, v) >= 0 }
func indexOf(s []int64, v int64) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// recBreakers records outcomes per deployment.
type recBreakers struct{ outcomes map[int64][]Outcome }

func (b *recBreakers) Open(int64) (time.Time, bool) { return time.Time{}, false }

func (b *recBreakers) Allow(id int64, _ config.BreakerSettings) (func(Outcome), bool) {
	return func(o Outcome) { b.outcomes[id] = append(b.outcomes[id], o) }, true
}

func TestFailoverMatrix(t *testing.T) {
	// Chain for "deep" with an explicit single model is too short; use a
	// tier with two candidates: main (pa: keys 11, 12) then backup (pa).
	rt := world(t, func(s *config.Snapshot) {
		s.LogicModels[0].Deployments[1].Weight = 0 // only main on pa
		s.LogicModels[0].Deployments[0].Weight = 100
		s.LogicModels[2].Deployments[0].Provider = "pb" // backup on the other provider's key pool
		s.RouteGroups[0].Tiers[1].Candidates = []config.Candidate{{LogicModel: "main", Priority: 1, Weight: 100}, {LogicModel: "backup", Priority: 2, Weight: 100}}
	})
	cases := []struct {
		class          adapter.Class
		status         int
		nextKey        bool // the second key of main is tried
		nextCandidate  bool // backup is tried
		breaker        Outcome
		cool, quaran   bool
		callerStatus   int
		callerCodeWhen string
	}{
		{adapter.ClassRateLimited, 429, true, true, OutcomeIgnored, true, false, 0, ""},
		{adapter.ClassAuth, 401, true, true, OutcomeIgnored, false, true, 0, ""},
		{adapter.ClassBilling, 402, true, true, OutcomeIgnored, false, true, 0, ""},
		{adapter.ClassServer, 500, false, true, OutcomeFailure, false, false, 0, ""},
		{adapter.ClassTimeout, 0, false, true, OutcomeFailure, false, false, 0, ""},
		{adapter.ClassNetwork, 0, false, true, OutcomeFailure, false, false, 0, ""},
		{adapter.ClassContentFilter, 200, false, false, OutcomeIgnored, false, false, 400, "content_filtered"},
		{adapter.ClassBadRequest, 400, false, false, OutcomeIgnored, false, false, 400, "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(string(tc.class), func(t *testing.T) {
			fail := &adapter.Error{Class: tc.class, Status: tc.status, Message: "injected"}
			sc := &script{plan: map[string][]error{"m-a": {fail, fail}}}
			keys, br := &recKeys{}, &recBreakers{outcomes: map[int64][]Outcome{}}
			ex := &Executor{Adapters: map[config.Protocol]adapter.Adapter{"openai": sc}, State: State{Keys: keys, Breakers: br}}
			p := plan(t, rt, "standard", chat(), nil)
			var tr Trail
			out, f := ex.Chat(context.Background(), p, Call{Deadline: time.Now().Add(5 * time.Second)}, &adapter.ChatRequest{}, &tr)
			calls := strings.Join(sc.calls, ",")
			triedSecondKey := strings.Contains(calls, "m-a/secret-k12")
			triedBackup := strings.Contains(calls, "bk-a/")
			if triedSecondKey != tc.nextKey || triedBackup != tc.nextCandidate {
				t.Fatalf("calls %s: next key %v (want %v), next candidate %v (want %v)", calls, triedSecondKey, tc.nextKey, triedBackup, tc.nextCandidate)
			}
			if got := br.outcomes[101]; len(got) != 1 || got[0] != tc.breaker {
				t.Fatalf("breaker outcome for main: %v, want [%v]", got, tc.breaker)
			}
			if (len(keys.cooled) > 0) != tc.cool || (len(keys.quarantined) > 0) != tc.quaran {
				t.Fatalf("key actions: cooled %v quarantined %v", keys.cooled, keys.quarantined)
			}
			if tc.nextCandidate {
				if f != nil || out.Served.Deployment.ID != 301 {
					t.Fatalf("should be served by backup: %+v %v", out.Served, f)
				}
				if br.outcomes[301][0] != OutcomeSuccess {
					t.Fatalf("backup outcome %v", br.outcomes[301])
				}
			} else if f == nil || f.Status != tc.callerStatus || string(f.Code) != tc.callerCodeWhen || !f.NoRetry {
				t.Fatalf("want %d %s returned at once, got %+v", tc.callerStatus, tc.callerCodeWhen, f)
			}
		})
	}
}

func TestEverythingFailsListsEveryStep(t *testing.T) {
	rt := world(t, nil)
	fail := &adapter.Error{Class: adapter.ClassServer, Status: 503, Message: "down"}
	sc := &script{plan: map[string][]error{"m-a": {fail}, "m-b": {fail}, "c-b": {fail}, "bk-a": {fail}}}
	ex := &Executor{Adapters: map[config.Protocol]adapter.Adapter{"openai": sc}}
	var tr Trail
	_, f := ex.Chat(context.Background(), plan(t, rt, "standard", chat(), nil), Call{Deadline: time.Now().Add(5 * time.Second)}, &adapter.ChatRequest{}, &tr)
	if f == nil || f.Status != http.StatusBadGateway || f.Code != "upstream_error" {
		t.Fatalf("want 502 upstream_error, got %+v", f)
	}
	for _, m := range []string{"main on pa/m-a", "main on pb/m-b", "canary on pb/c-b", "backup on pa/bk-a"} {
		if !strings.Contains(f.Error(), m) {
			t.Errorf("message misses %q: %s", m, f.Error())
		}
	}
	// All skipped: 503 no_available_model naming each skip reason.
	rt2 := world(t, func(s *config.Snapshot) { s.LogicModels[2].Deployments[0].Enabled = false })
	var tr2 Trail
	_, f = ex.Chat(context.Background(), plan(t, rt2, "deep", chat(), nil), Call{Deadline: time.Now().Add(time.Second)}, &adapter.ChatRequest{}, &tr2)
	if f == nil || f.Status != 503 || f.Code != "no_available_model" || !strings.Contains(f.Error(), "backup on pa/bk-a: skipped, disabled") {
		t.Fatalf("all skipped: %+v", f)
	}
}

func TestTierTimeoutCutsAttemptAndFailsOver(t *testing.T) {
	rt := world(t, func(s *config.Snapshot) {
		s.RouteGroups[0].Tiers[1].TimeoutMS = 300
		s.RouteGroups[0].Tiers[1].FirstChunkTimeoutMS = 200
	})
	sc := &script{plan: map[string][]error{}, delay: 2 * time.Second}
	slowOnly := &modelDelay{script: sc, slow: map[string]bool{"m-a": true, "m-b": true, "c-b": true}}
	ex := &Executor{Adapters: map[config.Protocol]adapter.Adapter{"openai": slowOnly}}
	var tr Trail
	start := time.Now()
	p := plan(t, rt, "standard", chat(), nil)
	out, f := ex.Chat(context.Background(), p, Call{Deadline: time.Now().Add(10 * time.Second)}, &adapter.ChatRequest{}, &tr)
	if f != nil || out.Served.Deployment.ID != 301 {
		t.Fatalf("should fail over to backup: %+v", f)
	}
	first := tr.Attempts[0]
	if first.Class != "timeout" || first.LatencyMS < 200 || first.LatencyMS > 400 {
		t.Fatalf("first attempt: %+v", first)
	}
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Fatalf("took %v", el)
	}
	// Streams: the first-chunk timeout cuts a slow first chunk.
	var tr2 Trail
	c, f := ex.ChatStream(context.Background(), plan(t, rt, "standard", chat(), nil), Call{Deadline: time.Now().Add(10 * time.Second)}, &adapter.ChatRequest{}, &tr2)
	if f != nil {
		t.Fatalf("stream: %+v", f)
	}
	defer c.Close(nil)
	if a := tr2.Attempts[0]; a.Class != "timeout" || !strings.Contains(a.Reason, "first chunk") || a.LatencyMS > 400 {
		t.Fatalf("stream first attempt: %+v", a)
	}
	if c.Served.Deployment.ID != 301 || !c.First[len(c.First)-1].Content {
		t.Fatalf("stream served by %d", c.Served.Deployment.ID)
	}
}

// modelDelay makes some upstream models slow.
type modelDelay struct {
	*script
	slow map[string]bool
}

func (m *modelDelay) Chat(ctx context.Context, t adapter.Target, r *adapter.ChatRequest) (*adapter.ChatResult, error) {
	if m.slow[t.UpstreamModel] {
		return m.script.Chat(ctx, t, r)
	}
	if err := m.script.next(t); err != nil {
		return nil, err
	}
	return &adapter.ChatResult{Body: []byte(`{"ok":"` + t.UpstreamModel + `"}`), Usage: adapter.Usage{Prompt: 3, Completion: 2, Known: true}}, nil
}

func (m *modelDelay) ChatStream(ctx context.Context, t adapter.Target, r *adapter.ChatRequest) (adapter.Stream, error) {
	st, err := m.script.ChatStream(ctx, t, r)
	if err == nil && !m.slow[t.UpstreamModel] {
		st.(*fakeStream).delay = 0
	}
	return st, err
}

func TestClientCancelStopsAtOnce(t *testing.T) {
	rt := world(t, nil)
	ex := &Executor{Adapters: map[config.Protocol]adapter.Adapter{"openai": &script{plan: map[string][]error{}, delay: 5 * time.Second}}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	var tr Trail
	start := time.Now()
	_, f := ex.Chat(ctx, plan(t, rt, "standard", chat(), nil), Call{Deadline: time.Now().Add(10 * time.Second)}, &adapter.ChatRequest{}, &tr)
	if f == nil || f.Code != "client_cancelled" || time.Since(start) > time.Second || len(tr.Attempts) != 1 {
		t.Fatalf("cancel: %+v after %v, %d attempts", f, time.Since(start), len(tr.Attempts))
	}
}

func TestEmbedBatchesInOrderAndChecksDimension(t *testing.T) {
	rt := world(t, nil)
	sc := &script{plan: map[string][]error{}}
	ex := &Executor{Adapters: map[config.Protocol]adapter.Adapter{"openai": sc}}
	inputs := make([]string, 10)
	for i := range inputs {
		inputs[i] = strings.Repeat("x", i+1)
	}
	var tr Trail
	out, f := ex.Embed(context.Background(), plan(t, rt, "fast", Needs{Kind: config.KindEmbedding}, nil), Call{Deadline: time.Now().Add(time.Second)}, EmbedRequest{Inputs: inputs}, &tr)
	if f != nil {
		t.Fatal(f)
	}
	if len(sc.calls) != 4 { // batch limit 3 → 4 batches
		t.Fatalf("calls: %v", sc.calls)
	}
	for i, v := range out.Vectors {
		if int(v[0]) != i+1 {
			t.Fatalf("vector %d out of order: %v", i, v)
		}
	}
	_, f = ex.Embed(context.Background(), plan(t, rt, "fast", Needs{Kind: config.KindEmbedding}, nil), Call{Deadline: time.Now().Add(time.Second)}, EmbedRequest{Inputs: inputs, Dimensions: 8}, &Trail{})
	if f == nil || !strings.Contains(f.Error(), "emb on pa (e-a)") || !strings.Contains(f.Error(), "expects 8") {
		t.Fatalf("dimension mismatch: %+v", f)
	}
}

// BenchmarkRouteResolution builds the plan for a 3-tier group of 10
// candidates per tier, each with two deployments: Resolve + Build.
func BenchmarkRouteResolution(b *testing.B) {
	rt := world(b, func(s *config.Snapshot) {
		s.LogicModels = nil
		var cands []config.Candidate
		for i := range 10 {
			code := fmt.Sprintf("m%d", i)
			s.LogicModels = append(s.LogicModels, config.LogicModel{ID: int64(i + 1), Code: code, Kind: "chat", Deployments: []config.Deployment{
				{ID: int64(1000 + 2*i), Provider: "pa", UpstreamModel: code + "-a", Weight: 60, Enabled: true, MaxConcurrency: 10},
				{ID: int64(1001 + 2*i), Provider: "pb", UpstreamModel: code + "-b", Weight: 40, Enabled: true},
			}})
			cands = append(cands, config.Candidate{LogicModel: code, Priority: 1 + i/3, Weight: 10 + i})
		}
		for j := range s.RouteGroups[0].Tiers {
			s.RouteGroups[0].Tiers[j].Candidates = cands
		}
	})
	caller := rt.Callers[1]
	st := &State{Health: downSet{}, Load: noLoad{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		tier := []string{"fast", "standard", "deep"}[i%3]
		tg, err := Resolve(caller, tier, config.KindChat, false)
		if err != nil {
			b.Fatal(err)
		}
		p := NewPlan()
		Build(p, caller, tg, chat(), st)
		if len(p.Steps) != 20 {
			b.Fatalf("steps %d", len(p.Steps))
		}
		p.Release()
	}
}

type openBreakers map[int64]bool

func (b openBreakers) Allow(id int64, _ config.BreakerSettings) (func(Outcome), bool) {
	return func(Outcome) {}, !b[id]
}
func (b openBreakers) Open(id int64) (time.Time, bool) { return time.Time{}, b[id] }

type blockedKeys map[int64]reason.Code

func (k blockedKeys) Pick(_ int64, ids []int64, _ []int64) (int64, reason.Reason, bool) {
	return ids[0], reason.Reason{}, true
}
func (k blockedKeys) Usable(ids []int64) (reason.Reason, bool) {
	for _, id := range ids {
		if k[id] == "" {
			return reason.Reason{}, true
		}
	}
	return reason.Of(k[ids[0]]), false
}
func (blockedKeys) Cool(int64, time.Duration)  {}
func (blockedKeys) Quarantine(int64, KeyFault) {}

func TestPlanSkipsOpenBreakersAndUnusableKeys(t *testing.T) {
	rt := world(t, nil)
	st := &State{Breakers: openBreakers{101: true}, Keys: blockedKeys{21: reason.KeysQuarantined}}
	p := plan(t, rt, "standard", chat(), st)
	reasons := map[int64]reason.Code{}
	for _, s := range p.Skips {
		reasons[s.DeploymentID] = s.Reason.Code
	}
	if reasons[101] != reason.BreakerOpen || reasons[102] != reason.KeysQuarantined || reasons[201] != reason.KeysQuarantined {
		t.Fatalf("skips: %+v", p.Skips)
	}
	if len(p.Steps) != 1 || p.Steps[0].Deployment.ID != 301 {
		t.Fatalf("only the backup on pa (key 11 usable, breaker closed) should remain: %+v", p.Steps)
	}
	ex := &Executor{Adapters: map[config.Protocol]adapter.Adapter{"openai": &script{plan: map[string][]error{}}}, State: *st}
	if f := ex.Unavailable(p, &Trail{}); f != nil {
		t.Fatalf("a plan with a step is available: %+v", f)
	}
	st.Keys = blockedKeys{11: reason.KeysCooling, 12: reason.KeysCooling, 21: reason.KeysQuarantined}
	p2 := plan(t, rt, "standard", chat(), st)
	f := ex.Unavailable(p2, &Trail{})
	if f == nil || f.Code != "no_available_model" || !strings.Contains(f.Error(), "backup on pa/bk-a: skipped, all keys cooling") {
		t.Fatalf("nothing to try: %+v", f)
	}
}

// TestNoSilentCaps: a level with more candidates, or a logic model with more
// deployments, than one chain holds keeps every one it cannot take in the
// skips, with the reason — none is dropped without a word.
func TestNoSilentCaps(t *testing.T) {
	const n = 40
	rt := world(t, func(s *config.Snapshot) {
		var deps []config.Deployment
		for i := range n {
			deps = append(deps, config.Deployment{ID: int64(1000 + i), Provider: "pa", UpstreamModel: "wide-" + strconv.Itoa(i), Weight: 1, Enabled: true})
		}
		s.LogicModels = append(s.LogicModels, config.LogicModel{ID: 9, Code: "wide", Kind: "chat", Deployments: deps})
		var cands []config.Candidate
		for i := range n {
			code := "m" + strconv.Itoa(i)
			s.LogicModels = append(s.LogicModels, config.LogicModel{ID: int64(100 + i), Code: code, Kind: "chat",
				Deployments: []config.Deployment{{ID: int64(2000 + i), Provider: "pb", UpstreamModel: code, Weight: 1, Enabled: true}}})
			cands = append(cands, config.Candidate{LogicModel: code, Priority: 1, Weight: 1})
		}
		s.RouteGroups[0].Tiers[0].Candidates = cands                                                            // fast: 40 candidates
		s.RouteGroups[0].Tiers[2].Candidates = []config.Candidate{{LogicModel: "wide", Priority: 1, Weight: 1}} // deep: 40 deployments
	})
	for _, tc := range []struct {
		tier string
		why  string
	}{{"fast", "candidates of one level"}, {"deep", "deployments of one logic model"}} {
		p := plan(t, rt, tc.tier, chat(), nil)
		full := 0
		for _, s := range p.Skips {
			if s.Reason.Code == reason.ChainFull && s.Reason.Max == len(p.weights) {
				full++
			}
		}
		if len(p.Steps)+full != n || full == 0 {
			t.Errorf("%s: %d steps + %d chain_full skips, want %d %s accounted for (skips %+v)", tc.tier, len(p.Steps), full, n, tc.why, p.Skips)
		}
		p.Release()
	}
}

// A plan is held for a whole stream, so the pool keeps plans small: a new
// one has no room for skips, and one that grew past pooledCap is dropped
// rather than handed to the next request.
func TestPlanPoolStaysSmall(t *testing.T) {
	if p := planPool.New().(*Plan); cap(p.Skips) != 0 || cap(p.Steps) > pooledCap {
		t.Fatalf("a new plan holds room for %d skips and %d steps", cap(p.Skips), cap(p.Steps))
	}
	for range 20 {
		p := NewPlan()
		p.Skips = append(p.Skips, make([]Skip, 4*pooledCap)...)
		p.Steps = append(p.Steps, make([]Step, 4*pooledCap)...)
		p.Release()
		if q := NewPlan(); cap(q.Skips) > pooledCap || cap(q.Steps) > pooledCap {
			t.Fatalf("the pool handed out a plan with room for %d skips and %d steps", cap(q.Skips), cap(q.Steps))
		}
	}
}
