package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

func classifyFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/openai/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestClassifyHTTP is the failure-classification table, row by row,
// driven by real upstream error bodies where we have them.
func TestClassifyHTTP(t *testing.T) {
	type row struct {
		nextKey, nextCandidate, breaker bool
		key                             KeyAction
	}
	// The classification table, written out independently of adapter.go's copy.
	spec := map[Class]row{
		ClassRateLimited:   {true, true, false, KeyCool},
		ClassAuth:          {true, true, false, KeyQuarantine},
		ClassBilling:       {true, true, false, KeyQuarantine},
		ClassServer:        {false, true, true, KeyNone},
		ClassTimeout:       {false, true, true, KeyNone},
		ClassNetwork:       {false, true, true, KeyNone},
		ClassContentFilter: {false, false, false, KeyNone},
		ClassBadRequest:    {false, false, false, KeyNone},
	}
	h := func(kv ...string) http.Header {
		hd := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			hd.Set(kv[i], kv[i+1])
		}
		return hd
	}
	for _, tc := range []struct {
		name       string
		status     int
		header     http.Header
		body       []byte
		class      Class
		code       string
		msg        string // contained in Message
		retryAfter time.Duration
	}{
		{"401 invalid api key (real)", 401, nil, classifyFixture(t, "error-401-invalid-api-key.json"),
			ClassAuth, "invalid_api_key", "Incorrect API key provided", 0},
		{"403 forbidden", 403, nil, classifyFixture(t, "constructed-error-403-forbidden.json"),
			ClassAuth, "invalid_request_error", "not allowed to sample", 0},
		{"429 tokens, 2023 shape (real)", 429, nil, classifyFixture(t, "error-429-tokens-2023.json"),
			ClassRateLimited, "tokens", "Rate limit reached", time.Millisecond},
		{"429 rate_limit_exceeded, wait in the body", 429, nil, classifyFixture(t, "constructed-error-429-rate-limit-644ms.json"),
			ClassRateLimited, "rate_limit_exceeded", "tokens per min", 644 * time.Millisecond},
		{"429 Retry-After header beats the body", 429, h("Retry-After", "20"), classifyFixture(t, "constructed-error-429-rate-limit-644ms.json"),
			ClassRateLimited, "rate_limit_exceeded", "", 20 * time.Second},
		{"429 retry-after-ms header", 429, h("Retry-After", "2", "retry-after-ms", "1500"), nil,
			ClassRateLimited, "", "Too Many Requests", 1500 * time.Millisecond},
		{"429 reset of the exhausted dimension", 429,
			h("x-ratelimit-remaining-requests", "10", "x-ratelimit-reset-requests", "1s", "x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "6m0s"),
			[]byte(`{"error":{"message":"slow down","type":"requests","param":null,"code":null}}`),
			ClassRateLimited, "requests", "slow down", 6 * time.Minute},
		{"429 insufficient_quota is billing", 429, nil, classifyFixture(t, "constructed-error-429-insufficient-quota.json"),
			ClassBilling, "insufficient_quota", "exceeded your current quota", 0},
		{"402 insufficient balance", 402, nil, classifyFixture(t, "constructed-error-402-insufficient-balance.json"),
			ClassBilling, "invalid_request_error", "Insufficient Balance", 0},
		{"402 without a body", 402, nil, nil, ClassBilling, "", "Payment Required", 0},
		{"400 saying arrearage (DashScope)", 400, nil, []byte(`{"error":{"message":"Access denied, please make sure your account is in good standing.","type":"Arrearage","code":"Arrearage"}}`),
			ClassBilling, "Arrearage", "good standing", 0},
		{"403 saying insufficient balance", 403, nil, []byte(`{"error":{"message":"Sorry, your account balance is insufficient","code":30001}}`),
			ClassBilling, "30001", "insufficient", 0},
		{"403 insufficient credit", 403, nil, []byte(`{"error":{"message":"Insufficient credits: add more to continue"}}`),
			ClassBilling, "", "Insufficient credits", 0},
		{"500 server error (real)", 500, nil, classifyFixture(t, "error-500-server-error.json"),
			ClassServer, "server_error", "The server had an error", 0},
		{"502 HTML page", 502, nil, classifyFixture(t, "constructed-error-502-html.txt"),
			ClassServer, "", "<html>", 0},
		{"503 with Retry-After", 503, h("Retry-After", "3"), []byte(`{"error":{"message":"overloaded","type":"server_error"}}`),
			ClassServer, "server_error", "overloaded", 3 * time.Second},
		{"529 overloaded", 529, nil, classifyFixture(t, "constructed-error-529-overloaded.json"),
			ClassServer, "server_error", "overloaded", 0},
		{"400 context length exceeded (real)", 400, nil, classifyFixture(t, "error-400-context-length.json"),
			ClassBadRequest, "context_length_exceeded", "maximum context length is 4097 tokens", 0},
		{"404 unknown model", 404, nil, []byte(`{"error":{"message":"The model 'gpt-9' does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`),
			ClassBadRequest, "model_not_found", "does not exist", 0},
		{"413 too large", 413, nil, []byte("request entity too large"), ClassBadRequest, "", "request entity too large", 0},
		{"422 vLLM flat shape, numeric code", 422, nil, []byte(`{"object":"error","message":"max_tokens must be at least 1","type":"BadRequestError","param":null,"code":422}`),
			ClassBadRequest, "422", "max_tokens must be at least 1", 0},
		{"422 FastAPI detail", 422, nil, []byte(`{"detail":"field required"}`), ClassBadRequest, "", "field required", 0},
		{"400 Azure content filter", 400, nil, []byte(`{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400}}`),
			ClassContentFilter, "content_filter", "content management policy", 0},
		{"400 invalid api key", 400, nil, []byte(`{"error":{"message":"bad key","code":"invalid_api_key"}}`), ClassAuth, "invalid_api_key", "bad key", 0},
		{"408 timeout", 408, nil, nil, ClassTimeout, "", "Request Timeout", 0},
		{"409 unknown 4xx", 409, nil, []byte(`{"error":"conflict"}`), ClassBadRequest, "", "conflict", 0},
		{"418 unknown 4xx", 418, nil, nil, ClassBadRequest, "", "I'm a teapot", 0},
		{"302 unfollowed redirect", 302, nil, nil, ClassServer, "", "Found", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ClassifyHTTP(tc.status, tc.header, tc.body)
			if e.Class != tc.class {
				t.Fatalf("class %q, want %q (%v)", e.Class, tc.class, e)
			}
			if e.Status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("status %d code %q message %q; want %d %q containing %q", e.Status, e.Code, e.Message, tc.status, tc.code, tc.msg)
			}
			if e.RetryAfter != tc.retryAfter {
				t.Errorf("RetryAfter %v, want %v", e.RetryAfter, tc.retryAfter)
			}
			if ClassOf(fmt.Errorf("attempt: %w", e)) != tc.class {
				t.Errorf("ClassOf does not see %q through wrapping", tc.class)
			}
			p, want := e.Class.Policy(), spec[tc.class]
			got := row{p.NextKey, p.NextCandidate, p.Breaker, p.Key}
			if got != want {
				t.Errorf("policy %+v, the classification table says %+v", got, want)
			}
		})
	}
}

func TestClassifyHTTPRawMessageIsBounded(t *testing.T) {
	body := []byte(strings.Repeat("é", 600)) // 1200 bytes, a cut may land mid-character
	e := ClassifyHTTP(502, nil, body)
	if len(e.Message) > classifyMaxMessage || !utf8.ValidString(e.Message) || !strings.HasPrefix(e.Message, "éé") {
		t.Errorf("message of %d bytes, valid UTF-8 %v", len(e.Message), utf8.ValidString(e.Message))
	}
	// Found by FuzzClassifyHTTP: invalid bytes replaced after the cut grew
	// the message past its bound.
	e = ClassifyHTTP(391, nil, []byte("0000000\x8200000000\xa2"+strings.Repeat("F", 600)))
	if len(e.Message) > classifyMaxMessage || !utf8.ValidString(e.Message) || !strings.HasPrefix(e.Message, "0000000\uFFFD") {
		t.Errorf("message of %d bytes: %.40q", len(e.Message), e.Message)
	}
	e = ClassifyHTTP(500, nil, []byte("  \n upstream exploded \n"))
	if e.Message != "upstream exploded" {
		t.Errorf("message %q", e.Message)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		kv   []string
		want time.Duration
	}{
		{"none", nil, 0},
		{"seconds", []string{"Retry-After", "7"}, 7 * time.Second},
		{"fractional seconds", []string{"Retry-After", "0.5"}, 500 * time.Millisecond},
		{"HTTP date", []string{"Retry-After", "Sun, 01 Mar 2026 12:00:30 GMT"}, 30 * time.Second},
		{"HTTP date in the past", []string{"Retry-After", "Sun, 01 Mar 2026 11:00:00 GMT"}, 0},
		{"negative", []string{"Retry-After", "-3"}, 0},
		{"garbage", []string{"Retry-After", "soon"}, 0},
		{"ms wins", []string{"Retry-After", "9", "Retry-After-Ms", "250"}, 250 * time.Millisecond},
		{"bad ms falls back", []string{"Retry-After", "9", "Retry-After-Ms", "x"}, 9 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for i := 0; i < len(tc.kv); i += 2 {
				h.Set(tc.kv[i], tc.kv[i+1])
			}
			if got := ParseRetryAfter(h, now); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if ParseRetryAfter(nil, now) != 0 {
		t.Error("nil header")
	}
}

func TestClassifyRetryHint(t *testing.T) {
	for msg, want := range map[string]time.Duration{
		"Please try again in 644ms.":                         644 * time.Millisecond,
		"Please try again in 1.5s. Visit ...":                1500 * time.Millisecond,
		"Please try again in 20s.":                           20 * time.Second,
		"Please try again in 6m0s.":                          6 * time.Minute,
		"Please retry after 20 seconds.":                     20 * time.Second,
		"Please retry after 1 second":                        time.Second,
		"Rate limited. Please try again later.":              0,
		"Please try again in a few minutes":                  0,
		"":                                                   0,
		"PLEASE TRY AGAIN IN 2S":                             2 * time.Second,
		"You can retry in 300 milliseconds":                  300 * time.Millisecond,
		"Please try again in 99999999999999999999999999999s": 0,
	} {
		if got := classifyRetryHint(msg); got != want {
			t.Errorf("%q: got %v, want %v", msg, got, want)
		}
	}
}

func TestClassifyInBand(t *testing.T) {
	for _, tc := range []struct {
		body  string
		class Class
	}{
		{`{"error":{"message":"upstream died","type":"server_error"}}`, ClassServer},
		{`{"error":{"message":"?"}}`, ClassServer},
		{`{"error":{"message":"slow","type":"tokens","code":"rate_limit_exceeded"}}`, ClassRateLimited},
		{`{"error":{"message":"no money","type":"insufficient_quota"}}`, ClassBilling},
		{`{"error":{"message":"too long","code":"context_length_exceeded"}}`, ClassBadRequest},
		{`{"error":{"message":"filtered","code":"content_filter"}}`, ClassContentFilter},
		{`{"error":{"message":"busy","code":503}}`, ClassServer},
		{`{"error":{"message":"limit","code":429}}`, ClassRateLimited},
		{`{"error":"plain string"}`, ClassServer},
	} {
		e := classifyErrorEnvelope(200, []byte(tc.body))
		if e.Class != tc.class || e.Status != 200 || e.Message == "" {
			t.Errorf("%s: %+v, want class %q", tc.body, e, tc.class)
		}
	}
}

func TestClassifyTransport(t *testing.T) {
	live := context.Background()
	expired, cancel := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancel()
	cancelled, cancel2 := context.WithCancel(live)
	cancel2()
	firstChunk, cancel3 := context.WithCancelCause(live)
	cancel3(&Error{Class: ClassTimeout, Code: "first_chunk_timeout", Message: "no first chunk within 5s"})

	// A real refused connection: listen, note the port, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, refused := http.Get("http://" + addr + "/")

	// A real TLS failure: the client does not trust httptest's certificate.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	_, tlsErr := (&http.Client{}).Get(srv.URL)

	prior := &Error{Class: ClassAuth, Message: "kept"}
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		err   error
		class Class
		code  string
	}{
		{"deadline", expired, fmt.Errorf("read: %w", context.DeadlineExceeded), ClassTimeout, "timeout"},
		{"deadline, transport says something else", expired, errors.New("use of closed network connection"), ClassTimeout, "timeout"},
		{"cancelled", cancelled, context.Canceled, ClassCancelled, "client_cancelled"},
		{"cancelled with an *Error cause", firstChunk, context.Canceled, ClassTimeout, "first_chunk_timeout"},
		{"deadline error, live context", live, context.DeadlineExceeded, ClassTimeout, "timeout"},
		{"refused", live, refused, ClassNetwork, "connection_refused"},
		{"TLS", live, tlsErr, ClassNetwork, "tls_error"},
		{"DNS", live, &net.DNSError{Err: "no such host", Name: "api.invalid", IsNotFound: true}, ClassNetwork, "dns_error"},
		{"reset", live, &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, ClassNetwork, "connection_reset"},
		{"EOF", live, io.ErrUnexpectedEOF, ClassNetwork, "connection_closed"},
		{"other", live, errors.New("boom"), ClassNetwork, "network_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("the setup produced no error")
			}
			e := ClassifyTransport(tc.ctx, tc.err)
			if e.Class != tc.class || e.Code != tc.code {
				t.Errorf("class %q code %q, want %q %q (%v)", e.Class, e.Code, tc.class, tc.code, tc.err)
			}
			if !errors.Is(e, tc.err) {
				t.Error("the transport error is not kept in Err")
			}
			if e.Error() == "" {
				t.Error("empty Error()")
			}
		})
	}
	if got := ClassifyTransport(live, fmt.Errorf("wrapped: %w", prior)); got != prior {
		t.Errorf("an *Error must pass through unchanged, got %v", got)
	}
	if ClassifyTransport(live, nil) != nil {
		t.Error("nil error")
	}
}
