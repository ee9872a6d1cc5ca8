package routing

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"runtime/debug"
	"testing"
	"unsafe"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
)

// depthAdapter is the stub adapter noting where on the stack of the
// request's goroutine the vendor call is made.
type depthAdapter struct {
	stubAdapter
	at *uintptr
}

func (d depthAdapter) ChatStream(ctx context.Context, t adapter.Target, r *adapter.ChatRequest) (adapter.Stream, error) {
	var here byte
	*d.at = uintptr(unsafe.Pointer(&here))
	return d.stubAdapter.ChatStream(ctx, t, r)
}

// growStack uses about n bytes of stack and returns, leaving the
// goroutine's stack grown.
//
//go:noinline
func growStack(n int) byte {
	var pad [1024]byte
	if n <= len(pad) {
		return pad[n%len(pad)]
	}
	return growStack(n-len(pad)) + pad[0]
}

// The journey's frames are on the stack of the request's goroutine for as
// long as the vendor call lasts, a stream's through its first content.
// Under 16 KB in all (with net/http's and the adapter's own), the
// goroutine keeps the stack it starts with; over it, every request's
// stack doubles to 32 KB, and so does the memory a thousand open streams
// hold. The journey's part (Serve down to the adapter) stays within a
// budget that leaves the rest room.
func TestStreamCallStackDepth(t *testing.T) {
	budget := uintptr(6 << 10)
	if raceBuild {
		budget = 7 << 10
	}
	var at uintptr
	rt := world(t, nil)
	j := &Journey{Live: staticLive{rt}, Exec: &Executor{Adapters: map[config.Protocol]adapter.Adapter{config.ProtocolOpenAI: depthAdapter{at: &at}}},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	// No collection may shrink (and so move) the stack between the two
	// addresses, and none must grow it: it is grown first.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	depth := make(chan uintptr)
	go func() {
		growStack(64 << 10)
		var top byte
		a := j.Serve(context.Background(), Request{Endpoint: EndpointChat, Path: "/v1/chat/completions", CallerID: 1,
			Body: bytes.NewReader([]byte(`{"model":"fast","stream":true,"messages":[{"role":"user","content":"hi"}]}`))})
		if a.Status != 200 || a.Stream == nil {
			t.Errorf("status %d: %s", a.Status, a.Body)
		} else {
			for {
				if _, err := a.Stream.Next(); err != nil {
					break
				}
			}
		}
		a.Done(nil)
		depth <- uintptr(unsafe.Pointer(&top)) - at
	}()
	d := <-depth
	t.Logf("the vendor call is made %d bytes below Serve's caller", d)
	if at == 0 || d > budget {
		t.Fatalf("the journey holds %d bytes of stack through the vendor call, over its budget of %d: a large frame (a composite literal, a struct passed by value, an inlined helper) is on the path; move it into a function that returns before the call", d, budget)
	}
}
