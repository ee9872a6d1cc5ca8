package handlers

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/routing"
	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/store/calllog"
	"switchyard/store/redis/limits"
)

// ChatCompletions serves POST /v1/chat/completions, streamed or not,
// following the request journey of SPEC §5: authenticate, idempotency,
// resolve the route, limits, execute with failover, account, log.
func (d *DataPlane) ChatCompletions(c echo.Context) error {
	x := d.begin(c)
	defer x.finish()
	if err := x.authenticate(); err != nil || x.caller == nil || !x.caller.Enabled {
		return err
	}
	body, err := x.readBody()
	if body == nil {
		return err
	}
	req, err := adapter.ParseChatRequest(body)
	if err != nil {
		return x.invalid(err)
	}
	x.rec.RequestedModel, x.rec.Stream = req.Model, req.Stream
	deadline, err := x.deadline()
	if err != nil {
		return x.invalid(&adapter.RequestError{Param: "X-Request-Timeout", Message: err.Error()})
	}
	if done, err := x.idempotent(c.Request().URL.Path, body); done {
		return err
	}

	p, done, err := x.route(req.Model, req.WantsReasoning(), routing.Needs{Kind: config.KindChat, Thinking: req.WantsReasoning(), Vision: req.NeedsVision(), Tools: req.NeedsTools()})
	if done {
		return err
	}
	defer p.Release()
	estimate := d.estimateTokens(x.tier, len(body), req.MaxTokens)
	release, dec, done, err := x.gate(estimate)
	if done {
		return err
	}
	defer release()
	call := routing.Call{Batch: x.caller.PriorityClass == config.ClassBatch, Deadline: deadline}
	if req.Stream {
		return x.stream(p, call, req, dec, estimate)
	}
	out, fail := d.Exec.Chat(c.Request().Context(), p, call, req, &x.trail)
	if fail != nil {
		x.settle(dec, 0, 0) // a failed call returns its token reservation; it still counted as a request
		return x.failed(fail)
	}
	x.rec.Status = calllog.StatusOK
	x.account(dec, out.Served, out.Result.Usage, estimate)
	x.routeHeaders(out.Served)
	return x.writeBody(http.StatusOK, echo.MIMEApplicationJSON, out.Result.Body)
}

// stream serves a streamed chat: nothing is sent until the first content
// chunk; afterwards chunks are passed through with a flush per event.
func (x *exchange) stream(p *routing.Plan, call routing.Call, req *adapter.ChatRequest, dec limits.Decision, estimate int64) error {
	ctx := x.c.Request().Context()
	committed, fail := x.d.Exec.ChatStream(ctx, p, call, req, &x.trail)
	if fail != nil {
		x.settle(dec, 0, 0)
		return x.failed(fail)
	}
	x.routeHeaders(committed.Served)
	w := x.c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	x.rec.HTTPStatus = http.StatusOK
	if x.capture != nil {
		x.capture.status, x.capture.ctype, x.capture.stream = http.StatusOK, "text/event-stream", true
	}
	var buf []byte // one event at a time, reused for the whole stream
	send := func(data []byte) error {
		buf = append(buf[:0], "data: "...)
		buf = append(buf, data...)
		buf = append(buf, '\n', '\n')
		if x.capture != nil {
			x.capture.buf = append(x.capture.buf, buf...)
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		w.Flush()
		return nil
	}
	var endErr error
	closed := false
	defer func() {
		// A panic while passing chunks through must still release the
		// deployment's slot and breaker permit.
		if !closed {
			committed.Close(errors.New("stream aborted"))
		}
	}()
	write := func(ch adapter.Chunk) bool {
		if ch.UsageOnly && !req.IncludeUsage {
			return true
		}
		if err := send(ch.Data); err != nil {
			endErr = err
			return false
		}
		return true
	}
	first := true
	for _, ch := range committed.First {
		if !write(ch) {
			break
		}
		if ch.Content && first {
			ttfc := int(time.Since(x.start).Milliseconds())
			x.rec.TTFCMS, first = &ttfc, false
		}
	}
	for endErr == nil {
		ch, err := committed.Next()
		if err != nil {
			endErr = err
			break
		}
		if !write(ch) {
			break
		}
	}
	committed.Close(endErr)
	closed = true
	usage := committed.Usage()
	switch {
	case errors.Is(endErr, io.EOF):
		_ = send([]byte("[DONE]"))
		x.rec.Status = calllog.StatusOK
	case ctx.Err() != nil:
		// The client went away: the upstream request was cancelled with
		// the context; record what was used so far.
		x.rec.Status, x.rec.ErrorClass, x.rec.ErrorCode, x.rec.HTTPStatus = calllog.StatusClientCancelled, string(adapter.ClassCancelled), "client_cancelled", 499
	default:
		// An upstream failure after the first chunk: never a clean [DONE].
		class := adapter.ClassOf(endErr)
		msg := "the upstream stream failed after it started: " + endErr.Error()
		code := class.Policy().Code
		if class == adapter.ClassContentFilter {
			msg = "the vendor's content filter stopped the answer"
		}
		b, _ := json.Marshal(map[string]OpenAIError{"error": {Message: msg, Type: errorType(class.Policy().Status), Code: code}})
		_ = send(b)
		x.rec.Status, x.rec.ErrorClass, x.rec.ErrorCode = calllog.StatusUpstreamError, string(class), code
		x.trail.Attempts = append(x.trail.Attempts, routing.Attempt{Model: committed.Served.Deployment.Model.Code, DeploymentID: committed.Served.Deployment.ID,
			Deployment: committed.Served.Deployment.Label(), Provider: committed.Served.Deployment.Provider.Name, Key: committed.Served.KeyFingerprint,
			Outcome: "failed", Class: string(class), Reason: "after the first chunk: " + endErr.Error(), LatencyMS: time.Since(x.start).Milliseconds()})
	}
	x.account(dec, committed.Served, usage, estimate)
	return nil
}

// Models serves GET /v1/models: the tiers and logic models this caller may use.
func (d *DataPlane) Models(c echo.Context) error {
	x := d.begin(c)
	defer x.finish() // a listing is a data-plane request too: one row, no model fields
	if err := x.authenticate(); err != nil || x.caller == nil || !x.caller.Enabled {
		return err
	}
	x.rec.Status, x.rec.HTTPStatus = calllog.StatusOK, http.StatusOK
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
		Kind    string `json:"switchyard_kind"`
	}
	var data []model
	seen := map[string]bool{}
	for _, kind := range []config.Kind{config.KindChat, config.KindEmbedding} {
		for _, id := range routing.Available(x.caller, kind) {
			if seen[id] {
				continue
			}
			seen[id] = true
			k := string(kind)
			if config.ValidTier(id) {
				k = "tier"
			}
			data = append(data, model{ID: id, Object: "model", OwnedBy: "switchyard", Kind: k})
		}
	}
	c.Response().Header().Set("X-Switchyard-Config-Version", strconv.FormatInt(x.rt.Version, 10))
	return c.JSON(http.StatusOK, map[string]any{"object": "list", "data": data})
}

// NotFound answers unknown /v1 paths in OpenAI's error shape.
func (d *DataPlane) NotFound(c echo.Context) error {
	return WriteOpenAIError(c, http.StatusNotFound, "not_found", "unknown endpoint "+c.Request().Method+" "+c.Request().URL.Path+"; Switchyard serves /v1/chat/completions, /v1/embeddings and /v1/models")
}
