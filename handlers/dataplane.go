package handlers

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing"
)

// DataPlane serves the OpenAI-compatible API: it decodes the HTTP request,
// runs the request journey (routing.Journey) and writes its answer —
// headers, a body or SSE events. Everything else happens in the journey.
type DataPlane struct {
	Journey *routing.Journey
	// Cut, when it ends with cause routing.ErrShuttingDown, cuts every
	// request still in flight: the end of the shutdown grace. The journey
	// then ends streams with an error event and other requests with a 503,
	// and logs each as interrupted. Nil never cuts. Serve the data plane
	// with BaseContext as the http.Server's so that every request's
	// context already ends with Cut; a request served otherwise gets a
	// watch of its own (a context and a callback per request).
	Cut context.Context

	inFlight atomic.Int64
	peak     atomic.Int64 // the most in flight at once since PeakInFlight last read it
	cut      atomic.Int64
}

// cutKey marks the server base context that Cut ends.
type cutKey struct{}

// BaseContext is the http.Server BaseContext that makes every request's
// context descend from Cut, so the cut reaches each request without
// anything per request.
func (d *DataPlane) BaseContext(net.Listener) context.Context {
	if d.Cut == nil {
		return context.Background()
	}
	return context.WithValue(d.Cut, cutKey{}, true)
}

// InFlight is how many data-plane requests are being served right now.
func (d *DataPlane) InFlight() int64 { return d.inFlight.Load() }

// PeakInFlight is the most data-plane requests in flight at once since the
// previous call (at least those in flight now): a sampler sees a burst
// that came and went between two of its samples.
func (d *DataPlane) PeakInFlight() int64 {
	return max(d.peak.Swap(0), d.inFlight.Load())
}

// started counts a request in flight and raises the peak when it is one.
func (d *DataPlane) started() {
	n := d.inFlight.Add(1)
	for {
		p := d.peak.Load()
		if n <= p || d.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// CutCount is how many requests were in flight when they were cut.
func (d *DataPlane) CutCount() int64 { return d.cut.Load() }

// Cutting records that the requests in flight now are about to be cut;
// call it just before ending Cut.
func (d *DataPlane) Cutting() { d.cut.Store(d.inFlight.Load()) }

// ChatCompletions serves POST /v1/chat/completions, streamed or not.
func (d *DataPlane) ChatCompletions(c echo.Context) error {
	return d.serve(c, routing.EndpointChat)
}

// Messages serves POST /v1/messages, Anthropic's Messages API, streamed
// or not.
func (d *DataPlane) Messages(c echo.Context) error {
	return d.serve(c, routing.EndpointMessages)
}

// CountTokens serves POST /v1/messages/count_tokens.
func (d *DataPlane) CountTokens(c echo.Context) error {
	return d.serve(c, routing.EndpointCountTokens)
}

// Responses serves POST /v1/responses, OpenAI's Responses API, streamed or
// not (stateless: nothing is stored).
func (d *DataPlane) Responses(c echo.Context) error {
	return d.serve(c, routing.EndpointResponses)
}

// StoredResponse answers the Responses API's endpoints for stored responses
// (GET or DELETE /v1/responses/{id}, …/cancel, …/input_items): the gateway
// is stateless and keeps none, so there is nothing to retrieve.
func (d *DataPlane) StoredResponse(c echo.Context) error {
	c.Response().Header().Set("x-should-retry", "false")
	return WriteOpenAIError(c, http.StatusNotFound, "stateless_gateway", "this gateway is stateless and stores no responses, so "+
		httpx.Clip(c.Request().Method+" "+c.Request().URL.Path, httpx.ShownLen)+" has nothing to return; keep the response you received, and send the whole conversation in input")
}

// Embeddings serves POST /v1/embeddings.
func (d *DataPlane) Embeddings(c echo.Context) error {
	return d.serve(c, routing.EndpointEmbeddings)
}

// Models serves GET /v1/models: the tiers and logic models this caller may use.
func (d *DataPlane) Models(c echo.Context) error {
	return d.serve(c, routing.EndpointModels)
}

// Model serves GET /v1/models/{id} (the SDKs' models.retrieve).
func (d *DataPlane) Model(c echo.Context) error {
	return d.serve(c, routing.EndpointModel)
}

func (d *DataPlane) serve(c echo.Context, ep routing.Endpoint) error {
	r := c.Request()
	d.started()
	defer d.inFlight.Add(-1)
	ctx := r.Context()
	if d.Cut != nil && ctx.Value(cutKey{}) == nil {
		// Not served under BaseContext: watch Cut for this request.
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(d.Cut, func() { cancel(context.Cause(d.Cut)) })
		defer stop()
	}
	req := routing.Request{
		Endpoint:       ep,
		Path:           r.URL.Path,
		Query:          r.URL.RawQuery,
		ClientAddr:     r.RemoteAddr,
		Authorization:  r.Header.Get("Authorization"),
		APIKey:         apiKey(r.Header),
		Body:           r.Body,
		BodyLen:        r.ContentLength,
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
		RequestTimeout: r.Header.Get("X-Request-Timeout"),
		InputType:      r.Header.Get("X-Input-Type"),
		Header:         r.Header,
		Reply:          c.Response().Header(),
	}
	if ep == routing.EndpointModel {
		req.ModelID = c.Param("id")
		if id, err := url.PathUnescape(req.ModelID); err == nil {
			req.ModelID = id
		}
	}
	return writeAnswer(c.Response(), d.Journey.Serve(ctx, req))
}

// writeAnswer copies the journey's answer onto the wire, then lets the
// journey do its bookkeeping (the caller has its answer first).
//
// A complete answer is flushed before the bookkeeping on purpose: the
// journey's finish settles limits and stores idempotent results in Redis,
// and the caller should not wait for those round trips. The flush costs no
// extra write: the answer carries its Content-Length, so headers and body
// leave in one write and the server has nothing left to send at the
// handler's end (no terminating chunk). A stream is flushed after each
// event the vendor sent since the last, not before: its headers, the
// chunks read before it committed and its first content leave in one
// write. The answer's headers are on w already: the journey set them on
// its map (Request.Reply).
func writeAnswer(w *echo.Response, a *routing.Answer) (err error) {
	defer func() { a.Done(err) }()
	if a.Silent {
		return nil // the client is gone
	}
	if a.Stream == nil && len(a.Body) <= smallAnswer {
		w.WriteHeader(a.Status)
		if _, err = w.Write(a.Body); err != nil {
			return err
		}
		flush(w)
		return nil
	}
	// A stream or a large body may meet a caller that does not read: a
	// write deadline bounds every write of it, and the connection (which
	// net/http closes after a failed write) never serves again with it.
	// (The controller is built on the writer under echo's, whose Flush
	// would swallow the error.)
	rc := http.NewResponseController(w.Writer)
	_ = rc.SetWriteDeadline(a.WriteDeadline())
	w.WriteHeader(a.Status)
	if a.Stream == nil {
		if _, err = w.Write(a.Body); err == nil {
			err = rc.Flush()
		}
	} else {
		err = writeStream(w, rc, a.Stream)
	}
	if err == nil {
		_ = rc.SetWriteDeadline(time.Time{}) // the connection may serve again
	}
	return err
}

// smallAnswer is the largest body written without a write deadline: it
// fits the socket's send buffer, so its write never waits for the caller.
const smallAnswer = 64 << 10

// writeStream sends a stream's events. Events are flushed when the stream
// is about to wait for the vendor, so those the vendor sent together leave
// in one write (one that cannot say so is flushed after each event the
// vendor sent since the last). A flush that failed (the write deadline
// passed, or the caller left) ends it with that error.
func writeStream(w *echo.Response, rc *http.ResponseController, s *routing.Stream) error {
	var flushErr error
	hooked := s.FlushBeforeWait(func() {
		if flushErr == nil {
			flushErr = rc.Flush()
		}
	})
	if hooked {
		defer s.FlushBeforeWait(nil) // the stream outlives the response
	}
	for {
		ev, nerr := s.Next()
		if flushErr != nil {
			return flushErr
		}
		if nerr != nil {
			if hooked {
				return rc.Flush()
			}
			return nil
		}
		if _, err := w.Write(ev); err != nil {
			return err
		}
		if !hooked && !s.Buffered() {
			if err := rc.Flush(); err != nil {
				return err
			}
		}
	}
}

// flush sends what was written; echo's Response.Flush builds a
// ResponseController on every call, which the common writer does not need.
func flush(w *echo.Response) {
	if f, ok := w.Writer.(http.Flusher); ok {
		f.Flush()
		return
	}
	w.Flush()
}

// NotFound answers unknown /v1 paths in OpenAI's error shape.
func (d *DataPlane) NotFound(c echo.Context) error {
	r := c.Request()
	return WriteOpenAIError(c, http.StatusNotFound, "not_found", "unknown endpoint "+httpx.Clip(r.Method+" "+r.URL.Path, httpx.ShownLen)+"; Switchyard serves POST /v1/chat/completions, POST /v1/messages, POST /v1/messages/count_tokens, POST /v1/responses, POST /v1/embeddings, GET /v1/models and GET /v1/models/{id}")
}

// TestRequest runs a request through the journey as callerID, exactly as an
// API call would go (limits, failover, call log), without an API key: the
// console's "Send test request".
func (d *DataPlane) TestRequest(ctx context.Context, callerID int64, path string, body []byte) TestResult {
	ep := routing.EndpointChat
	switch path {
	case "/v1/embeddings":
		ep = routing.EndpointEmbeddings
	case "/v1/messages":
		ep = routing.EndpointMessages
	case "/v1/messages/count_tokens":
		ep = routing.EndpointCountTokens
	case "/v1/responses":
		ep = routing.EndpointResponses
	}
	a := d.Journey.Serve(ctx, routing.Request{Endpoint: ep, Path: path, CallerID: callerID, Body: bytes.NewReader(body)})
	res := TestResult{Status: a.Status, Header: a.Header, Body: a.Body, RequestID: a.RequestID}
	if a.Stream != nil {
		var buf bytes.Buffer
		for {
			ev, err := a.Stream.Next()
			if err != nil {
				break
			}
			buf.Write(ev)
		}
		res.Body = buf.Bytes()
	}
	a.Done(nil)
	res.Trail = *a.Trail
	return res
}

// apiKey is the caller key sent as x-api-key (Anthropic's clients) or
// api-key (Azure-style clients), for callers that send no bearer token.
func apiKey(h http.Header) string {
	if k := h.Get("X-Api-Key"); k != "" {
		return k
	}
	return h.Get("Api-Key")
}
