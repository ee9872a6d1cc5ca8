package routing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
)

// ChatOutcome is a served non-streamed chat answer.
type ChatOutcome struct {
	Served Served
	Result *adapter.ChatResult
}

// Chat executes a non-streamed chat request along the plan.
func (e *Executor) Chat(ctx context.Context, p *Plan, call Call, req *adapter.ChatRequest, tr *Trail) (ChatOutcome, *Failure) {
	var res *adapter.ChatResult
	served, finish, fail := e.runQueued(ctx, p, call, tr, func(actx context.Context, _ context.CancelFunc, d *config.RDeployment, t adapter.Target) error {
		r, err := e.Adapters[d.Provider.Protocol].Chat(actx, t, req)
		res = r
		return err
	})
	if fail != nil {
		return ChatOutcome{}, fail
	}
	finish.call(nil)
	return ChatOutcome{Served: served, Result: res}, nil
}

// Committed is a stream that produced its first content chunk: from here on
// it is passed through and never fails over (failover happens only before the first content).
type Committed struct {
	Served Served
	// First holds the chunks read before and including the first content
	// chunk (e.g. a role-only chunk); send them first.
	First []adapter.Chunk
	// Deadline is the committed attempt's deadline (the tier's or the
	// deployment's timeout, within the request's budget): the upstream is
	// cancelled then, and the answer must be on the wire by then too.
	Deadline time.Time
	stream   adapter.Stream
	finish   finishFn
	once     sync.Once
	ended    bool
}

// Next returns the next chunk after First; io.EOF at a clean end.
func (c *Committed) Next() (adapter.Chunk, error) {
	if c.ended {
		return adapter.Chunk{}, io.EOF
	}
	return c.stream.Next()
}

// Usage is the stream's usage so far.
func (c *Committed) Usage() adapter.Usage { return c.stream.Usage() }

// Close ends the stream and records its outcome: err is what ended it (nil
// or io.EOF for a clean end). Safe to call more than once.
func (c *Committed) Close(err error) {
	c.once.Do(func() {
		if errors.Is(err, io.EOF) {
			err = nil
		}
		_ = c.stream.Close()
		c.finish.call(err)
	})
}

// ChatStream opens streams along the plan until one produces its first
// content chunk within the tier's first-chunk timeout. Nothing reaches the
// caller before that, so failing over is invisible to them.
func (e *Executor) ChatStream(ctx context.Context, p *Plan, call Call, req *adapter.ChatRequest, tr *Trail) (*Committed, *Failure) {
	firstChunk := p.Tier.FirstChunk
	var committed *Committed
	served, finish, fail := e.runQueued(ctx, p, call, tr, func(actx context.Context, cancel context.CancelFunc, d *config.RDeployment, t adapter.Target) error {
		var timedOut bool
		var mu sync.Mutex
		var timer *time.Timer
		if firstChunk > 0 {
			timer = time.AfterFunc(firstChunk, func() {
				mu.Lock()
				timedOut = true
				mu.Unlock()
				cancel()
			})
			defer timer.Stop()
		}
		fail := func(s adapter.Stream, err error) error {
			if s != nil {
				_ = s.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			if timedOut {
				return &adapter.Error{Class: adapter.ClassTimeout, Message: "no first chunk within " + firstChunk.String(), Err: err}
			}
			return err
		}
		s, err := e.Adapters[d.Provider.Protocol].ChatStream(actx, t, req)
		if err != nil {
			return fail(nil, err)
		}
		var first []adapter.Chunk
		for {
			ch, err := s.Next()
			if errors.Is(err, io.EOF) {
				// An empty answer that finished cleanly is still an answer.
				if finished(first) {
					dl, _ := actx.Deadline()
					committed = &Committed{First: first, stream: s, ended: true, Deadline: dl}
					return nil
				}
				return fail(s, &adapter.Error{Class: adapter.ClassNetwork, Message: "the stream ended before any content"})
			}
			if err != nil {
				return fail(s, err)
			}
			first = append(first, ch)
			if ch.Content || ch.FinishReason != "" {
				if timer != nil && !timer.Stop() {
					mu.Lock()
					late := timedOut
					mu.Unlock()
					if late {
						return fail(s, context.DeadlineExceeded)
					}
				}
				dl, _ := actx.Deadline()
				committed = &Committed{First: first, stream: s, Deadline: dl}
				return nil
			}
		}
	})
	if fail != nil {
		return nil, fail
	}
	committed.Served, committed.finish = served, finish
	return committed, nil
}

func finished(chunks []adapter.Chunk) bool {
	for _, c := range chunks {
		if c.FinishReason != "" {
			return true
		}
	}
	return false
}

// EmbedRequest is a caller's embedding request after prefixing.
type EmbedRequest struct {
	Inputs     []string
	Dimensions int
	// InputType selects the logic model's prefix: "query", "document" or "".
	InputType string
	// Concurrency bounds the batches in flight per attempt (default 4).
	Concurrency int
}

// EmbedOutcome is a served embedding answer, one vector per input in order.
type EmbedOutcome struct {
	Served  Served
	Vectors [][]float32
	Usage   adapter.Usage
}

// Embed executes an embedding request: each attempt splits the inputs by the
// deployment's batch limit, sends the batches concurrently (bounded), and
// reassembles the vectors by index; a vector whose dimension differs from
// the logic model's fails the attempt, naming the deployment.
func (e *Executor) Embed(ctx context.Context, p *Plan, call Call, req EmbedRequest, tr *Trail) (EmbedOutcome, *Failure) {
	var out EmbedOutcome
	served, finish, fail := e.runQueued(ctx, p, call, tr, func(actx context.Context, _ context.CancelFunc, d *config.RDeployment, t adapter.Target) error {
		inputs := withPrefix(req.Inputs, d.Model, req.InputType)
		vecs, usage, err := embedBatches(actx, e.Adapters[d.Provider.Protocol], t, inputs, req.Dimensions, d.EmbeddingBatchLimit, req.Concurrency)
		if err != nil {
			return err
		}
		if want := wantDim(d.Model, req.Dimensions); want > 0 {
			for i, v := range vecs {
				if len(v) != want {
					dm := &DimensionMismatch{Deployment: d.Label(), Model: d.Model.Code, Got: len(v), Want: want, Input: i}
					return &adapter.Error{Class: adapter.ClassServer, Message: dm.Error(), Err: dm}
				}
			}
		}
		out.Vectors, out.Usage = vecs, usage
		return nil
	})
	if fail != nil {
		return EmbedOutcome{}, fail
	}
	finish.call(nil)
	out.Served = served
	return out, nil
}

func wantDim(m *config.RModel, requested int) int {
	if requested > 0 {
		return requested
	}
	return m.EmbeddingDimension
}

func withPrefix(inputs []string, m *config.RModel, inputType string) []string {
	prefix := ""
	switch inputType {
	case "query":
		prefix = m.QueryPrefix
	case "document":
		prefix = m.DocumentPrefix
	}
	if prefix == "" {
		return inputs
	}
	out := make([]string, len(inputs))
	for i, s := range inputs {
		out[i] = prefix + s
	}
	return out
}

func embedBatches(ctx context.Context, ad adapter.Adapter, t adapter.Target, inputs []string, dims, limit, concurrency int) ([][]float32, adapter.Usage, error) {
	if limit <= 0 || limit > len(inputs) {
		limit = len(inputs)
	}
	if concurrency <= 0 {
		concurrency = 4
	}
	out := make([][]float32, len(inputs))
	var usage adapter.Usage
	usage.Known = true
	var mu sync.Mutex
	var firstErr error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for start := 0; start < len(inputs); start += limit {
		end := min(start+limit, len(inputs))
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(start, end int) {
			defer wg.Done()
			defer func() { <-sem }()
			res, err := ad.Embed(ctx, t, &adapter.EmbedRequest{Inputs: inputs[start:end], Dimensions: dims})
			mu.Lock()
			defer mu.Unlock()
			if err == nil && len(res.Vectors) != end-start {
				err = &adapter.Error{Class: adapter.ClassServer, Message: fmt.Sprintf("asked for %d vectors, got %d", end-start, len(res.Vectors))}
			}
			if err != nil {
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				return
			}
			copy(out[start:end], res.Vectors)
			usage.Prompt += res.Usage.Prompt
			usage.Known = usage.Known && res.Usage.Known
		}(start, end)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, adapter.Usage{}, firstErr
	}
	if ctx.Err() != nil {
		return nil, adapter.Usage{}, ctx.Err()
	}
	return out, usage, nil
}
