package adapter

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"switchyard/routing/wire"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// classifyMaxMessage bounds a message taken from a raw, non-JSON body.
const classifyMaxMessage = 512

// ClassifyHTTP turns a non-2xx answer of an OpenAI-compatible upstream into a
// classified *Error (the failure classification). Message and Code come from the
// {"error":{message,type,param,code}} envelope when there is one (also the
// {"error":"..."} and flat {"message","type","code"} shapes some compatible
// servers use), else from the raw body trimmed to 512 bytes.
func ClassifyHTTP(status int, header http.Header, body []byte) *Error {
	info := classifyBody(body)
	e := &Error{Status: status, Code: info.code(), Message: info.message}
	if e.Message == "" {
		e.Message = classifyRawMessage(body)
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	if e.Message == "" {
		e.Message = "HTTP " + strconv.Itoa(status)
	}
	e.Class = classifyStatus(status, info)
	e.RetryAfter = ParseRetryAfter(header, time.Now())
	if e.RetryAfter == 0 {
		e.RetryAfter = classifyRetryHint(info.message)
	}
	if e.RetryAfter == 0 && e.Class == ClassRateLimited {
		e.RetryAfter = classifyRateLimitReset(header)
	}
	return e
}

// classifyInfo is what an error body said.
type classifyInfo struct {
	message, typ, errCode, param string
	numCode                      int // a numeric "code", often an HTTP status
}

// code is the vendor's code, else its type: "insufficient_quota",
// "context_length_exceeded", "server_error".
func (i classifyInfo) code() string {
	if i.errCode != "" {
		return i.errCode
	}
	return i.typ
}

func classifyBody(body []byte) classifyInfo {
	var info classifyInfo
	if !json.Valid(body) {
		return info
	}
	v := gjson.Parse(wire.View(body))
	if v.IsArray() { // some servers wrap the envelope in an array
		v.ForEach(func(_, first gjson.Result) bool { v = first; return false })
	}
	if !v.IsObject() {
		return info
	}
	var env, detail gjson.Result
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "error":
			env = f
		case "detail":
			detail = f
		}
		return true
	})
	switch {
	case env.IsObject():
		info.read(env)
	case env.Type == gjson.String:
		info.read(v)
		info.message = env.Str
	default:
		info.read(v)
		if info.message == "" && detail.Type == gjson.String {
			info.message = detail.Str
		}
	}
	info.message = classifyClean(info.message, classifyMaxJSONMessage)
	info.typ = strings.Clone(info.typ)
	info.errCode = strings.Clone(info.errCode)
	info.param = strings.Clone(info.param)
	return info
}

func (i *classifyInfo) read(obj gjson.Result) {
	obj.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "message":
			if f.Type == gjson.String {
				i.message = f.Str
			}
		case "type":
			if f.Type == gjson.String {
				i.typ = f.Str
			}
		case "param":
			if f.Type == gjson.String {
				i.param = f.Str
			}
		case "code":
			switch f.Type {
			case gjson.String:
				i.errCode = f.Str
			case gjson.Number:
				i.errCode = f.Raw
				if f.Num == float64(int(f.Num)) {
					i.numCode = int(f.Num)
				}
			}
		}
		return true
	})
}

// classifyMaxJSONMessage bounds a vendor's message from a JSON envelope.
const classifyMaxJSONMessage = 4096

// classifyClean trims s, cuts it to max bytes on a character boundary and
// replaces invalid UTF-8, returning a copy that shares nothing with a body.
func classifyClean(s string, max int) string {
	s = strings.ToValidUTF8(strings.TrimSpace(s), "\uFFFD")
	if len(s) > max {
		s = s[:max]
		// Drop a character the cut split in two.
		for i := 1; i < utf8.UTFMax && len(s) > 0; i++ {
			if r, n := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || n != 1 {
				break
			}
			s = s[:len(s)-1]
		}
	}
	return strings.Clone(s)
}

// classifyRawMessage is a non-JSON (or message-less) body, trimmed and cut
// to classifyMaxMessage bytes on a character boundary.
func classifyRawMessage(body []byte) string {
	// Leading blanks would otherwise count against the bound.
	view := strings.TrimLeft(wire.View(body), " \t\r\n")
	return classifyClean(view[:min(len(view), classifyMaxMessage+utf8.UTFMax)], classifyMaxMessage)
}

// Vendors' ways of saying "the account is out of money". OpenAI answers 429
// with insufficient_quota; DeepSeek 402 "Insufficient Balance"; Moonshot
// exceeded_current_quota_error; DashScope Arrearage; Zhipu code 1113.
var classifyBillingCodes = map[string]bool{
	"insufficient_quota":           true, // OpenAI's billing 429
	"billing_hard_limit_reached":   true, // OpenAI
	"billing_not_active":           true, // OpenAI
	"exceeded_current_quota_error": true, // Moonshot
	"arrearage":                    true, // Alibaba DashScope
	"1113":                         true, // Zhipu: balance exhausted
}

var classifyBillingPhrases = []string{
	"insufficient quota",
	"insufficient_quota",
	"insufficient balance",
	"insufficient account balance",
	"balance is insufficient", // SiliconFlow 403 code 30001
	"insufficient credit",
	"insufficient funds",
	"exceeded your current quota",
	"credit balance is too low",
	"余额不足",
	"欠费",
}

func (i classifyInfo) billing() bool {
	if classifyBillingCodes[strings.ToLower(i.errCode)] || classifyBillingCodes[strings.ToLower(i.typ)] {
		return true
	}
	msg := strings.ToLower(i.message)
	for _, p := range classifyBillingPhrases {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// Codes with which compatible vendors refuse a prompt or a completion on
// content grounds (Azure and Moonshot content_filter, DashScope
// data_inspection_failed).
func (i classifyInfo) contentFilter() bool {
	for _, c := range [2]string{i.errCode, i.typ} {
		switch strings.ToLower(c) {
		case "content_filter", "content_policy_violation", "data_inspection_failed", "content_filtered":
			return true
		}
	}
	return false
}

func (i classifyInfo) auth() bool {
	for _, c := range [2]string{i.errCode, i.typ} {
		switch strings.ToLower(c) {
		case "invalid_api_key", "authentication_error", "permission_error", "invalidapikey", "unauthorized":
			return true
		}
	}
	return false
}

// StatusVendorCancelled is HTTP 499 (google.rpc CANCELLED) from a vendor:
// the vendor gave up on the call itself — our own caller's cancellation
// never gets this far, the executor tells it by its context. It is an
// upstream failure (the next candidate may serve), never a bad request.
const StatusVendorCancelled = 499

// classifyStatus is the failure-classification table for an HTTP status and what its body
// said.
func classifyStatus(status int, info classifyInfo) Class {
	switch {
	case status == StatusVendorCancelled:
		return ClassServer
	case status == http.StatusTooManyRequests:
		if info.billing() {
			return ClassBilling
		}
		return ClassRateLimited
	case status == http.StatusPaymentRequired:
		return ClassBilling
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		if info.billing() {
			return ClassBilling
		}
		return ClassAuth
	case status == http.StatusRequestTimeout:
		return ClassTimeout
	case status >= 500:
		return ClassServer // includes Anthropic-style 529 overloaded
	case status >= 400:
		switch {
		case info.billing():
			return ClassBilling
		case info.auth():
			return ClassAuth
		case info.contentFilter():
			return ClassContentFilter
		}
		return ClassBadRequest // 400, 404, 413, 422 and any other 4xx
	}
	return ClassServer // a 1xx/3xx we did not follow: the upstream misbehaved
}

// classifyInBand classifies an error object an upstream sent inside a 200
// response (a mid-stream error event or a 200 with an error body): by its
// code and type, by a numeric code that is an HTTP status, else server.
func classifyInBand(info classifyInfo) Class {
	if info.numCode >= 400 && info.numCode <= 599 {
		return classifyStatus(info.numCode, info)
	}
	switch {
	case info.billing():
		return ClassBilling
	case info.auth():
		return ClassAuth
	case info.contentFilter():
		return ClassContentFilter
	}
	for _, c := range [2]string{info.errCode, info.typ} {
		switch strings.ToLower(c) {
		case "rate_limit_exceeded", "rate_limit_error", "tokens", "requests", "too_many_requests":
			return ClassRateLimited
		case "context_length_exceeded", "invalid_request_error", "invalid_request", "bad_request", "string_above_max_length":
			return ClassBadRequest
		case "timeout", "request_timeout":
			return ClassTimeout
		}
	}
	return ClassServer
}

// classifyErrorEnvelope classifies a JSON error envelope received with a 2xx
// status.
func classifyErrorEnvelope(status int, body []byte) *Error {
	info := classifyBody(body)
	e := &Error{Class: classifyInBand(info), Status: status, Code: info.code(), Message: info.message}
	if e.Message == "" {
		e.Message = "the upstream reported an error"
	}
	e.RetryAfter = classifyRetryHint(info.message)
	return e
}

// ParseRetryAfter reads how long to wait from response headers:
// retry-after-ms (OpenAI, milliseconds), else Retry-After as seconds or an
// HTTP date relative to now. It returns 0 when none is given or valid.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// classifyRetryHint reads a wait from a message such as OpenAI's "Please try
// again in 644ms." / "in 1.5s" / "in 6m0s", or Azure's "Please retry after 20
// seconds.".
func classifyRetryHint(msg string) time.Duration {
	if msg == "" {
		return 0
	}
	lower := strings.ToLower(msg)
	for _, marker := range [...]string{"try again in ", "retry after ", "retry in "} {
		i := strings.Index(lower, marker)
		if i < 0 {
			continue
		}
		rest := lower[i+len(marker):]
		j := 0
		for j < len(rest) && (rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.' || rest[j] >= 'a' && rest[j] <= 'z') {
			j++
		}
		tok := strings.TrimRight(rest[:j], ".")
		if d, err := time.ParseDuration(tok); err == nil && d > 0 {
			return d
		}
		n, err := strconv.ParseFloat(tok, 64)
		if err != nil || n <= 0 || n > 1e9 {
			continue
		}
		unit := strings.TrimLeft(rest[j:], " ")
		switch {
		case strings.HasPrefix(unit, "ms"), strings.HasPrefix(unit, "milli"):
			return time.Duration(n * float64(time.Millisecond))
		case strings.HasPrefix(unit, "s"):
			return time.Duration(n * float64(time.Second))
		case strings.HasPrefix(unit, "min"):
			return time.Duration(n * float64(time.Minute))
		}
	}
	return 0
}

// classifyRateLimitReset reads OpenAI's x-ratelimit-reset-{requests,tokens}
// ("1s", "6m0s") for the dimension that is exhausted.
func classifyRateLimitReset(h http.Header) time.Duration {
	var d time.Duration
	for _, dim := range [...]string{"requests", "tokens"} {
		if strings.TrimSpace(h.Get("X-Ratelimit-Remaining-"+dim)) != "0" {
			continue
		}
		if r, err := time.ParseDuration(strings.TrimSpace(h.Get("X-Ratelimit-Reset-" + dim))); err == nil && r > d {
			d = r
		}
	}
	return d
}

// ClassifyTransport classifies a failure to get or read a response: the
// attempt's deadline is a timeout, a cancelled context is the caller going
// away (unless the context was cancelled with an *Error as its cause, which
// then decides), anything else (refused, reset, DNS, TLS, EOF) is a network
// failure. An *Error passes through unchanged.
func ClassifyTransport(ctx context.Context, err error) *Error {
	if err == nil {
		return nil
	}
	var ue *Error
	if errors.As(err, &ue) {
		return ue
	}
	if ctx != nil && ctx.Err() != nil {
		cause := context.Cause(ctx)
		if errors.As(cause, &ue) {
			return &Error{Class: ue.Class, Status: ue.Status, Code: ue.Code, Message: ue.Message, RetryAfter: ue.RetryAfter, Err: err}
		}
		if errors.Is(cause, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &Error{Class: ClassTimeout, Code: "timeout", Message: "the attempt deadline passed", Err: err}
		}
		return &Error{Class: ClassCancelled, Code: "client_cancelled", Message: "the request was cancelled", Err: err}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Class: ClassTimeout, Code: "timeout", Message: "the attempt deadline passed", Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Class: ClassCancelled, Code: "client_cancelled", Message: "the request was cancelled", Err: err}
	}
	return &Error{Class: ClassNetwork, Code: classifyNetCode(err), Err: err}
}

// classifyNetCode names the kind of network failure for call logs.
func classifyNetCode(err error) string {
	var (
		dnsErr   *net.DNSError
		certErr  *tls.CertificateVerificationError
		alertErr tls.AlertError
		recErr   tls.RecordHeaderError
		unkAuth  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		invErr   x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &dnsErr):
		return "dns_error"
	case errors.As(err, &certErr), errors.As(err, &alertErr), errors.As(err, &recErr),
		errors.As(err, &unkAuth), errors.As(err, &hostErr), errors.As(err, &invErr):
		return "tls_error"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection_reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection_closed"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "network_timeout"
	}
	return "network_error"
}
