package adapter

import (
	"context"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// One way to open an upstream event stream, for every translator: the
// request goes out under a context of the stream's own (its Close cancels
// it, which aborts the exchange at once, even while a read is blocked), a
// non-2xx answer is classified the protocol's way, and a 2xx answer that is
// one JSON document instead of an event stream (some compatible servers
// answer a stream request so) is refused: as the error it holds, or as a
// malformed answer.

// vendorErrors is how a protocol's vendors report failures: classify reads
// a non-2xx answer; envelope reads a JSON document sent with a 2xx status
// and returns nil when it holds no error.
type vendorErrors struct {
	classify vendorClassifier
	envelope func(status int, body []byte) *Error
}

var (
	openaiErrors = vendorErrors{classify: ClassifyHTTP, envelope: func(status int, body []byte) *Error {
		if !gjson.GetBytes(body, "error").IsObject() {
			return nil
		}
		return classifyErrorEnvelope(status, body)
	}}
	anthropicErrors = vendorErrors{classify: ClassifyAnthropic, envelope: func(status int, body []byte) *Error {
		if gjson.GetBytes(body, "type").Str != "error" {
			return nil
		}
		return ClassifyAnthropic(status, nil, body)
	}}
	geminiErrors = vendorErrors{classify: ClassifyGemini, envelope: func(status int, body []byte) *Error {
		if !strings.Contains(string(body), `"error"`) {
			return nil
		}
		return ClassifyGemini(status, nil, body)
	}}
)

// sendFunc sends one upstream request under ctx and returns the response
// whatever its status.
type sendFunc func(ctx context.Context) (*http.Response, *Error)

// openStream opens an upstream event stream with send. It returns the
// response (2xx, an event stream) and the cancel that aborts it; key is
// the credential that must never appear in an error's message.
func openStream(ctx context.Context, key string, errs vendorErrors, send sendFunc) (*http.Response, context.CancelFunc, *Error) {
	sctx, cancel := context.WithCancel(ctx)
	resp, e := send(sctx)
	if e != nil {
		cancel()
		return nil, nil, scrubKey(e, key)
	}
	if resp.StatusCode/100 != 2 {
		raw, rerr := io.ReadAll(io.LimitReader(resp.Body, vendorMaxErrorBody))
		resp.Body.Close()
		cancel()
		if rerr != nil && ctx.Err() != nil {
			return nil, nil, ClassifyTransport(ctx, rerr)
		}
		return nil, nil, scrubKey(errs.classify(resp.StatusCode, resp.Header, raw), key)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, vendorMaxErrorBody))
		resp.Body.Close()
		cancel()
		if e := errs.envelope(resp.StatusCode, raw); e != nil {
			return nil, nil, scrubKey(e, key)
		}
		return nil, nil, openaiMalformed(resp.StatusCode, "a JSON document instead of an event stream")
	}
	return resp, cancel, nil
}

// scrubKey removes the key from a vendor message should the vendor echo it.
func scrubKey(e *Error, key string) *Error {
	if e != nil && len(key) >= 8 && strings.Contains(e.Message, key) {
		e.Message = strings.ReplaceAll(e.Message, key, "[redacted]")
	}
	return e
}

// closeStream ends a stream opened by openStream (its cancel may be nil in
// tests that build streams over a fixture): the exchange is aborted, then
// the body closed.
func closeStream(cancel context.CancelFunc, body io.Closer) error {
	if cancel != nil {
		cancel()
	}
	return body.Close()
}
