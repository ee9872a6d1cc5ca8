package idempotency

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"switchyard/store/storetest"
)

// testStore returns a Store on the real Redis under a fresh prefix (see
// store/storetest), and its client.
func testStore(t *testing.T, opts Options) (*Store, redis.UniversalClient) {
	t.Helper()
	rdb, prefix := storetest.TestRedis(t, "idem")
	opts.Prefix = prefix
	return New(rdb, opts), rdb
}

func begin(t *testing.T, s *Store, ctx context.Context, caller int64, key string, fp [32]byte) Outcome {
	t.Helper()
	out, err := s.Begin(ctx, caller, key, fp)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	fpA = Fingerprint([]byte("/v1/chat/completions"), []byte(`{"model":"fast","messages":[]}`))
	fpB = Fingerprint([]byte("/v1/chat/completions"), []byte(`{"model":"deep","messages":[]}`))
)

var okResult = Result{
	Status: 200,
	Header: map[string]string{"Content-Type": "application/json", "X-Request-Id": "req-1"},
	Body:   []byte(`{"id":"chatcmpl-1"}`),
}

// TestConcurrentBeginOneRuns: 20 requests with one key; one runs, the others
// wait and all replay its result.
func TestConcurrentBeginOneRuns(t *testing.T) {
	s, _ := testStore(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	const n = 20
	outcomes := make([]Outcome, n)
	var wg sync.WaitGroup
	var start sync.WaitGroup
	start.Add(1)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			out, err := s.Begin(ctx, 1, "order-42", fpA)
			if err != nil {
				t.Error(err)
				return
			}
			if out.Owned {
				time.Sleep(150 * time.Millisecond) // the vendor call
				if err := s.Complete(ctx, out.Claim, okResult); err != nil {
					t.Error(err)
				}
			}
			outcomes[i] = out
		}()
	}
	start.Done()
	wg.Wait()

	owned, replayed := 0, 0
	for _, out := range outcomes {
		switch {
		case out.Owned:
			owned++
		case out.Replay != nil:
			replayed++
			if diff := cmp.Diff(&okResult, out.Replay); diff != "" {
				t.Errorf("replay differs (-want +got):\n%s", diff)
			}
			if out.Waited < 100*time.Millisecond {
				t.Errorf("a repeat replayed after %v, before the original completed", out.Waited)
			}
		}
	}
	if owned != 1 || replayed != n-1 {
		t.Fatalf("%d owned, %d replayed, want 1 and %d", owned, replayed, n-1)
	}
}

func TestReplayAfterComplete(t *testing.T) {
	s, _ := testStore(t, Options{})
	ctx := context.Background()
	out := begin(t, s, ctx, 1, "k", fpA)
	streamed := Result{
		Status: 200,
		Header: map[string]string{"content-type": "text/event-stream", "Authorization": "Bearer sk-secret", "set-cookie": "a=b"},
		Body:   []byte("data: {\"x\":1}\n\ndata: [DONE]\n\n"),
		Stream: true,
	}
	if err := s.Complete(ctx, out.Claim, streamed); err != nil {
		t.Fatal(err)
	}
	again := begin(t, s, ctx, 1, "k", fpA)
	want := &Result{Status: 200, Header: map[string]string{"Content-Type": "text/event-stream"}, Body: streamed.Body, Stream: true}
	if diff := cmp.Diff(want, again.Replay); diff != "" {
		t.Fatalf("replay (-want +got), credentials must not be stored:\n%s", diff)
	}
	if again.Owned || again.Conflict {
		t.Fatalf("outcome %+v", again)
	}
	// An error result replays too.
	out = begin(t, s, ctx, 1, "k2", fpA)
	if err := s.Complete(ctx, out.Claim, Result{Status: 400, Body: []byte(`{"error":{}}`)}); err != nil {
		t.Fatal(err)
	}
	if r := begin(t, s, ctx, 1, "k2", fpA).Replay; r == nil || r.Status != 400 {
		t.Fatalf("error result not replayed: %+v", r)
	}
}

func TestDifferentFingerprintConflicts(t *testing.T) {
	s, _ := testStore(t, Options{})
	ctx := context.Background()
	out := begin(t, s, ctx, 1, "k", fpA)
	if c := begin(t, s, ctx, 1, "k", fpB); !c.Conflict {
		t.Fatalf("different body while the original runs: %+v, want Conflict", c)
	}
	if err := s.Complete(ctx, out.Claim, okResult); err != nil {
		t.Fatal(err)
	}
	if c := begin(t, s, ctx, 1, "k", fpB); !c.Conflict {
		t.Fatalf("different body after the original completed: %+v, want Conflict", c)
	}
	// Keys are scoped per caller: another caller's "k" is its own.
	if o := begin(t, s, ctx, 2, "k", fpB); !o.Owned {
		t.Fatalf("another caller's key: %+v, want Owned", o)
	}
}

func TestAbandonHandsOverToAWaiter(t *testing.T) {
	s, _ := testStore(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	first := begin(t, s, ctx, 1, "k", fpA)

	got := make(chan Outcome, 1)
	go func() {
		out, err := s.Begin(ctx, 1, "k", fpA)
		if err != nil {
			t.Error(err)
		}
		got <- out
	}()
	time.Sleep(60 * time.Millisecond) // the repeat is waiting
	if err := s.Abandon(ctx, first.Claim); err != nil {
		t.Fatal(err)
	}
	second := <-got
	if !second.Owned {
		t.Fatalf("waiter after Abandon: %+v, want Owned", second)
	}
	if err := s.Complete(ctx, first.Claim, okResult); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Complete by the abandoned claim = %v, want ErrNotOwner", err)
	}
	if err := s.Complete(ctx, second.Claim, okResult); err != nil {
		t.Fatal(err)
	}
}

func TestTTL(t *testing.T) {
	s, rdb := testStore(t, Options{TTL: time.Hour, ClaimLease: 30 * time.Second})
	ctx := context.Background()
	out := begin(t, s, ctx, 1, "k", fpA)
	rk := s.redisKey(1, "k")
	if ttl := rdb.PTTL(ctx, rk).Val(); ttl <= 29*time.Second || ttl > 30*time.Second {
		t.Fatalf("running claim PTTL %v, want the 30s lease", ttl)
	}
	if err := s.Complete(ctx, out.Claim, okResult); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.PTTL(ctx, rk).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("completed result PTTL %v, want the 1h TTL", ttl)
	}
	if !strings.Contains(rk, "{i1:") {
		t.Fatalf("key %q lacks the caller+key hash tag", rk)
	}

	// A request whose deadline is beyond the lease keeps its claim that long.
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	begin(t, s, ctx, 1, "slow", fpA)
	if ttl := rdb.PTTL(ctx, s.redisKey(1, "slow")).Val(); ttl < 3*time.Minute {
		t.Fatalf("claim of a request with a 3m deadline has PTTL %v", ttl)
	}
}

func TestDefaults(t *testing.T) {
	s := New(nil, Options{})
	if s.ttl != 24*time.Hour || s.lease != 2*time.Minute || s.pollInterval != 20*time.Millisecond {
		t.Fatalf("defaults ttl %v lease %v poll %v", s.ttl, s.lease, s.pollInterval)
	}
}

func TestWaitRespectsDeadline(t *testing.T) {
	s, _ := testStore(t, Options{})
	begin(t, s, context.Background(), 1, "k", fpA) // runs and never completes

	start := time.Now() // before the deadline is set, so it cannot read short
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := s.Begin(ctx, 1, "k", fpA)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Begin while the original runs past the deadline = %v, want DeadlineExceeded", err)
	}
	if took < 100*time.Millisecond || took > 500*time.Millisecond {
		t.Fatalf("gave up after %v, want the 100ms deadline", took)
	}
}

func TestLeaseExpiryLetsAnotherClaim(t *testing.T) {
	s, _ := testStore(t, Options{ClaimLease: 200 * time.Millisecond})
	first := begin(t, s, context.Background(), 1, "k", fpA) // its owner "crashes"

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	second := begin(t, s, ctx, 1, "k", fpA)
	if !second.Owned {
		t.Fatalf("after the lease expired: %+v, want Owned", second)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Fatalf("claimed after %v, before the 200ms lease ran out", took)
	}
	if err := s.Complete(ctx, first.Claim, okResult); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("late Complete by the expired claim = %v, want ErrNotOwner", err)
	}
	if err := s.Abandon(ctx, first.Claim); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("late Abandon by the expired claim = %v, want ErrNotOwner", err)
	}
	if err := s.Complete(ctx, second.Claim, okResult); err != nil {
		t.Fatal(err)
	}
}

func TestValidKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"a", true},
		{"8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{`"quoted {braces} and spaces ~"`, true},
		{strings.Repeat("k", 255), true},
		{"", false},
		{strings.Repeat("k", 256), false},
		{"tab\there", false},
		{"new\nline", false},
		{"del\x7f", false},
		{"ünïcode", false},
	}
	for _, tt := range tests {
		err := ValidKey(tt.key)
		if (err == nil) != tt.ok {
			t.Errorf("ValidKey(%q) = %v, want ok=%v", tt.key, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ValidKey(%q) = %v, want ErrInvalidKey", tt.key, err)
		}
	}
	s := New(nil, Options{})
	if _, err := s.Begin(context.Background(), 1, "", fpA); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("Begin with an empty key = %v, want ErrInvalidKey", err)
	}
}

func TestFingerprint(t *testing.T) {
	if Fingerprint([]byte("ab"), []byte("c")) == Fingerprint([]byte("a"), []byte("bc")) {
		t.Fatal("moving bytes between parts kept the fingerprint")
	}
	if Fingerprint([]byte("x")) != Fingerprint([]byte("x")) {
		t.Fatal("fingerprint is not deterministic")
	}
}
