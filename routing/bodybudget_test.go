package routing

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/limit"
)

// TestBodyBudgetRefusesWhatDoesNotFit: with a 1,000-byte budget, a request
// declaring 600 bytes holds them until it is done; a second one declaring
// 600 is answered 503 body_bytes_full with Retry-After before its body is
// read, naming the bound; once the first is done the second fits.
func TestBodyBudgetRefusesWhatDoesNotFit(t *testing.T) {
	rt := world(t, nil)
	budget := NewBodyBudget(1000)
	j := &Journey{Live: staticLive{rt}, Exec: &Executor{Adapters: map[config.Protocol]adapter.Adapter{config.ProtocolOpenAI: stubAdapter{}}},
		BodyBytes: budget, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	body := []byte(`{"model":"standard","messages":[{"role":"user","content":"` + string(bytes.Repeat([]byte("x"), 500)) + `"}]}`)
	serve := func() *Answer {
		return j.Serve(context.Background(), Request{Endpoint: EndpointChat, Path: "/v1/chat/completions", CallerID: 1,
			Body: bytes.NewReader(body), BodyLen: int64(len(body))})
	}
	first := serve()
	if first.Status != http.StatusOK || budget.InFlight() != int64(len(body)) {
		t.Fatalf("first: %d, %d bytes in flight, want 200 holding %d", first.Status, budget.InFlight(), len(body))
	}
	second := serve()
	if second.Status != http.StatusServiceUnavailable || second.Header.Get("Retry-After") == "" ||
		!bytes.Contains(second.Body, []byte("body_bytes_full")) || !bytes.Contains(second.Body, []byte("1000 bytes")) {
		t.Fatalf("second: %d %q %s", second.Status, second.Header.Get("Retry-After"), second.Body)
	}
	if second.Refusal == nil || second.Refusal.Limit != limit.KindBodyBytes || second.Refusal.Value != 1000 {
		t.Fatalf("second's refusal: %+v", second.Refusal)
	}
	second.Done(nil)
	first.Done(nil)
	if budget.InFlight() != 0 {
		t.Fatalf("%d bytes still charged after both finished", budget.InFlight())
	}
	third := serve()
	third.Done(nil)
	if third.Status != http.StatusOK || budget.InFlight() != 0 {
		t.Fatalf("third: %d, %d in flight", third.Status, budget.InFlight())
	}
}

// TestBodyBudgetCollectsAfterABurst: when the bytes in flight fall to none
// after a burst of at least BurstCollect, one collection runs; a smaller
// one runs none; a second burst ending soon after waits for the spacing
// and still gets its collection.
func TestBodyBudgetCollectsAfterABurst(t *testing.T) {
	b := NewBodyBudget(4 * BurstCollect)
	collected := make(chan time.Time, 4)
	b.collect = func() { collected <- time.Now() }
	b.every = 200 * time.Millisecond
	burst := func(n int64, parts int) {
		for range parts {
			if !b.take(n / int64(parts)) {
				t.Fatal("refused within capacity")
			}
		}
		for range parts {
			b.release(n / int64(parts))
		}
	}
	expect := func(want bool, within time.Duration) time.Time {
		t.Helper()
		select {
		case at := <-collected:
			if !want {
				t.Fatal("collected after a small burst")
			}
			return at
		case <-time.After(within):
			if want {
				t.Fatal("no collection after a burst")
			}
		}
		return time.Time{}
	}
	burst(BurstCollect/2, 4)
	expect(false, 100*time.Millisecond)
	burst(BurstCollect, 4)
	first := expect(true, time.Second)
	burst(2*BurstCollect, 8)
	if second := expect(true, 2*time.Second); second.Sub(first) < b.every-10*time.Millisecond {
		t.Fatalf("second collection %v after the first, want at least %v", second.Sub(first), b.every)
	}
	if b.InFlight() != 0 {
		t.Fatalf("%d bytes still charged", b.InFlight())
	}
}
