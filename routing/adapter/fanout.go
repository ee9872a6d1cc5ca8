package adapter

import (
	"context"
	"errors"
	"io"
	"sync"
)

// A vendor that answers one choice per call serves n choices by fan-out: n
// concurrent calls of the same request, call i answering choice i. The
// first failure cancels the others and fails the whole request (the
// executor may then fail over, as for a single call).

// fanOut runs do(ctx, i) for i in [0, n) concurrently (directly when n is
// 1); the first error cancels the context of the others. The context ends
// when fanOut returns: what must outlive it (a stream) uses openAll.
func fanOut(ctx context.Context, n int, do func(ctx context.Context, i int) error) {
	if n <= 1 {
		_ = do(ctx, 0)
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := do(cctx, i); err != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
}

// openAll runs open(i) for i in [0, n) concurrently under the caller's
// context, so what they open (streams) lives on after it returns.
func openAll(n int, open func(i int)) {
	if n <= 1 {
		open(0)
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			open(i)
		}()
	}
	wg.Wait()
}

// firstError is the failure that ended a fan-out: the first that is not a
// cancellation the fan-out caused itself, else the first.
func firstError(errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if first == nil {
			first = err
		}
		if c := ClassOf(err); c != ClassCancelled && c != ClassTimeout {
			return err
		}
	}
	return first
}

// sumUsage adds the usages of a fan-out. The sum is known only when every
// part is; cached and reasoning counts likewise.
func sumUsage(us []Usage) Usage {
	if len(us) == 1 {
		return us[0]
	}
	out := Usage{Known: true, CachedKnown: true, ReasoningKnown: true}
	for _, u := range us {
		out.Prompt += u.Prompt
		out.Completion += u.Completion
		out.Cached += u.Cached
		out.CacheCreation += u.CacheCreation
		out.Reasoning += u.Reasoning
		out.Known = out.Known && u.Known
		out.Estimated = out.Estimated || u.Estimated
		out.CachedKnown = out.CachedKnown && u.CachedKnown
		out.ReasoningKnown = out.ReasoningKnown && u.ReasoningKnown
	}
	if !out.Known {
		return Usage{}
	}
	out.CachedKnown = out.CachedKnown && out.Known
	out.ReasoningKnown = out.ReasoningKnown && out.Known
	return out
}

// mergedStream interleaves the streams of a fan-out, whose chunks already
// carry their choice index, in the order they arrive. Each part's own
// usage-only chunk is dropped; the wrapping endStream makes the one usage
// chunk from Usage, the sum. The first failure of any part ends the merged
// stream.
type mergedStream struct {
	parts  []Stream
	items  chan mergedItem
	stop   chan struct{}
	wg     sync.WaitGroup
	live   int
	err    error
	closed sync.Once
}

type mergedItem struct {
	part  int
	chunk Chunk
	err   error
}

func newMergedStream(ctx context.Context, parts []Stream) *mergedStream {
	m := &mergedStream{parts: parts, items: make(chan mergedItem), stop: make(chan struct{}), live: len(parts)}
	for i, p := range parts {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			for {
				c, err := p.Next()
				select {
				case m.items <- mergedItem{part: i, chunk: c, err: err}:
				case <-m.stop:
					return
				case <-ctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}
	return m
}

func (m *mergedStream) Next() (Chunk, error) {
	for m.err == nil {
		var it mergedItem
		select {
		case it = <-m.items:
		case <-m.stop:
			return Chunk{}, &Error{Class: ClassCancelled, Code: "client_cancelled", Message: "the stream was closed"}
		}
		switch {
		case errors.Is(it.err, io.EOF):
			if m.live--; m.live == 0 {
				m.err = io.EOF
			}
		case it.err != nil:
			m.err = it.err
			m.Close()
		case it.chunk.UsageOnly:
		default:
			return it.chunk, nil
		}
	}
	return Chunk{}, m.err
}

// Usage is the sum of the parts' usage, read once every part has stopped.
func (m *mergedStream) Usage() Usage {
	if m.err == nil {
		return Usage{} // parts still running: their usage is theirs to change
	}
	m.Close()
	us := make([]Usage, len(m.parts))
	for i, p := range m.parts {
		us[i] = p.Usage()
	}
	return sumUsage(us)
}

// Close stops every part and waits for their readers.
func (m *mergedStream) Close() error {
	m.closed.Do(func() {
		close(m.stop)
		for _, p := range m.parts {
			_ = p.Close()
		}
		m.wg.Wait()
	})
	return nil
}
