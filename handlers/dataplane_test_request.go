package handlers

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"

	"github.com/labstack/echo/v4"

	"switchyard/routing"
)

// testCallerKey marks an in-process console test request with its caller id.
const testCallerKey = "switchyard.test_caller"

// TestRequest runs a request through the data plane as callerID, exactly as
// an API call would go (limits, failover, call log), without an API key.
func (d *DataPlane) TestRequest(ctx context.Context, callerID int64, path string, body []byte) TestResult {
	e := echo.New()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "switchyard-console-test-route")
	rec := httptest.NewRecorder()
	c := e.NewContext(req, rec)
	c.Set(testCallerKey, callerID)
	var err error
	switch path {
	case "/v1/embeddings":
		err = d.Embeddings(c)
	default:
		err = d.ChatCompletions(c)
	}
	if err != nil {
		e.HTTPErrorHandler(err, c)
	}
	res := TestResult{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes(), RequestID: rec.Header().Get("X-Request-Id")}
	if tr := c.Get(trailKey); tr != nil {
		res.Trail = tr.(routing.Trail)
	}
	return res
}

// trailKey exposes a request's attempt trail to in-process callers.
const trailKey = "switchyard.trail"
