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
