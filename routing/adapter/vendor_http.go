package adapter

// Transport plumbing shared by the two translating adapters (Anthropic and
// Gemini): sending one upstream call, turning a non-2xx answer into a
// classified *Error, and classifying transport and mid-stream read failures.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// vendorMaxErrorBody bounds how much of an upstream error body is read.
const vendorMaxErrorBody = 1 << 20

// vendorClassifier turns an upstream non-2xx answer into a classified error.
type vendorClassifier func(status int, h http.Header, body []byte) *Error

// vendorBaseURL trims a trailing slash and any of the given path suffixes
// (e.g. "/v1") that operators habitually paste into a base URL.
func vendorBaseURL(base string, suffixes ...string) string {
	base = strings.TrimRight(strings.TrimSpace(base), "/")
	for _, s := range suffixes {
		if strings.HasSuffix(base, s) {
			base = strings.TrimRight(strings.TrimSuffix(base, s), "/")
			break
		}
	}
	return base
}

// vendorDo sends one upstream request and returns the response when its status
// is 2xx. Any other status is read (bounded), the body closed and the failure
// classified by classify; transport failures are classified by the context.
func vendorDo(ctx context.Context, t Target, method, url string, hdr http.Header, body []byte, classify vendorClassifier) (*http.Response, error) {
	resp, e := vendorSend(ctx, t, method, url, hdr, body)
	if e != nil {
		return nil, e
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	errBody, err := io.ReadAll(io.LimitReader(resp.Body, vendorMaxErrorBody))
	if err != nil && ctx.Err() != nil {
		return nil, ClassifyTransport(ctx, err)
	}
	return nil, classify(resp.StatusCode, resp.Header, errBody)
}

// vendorSend sends one upstream request and returns the response whatever its
// status: the provider's headers (never a reserved name), then hdr, the
// protocol's own, which win.
func vendorSend(ctx context.Context, t Target, method, url string, hdr http.Header, body []byte) (*http.Response, *Error) {
	req, sent, err := newUpstreamRequest(ctx, method, url, body)
	if err != nil {
		return nil, &Error{Class: ClassBadRequest, Message: "cannot build upstream request", Err: err}
	}
	t.addHeaders(req.Header)
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := sent.do(t.Client, req)
	if err != nil {
		return nil, ClassifyTransport(ctx, err)
	}
	return resp, nil
}

// vendorReadBody reads a successful response body, classifying a failure to
// read it (deadline, cancellation, reset connection).
func vendorReadBody(ctx context.Context, resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, ClassifyTransport(ctx, err)
	}
	return b, nil
}

// vendorStreamEnded is the failure of a stream whose body ended before the
// vendor said it was finished.
func vendorStreamEnded() *Error {
	return &Error{Class: ClassNetwork, Message: "stream ended early", Err: io.ErrUnexpectedEOF}
}

// vendorCompletionID returns a fresh chat.completion id for vendors whose
// responses carry none.
func vendorCompletionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "chatcmpl-" + hex.EncodeToString(b[:])
}

// vendorMessage shortens an upstream body for an error message when the
// vendor sent no structured error.
func vendorMessage(status int, body []byte) string {
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		n := 300
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	if s == "" {
		return fmt.Sprintf("upstream answered HTTP %d", status)
	}
	return s
}
