package routing

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/limit"
	"switchyard/routing/queue"
	"switchyard/routing/reason"
)

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEffectiveWeight(t *testing.T) {
	tests := []struct {
		name              string
		weight, in, slots int
		tokens, maxTokens int64
		want              int
	}{
		{"uncapped keeps its weight", 100, 50, 0, 90000, 0, 100},
		{"slots only: half busy", 100, 5, 10, 0, 0, 50},
		{"tokens only: a quarter used", 100, 3, 0, 10000, 40000, 75},
		{"the scarcer cap decides: tokens", 100, 2, 4, 30000, 40000, 25},
		{"the scarcer cap decides: slots", 100, 3, 4, 1000, 40000, 25},
		{"over the token cap is floored, not dropped", 100, 1, 4, 50000, 40000, 1},
		{"full slots floored", 100, 4, 4, 0, 40000, 1},
		{"negative load counts as idle", 100, -1, 4, -10, 40000, 100},
	}
	for _, tt := range tests {
		if got := effectiveWeight(tt.weight, tt.in, tt.slots, tt.tokens, tt.maxTokens); got != tt.want {
			t.Errorf("%s: effectiveWeight = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// loads is a fixed load per deployment (slots, tokens).
type loads map[int64][2]int64

func (l loads) Acquire(context.Context, LoadRequest) (func(), error) { return func() {}, nil }
func (l loads) Load(id int64) (int, int64)                           { return int(l[id][0]), l[id][1] }

// TestTokenWeightingSendsLongRequestsAway: two deployments with the same
// slot count in flight, one busy with long requests: a long request goes to
// the other nearly always, which slot-only weighting (50/50) cannot do.
func TestTokenWeightingSendsLongRequestsAway(t *testing.T) {
	rt := world(t, func(s *config.Snapshot) {
		for i := range s.LogicModels[0].Deployments {
			d := &s.LogicModels[0].Deployments[i]
			d.Weight, d.MaxConcurrency, d.MaxInflightTokens = 100, 4, 40000
		}
	})
	st := &State{Load: loads{101: {2, 31000}, 102: {2, 1600}}}
	long := Needs{Kind: config.KindChat, Estimate: EstimateFunc(func(tier string) int64 {
		if tier != "fast" {
			t.Errorf("estimate asked for tier %q", tier)
		}
		return 8500
	})}
	const n = 4000
	onBusy := 0
	for range n {
		p := plan(t, rt, "fast", long, st)
		if p.Tokens != 8500 {
			t.Fatalf("plan tokens %d", p.Tokens)
		}
		if p.Steps[0].Deployment.ID == 101 {
			onBusy++
		}
		p.Release()
	}
	// Weights 1 (500 of 40000 tokens left after it) against 50 (slots).
	if share := float64(onBusy) / n; share > 0.05 {
		t.Fatalf("%.1f%% of long requests went first to the deployment busy with long requests", 100*share)
	}
	// Without token caps the same load is an even split.
	rt = world(t, func(s *config.Snapshot) {
		for i := range s.LogicModels[0].Deployments {
			d := &s.LogicModels[0].Deployments[i]
			d.Weight, d.MaxConcurrency = 100, 4
		}
	})
	onBusy = 0
	for range n {
		p := plan(t, rt, "fast", long, st)
		if p.Steps[0].Deployment.ID == 101 {
			onBusy++
		}
		p.Release()
	}
	if share := float64(onBusy) / n; share < 0.45 || share > 0.55 {
		t.Fatalf("slot-only weighting sent %.1f%% to one of two equally loaded deployments", 100*share)
	}
}

// capped is an in-memory Load with real caps, counting acquisitions.
type capped struct {
	mu     sync.Mutex
	slots  map[int64]int
	tokens map[int64]int64
}

func (c *capped) Acquire(_ context.Context, r LoadRequest) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := r.Deployment
	if c.slots == nil {
		c.slots, c.tokens = map[int64]int{}, map[int64]int64{}
	}
	switch {
	case d.MaxConcurrency > 0 && c.slots[d.ID] >= d.MaxConcurrency:
		return nil, ErrFull
	case d.MaxInflightTokens > 0 && c.slots[d.ID] > 0 && c.tokens[d.ID]+r.Tokens > d.MaxInflightTokens:
		return nil, ErrTokensFull
	}
	c.slots[d.ID]++
	c.tokens[d.ID] += r.Tokens
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.slots[d.ID]--
			c.tokens[d.ID] -= r.Tokens
			c.mu.Unlock()
		})
	}, nil
}

func (c *capped) Load(id int64) (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots[id], c.tokens[id]
}

func (c *capped) held(id int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots[id]
}

// TestRequestsWaitForCapacity: with every deployment of the plan at
// capacity a request waits in its class's queue, is served on the step that
// freed, and its trail shows the skips and the wait; at its deadline it
// gets a 504 naming the queue; a full queue refuses with 429 queue_full and
// a typed refusal.
func TestRequestsWaitForCapacity(t *testing.T) {
	rt := world(t, func(s *config.Snapshot) {
		s.LogicModels[0].Deployments[0].MaxConcurrency = 1
		s.LogicModels[0].Deployments[1].MaxInflightTokens = 1000
	})
	load := &capped{}
	q := queue.New(queue.Options{Bounds: [3]int{4, 1, 1}, Poll: time.Hour})
	defer q.Close()
	sc := &script{plan: map[string][]error{}, delay: 30 * time.Millisecond}
	ex := &Executor{Adapters: map[config.Protocol]adapter.Adapter{"openai": sc}, State: State{Load: load}, Queue: q}
	dep := rt.Deployments[101]
	tok := rt.Deployments[102]
	holdA, _ := load.Acquire(context.Background(), LoadRequest{Deployment: dep})
	holdB, _ := load.Acquire(context.Background(), LoadRequest{Deployment: tok, Tokens: 900})

	run := func(class config.PriorityClass, budget time.Duration) (ChatOutcome, *Failure, *Trail) {
		p := plan(t, rt, "fast", chat(), &ex.State)
		defer p.Release()
		tr := &Trail{}
		out, f := ex.Chat(context.Background(), p, Call{Class: class, Tokens: 500, Deadline: time.Now().Add(budget)}, &adapter.ChatRequest{}, tr)
		return out, f, tr
	}
	// The token-capped deployment frees first: the waiter is served there.
	time.AfterFunc(50*time.Millisecond, func() { holdB(); q.Released(tok.ID, false) })
	out, f, tr := run(config.ClassNormal, 5*time.Second)
	if f != nil {
		t.Fatalf("waiting request failed: %+v", f)
	}
	if out.Served.Deployment.ID != 102 || out.Served.Attempts != 1 {
		t.Fatalf("served by %d after %d attempts, want 102 after 1", out.Served.Deployment.ID, out.Served.Attempts)
	}
	var skips []reason.Code
	for _, a := range tr.Attempts {
		if a.Skip != nil {
			skips = append(skips, a.Skip.Code)
		}
	}
	if len(skips) != 2 || !tr.queued || tr.QueuedMS < 40 {
		t.Fatalf("trail skips %v, queued %v for %d ms; want over_capacity and over_token_capacity, then ~50 ms queued", skips, tr.queued, tr.QueuedMS)
	}
	if tr.Attempts[len(tr.Attempts)-1].Outcome != "ok" || strings.Count(string(mustJSON(t, tr)), `"queued_ms"`) != 1 {
		t.Fatalf("trail: %s", mustJSON(t, tr))
	}
	if load.held(102) != 0 { // Chat's finish released it
		t.Fatalf("slots of 102 held after the answer: %d", load.held(102))
	}

	// Deadline while waiting: 504 with the queue named.
	holdB, _ = load.Acquire(context.Background(), LoadRequest{Deployment: tok, Tokens: 900})
	_, f, _ = run(config.ClassBatch, 60*time.Millisecond)
	if f == nil || f.Status != http.StatusGatewayTimeout || !strings.Contains(f.Text("r1"), "in the batch queue for a deployment at capacity") {
		t.Fatalf("expired waiter: %+v %q", f, f.Text(""))
	}

	// A full queue (normal: bound 1) refuses at once with a typed refusal.
	done := make(chan *Failure, 1)
	go func() { _, f, _ := run(config.ClassNormal, 5*time.Second); done <- f }()
	for q.Depth(queue.Normal) != 1 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	_, f, _ = run(config.ClassNormal, 5*time.Second)
	if f == nil || f.Status != http.StatusTooManyRequests || f.Code != CodeQueueFull || f.Refusal == nil ||
		f.Refusal.Limit != limit.KindQueueFull || f.Refusal.Class != "normal" || f.Refusal.Value != 1 || f.RetryAfter <= 0 {
		t.Fatalf("full queue: %+v", f)
	}
	if time.Since(start) > time.Second {
		t.Fatal("a full queue did not refuse at once")
	}
	if !strings.Contains(f.Text(""), "normal queue of this gateway instance is full (1 waiting): every deployment for tier fast is at capacity") {
		t.Fatalf("refusal text: %q", f.Text(""))
	}
	// The waiter is let in when the slot on 101 frees (locally).
	holdA()
	q.Released(dep.ID, false)
	if f := <-done; f != nil {
		t.Fatalf("queued request after the slot freed: %+v", f)
	}
	holdB()
	if load.held(101) != 0 || load.held(102) != 0 || q.Depth(queue.Normal) != 0 {
		t.Fatalf("left behind: slots %d/%d, queued %d", load.held(101), load.held(102), q.Depth(queue.Normal))
	}
	if calls := len(sc.calls); calls != 2 {
		t.Fatalf("%d vendor calls, want 2 (the two served requests)", calls)
	}
}

// TestNewcomersQueueBehindWaiters: a request arriving while others of this
// instance wait for the same deployment does not take a freed slot first.
func TestNewcomersQueueBehindWaiters(t *testing.T) {
	rt := world(t, func(s *config.Snapshot) {
		s.LogicModels[0].Deployments[0].MaxConcurrency = 1
		s.LogicModels[0].Deployments[1].Weight = 0
	})
	q := queue.New(queue.Options{Poll: time.Hour})
	defer q.Close()
	load := &capped{}
	ex := &Executor{Adapters: map[config.Protocol]adapter.Adapter{"openai": &script{plan: map[string][]error{}}}, State: State{Load: load}, Queue: q}
	dep := rt.Deployments[101]
	hold, _ := load.Acquire(context.Background(), LoadRequest{Deployment: dep})
	waiter := make(chan error, 1)
	go func() {
		p := plan(t, rt, "fast", chat(), &ex.State)
		defer p.Release()
		_, f := ex.Chat(context.Background(), p, Call{Class: config.ClassBatch, Deadline: time.Now().Add(5 * time.Second)}, &adapter.ChatRequest{}, &Trail{})
		if f != nil {
			waiter <- errors.New(f.Error())
			return
		}
		waiter <- nil
	}()
	for q.Depth(queue.Batch) != 1 {
		time.Sleep(time.Millisecond)
	}
	hold() // freed on "another instance": no Released, so the waiter has not seen it
	p := plan(t, rt, "fast", chat(), &ex.State)
	defer p.Release()
	if _, err := ex.acquire(context.Background(), load, p.Steps[0].Deployment, Call{Class: config.ClassInteractive}); !errors.Is(err, ErrFull) {
		t.Fatalf("a newcomer took the slot a waiter waits for: %v", err)
	}
	q.Released(dep.ID, false)
	if err := <-waiter; err != nil {
		t.Fatal(err)
	}
}

// TestAClassWithoutAQueueFailsFastAtCapacity: a class configured with no
// queue (bound 0) is answered at once at a deployment's cap, as before
// there were queues: a 503 whose skips are the capacity, no wait.
func TestAClassWithoutAQueueFailsFastAtCapacity(t *testing.T) {
	rt := world(t, func(s *config.Snapshot) {
		s.LogicModels[0].Deployments[0].MaxConcurrency = 1
		s.LogicModels[0].Deployments[1].MaxConcurrency = 1
	})
	load := &capped{}
	q := queue.New(queue.Options{Bounds: [3]int{4, -1, 4}, Poll: time.Hour})
	defer q.Close()
	if q.Queues(queue.Normal) || !q.Queues(queue.Interactive) {
		t.Fatalf("Queues: normal %v, interactive %v", q.Queues(queue.Normal), q.Queues(queue.Interactive))
	}
	sc := &script{plan: map[string][]error{}}
	ex := &Executor{Adapters: map[config.Protocol]adapter.Adapter{"openai": sc}, State: State{Load: load}, Queue: q}
	for _, id := range []int64{101, 102} {
		rel, _ := load.Acquire(context.Background(), LoadRequest{Deployment: rt.Deployments[id]})
		defer rel()
	}
	p := plan(t, rt, "fast", chat(), &ex.State)
	defer p.Release()
	tr := &Trail{}
	start := time.Now()
	_, f := ex.Chat(context.Background(), p, Call{Class: config.ClassNormal, Deadline: time.Now().Add(5 * time.Second)}, &adapter.ChatRequest{}, tr)
	if f == nil || f.Status != http.StatusServiceUnavailable || f.Code != "no_available_model" || tr.queued {
		t.Fatalf("normal at capacity without a queue: %+v (queued %v)", f, tr.queued)
	}
	if time.Since(start) > time.Second || q.Depth(queue.Normal) != 0 {
		t.Fatal("it waited")
	}
	if r := capRefusal(tr, f); r == nil || r.Limit != limit.KindDeploymentCap || r.Value != 2 {
		t.Fatalf("refusal %+v, want the deployment cap of 2 slots", r)
	}
	if len(sc.calls) != 0 {
		t.Fatalf("%d vendor calls", len(sc.calls))
	}
}
