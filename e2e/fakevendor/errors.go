package fakevendor

import (
	"encoding/json"
	"net/http"
	"strconv"
)

type errKind int

const (
	errStatus   errKind = iota // an injected status: the protocol's body for it
	errNoKey                   // no API key at all
	errBadKey                  // a key starting with "bad"
	errBilling                 // a key starting with "broke"
	errInvalid                 // a malformed request (400 with msg)
	errNotFound                // a model not in Options.Models
	errTooLarge                // body above Options.MaxBodyBytes
)

type apiErr struct {
	kind   errKind
	status int
	msg    string
	// param and code, when set, fill OpenAI's error.param and error.code
	// of an errInvalid answer.
	param, code string
}

// fail answers with the protocol's error for e.
func (c *call) fail(e apiErr) {
	var status int
	var body []byte
	switch {
	case c.vertex && e.kind == errStatus:
		status, body = geminiError(e, c) // Vertex AI's own google.rpc error
	case c.proto == protoAnthropic:
		status, body = anthropicError(e, c)
	case c.proto == protoGemini:
		status, body = geminiError(e, c)
	default:
		status, body = openaiError(e, c)
	}
	h := c.w.Header()
	if e.kind == errStatus && c.fault.RetryAfter > 0 {
		h.Set("Retry-After", retryAfterSeconds(c.fault.RetryAfter))
	}
	switch c.proto {
	case protoOpenAI:
		h.Set("X-Request-Id", "req_"+c.requestID())
	case protoAnthropic:
		h.Set("Request-Id", "req_"+c.requestID())
		h.Set("X-Should-Retry", strconv.FormatBool(status == 408 || status == 409 || status == 429 || status >= 500))
	}
	c.writeJSON(status, body)
}

type openaiErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func strp(s string) *string { return &s }

func openaiError(e apiErr, c *call) (int, []byte) {
	o := openaiErrorObject{Type: "invalid_request_error"}
	status := e.status
	switch e.kind {
	case errNoKey:
		status = http.StatusUnauthorized
		o.Message = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."
	case errBadKey:
		status = http.StatusUnauthorized
		o.Message = "Incorrect API key provided: " + maskKey(c.key) + ". You can find your API key at https://platform.openai.com/account/api-keys."
		o.Code = strp("invalid_api_key")
	case errBilling:
		status = http.StatusTooManyRequests
		o.Message, o.Type, o.Code = quotaMessage, "insufficient_quota", strp("insufficient_quota")
	case errInvalid:
		o.Message = e.msg
		if e.param != "" {
			o.Param = strp(e.param)
		}
		if e.code != "" {
			o.Code = strp(e.code)
		}
	case errNotFound:
		o.Message = "The model `" + c.model + "` does not exist or you do not have access to it."
		o.Code = strp("model_not_found")
	case errTooLarge:
		o.Message = "Request body too large."
	default:
		switch status {
		case 401:
			o.Message = "Incorrect API key provided: " + maskKey(c.key) + ". You can find your API key at https://platform.openai.com/account/api-keys."
			o.Code = strp("invalid_api_key")
		case 402:
			o.Message, o.Type, o.Code = quotaMessage, "insufficient_quota", strp("insufficient_quota")
		case 403:
			o.Message, o.Type, o.Code = "Country, region, or territory not supported", "request_forbidden", strp("unsupported_country_region_territory")
		case 404:
			o.Message = "The model `" + c.model + "` does not exist or you do not have access to it."
			o.Code = strp("model_not_found")
		case 429:
			wait := "20s"
			if c.fault.RetryAfter > 0 {
				wait = c.fault.RetryAfter.String()
			}
			o.Message = "Rate limit reached for " + c.model + " in organization org-fake on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in " + wait + ". Visit https://platform.openai.com/account/rate-limits to learn more."
			o.Type, o.Code = "requests", strp("rate_limit_exceeded")
		case 500:
			o.Message, o.Type = "The server had an error while processing your request. Sorry about that!", "server_error"
		case 503:
			o.Message, o.Type = "The engine is currently overloaded, please try again later", "server_error"
		default:
			o.Message = http.StatusText(status)
			if status >= 500 {
				o.Type = "server_error"
			}
			if o.Message == "" {
				o.Message = "Error " + strconv.Itoa(status)
			}
		}
	}
	if e.kind == errStatus {
		if e.msg != "" {
			o.Message = e.msg
		}
		if c.fault.ErrorCode != "" {
			o.Code = strp(c.fault.ErrorCode)
		}
	}
	b, _ := json.Marshal(struct {
		Error openaiErrorObject `json:"error"`
	}{o})
	return status, b
}

const quotaMessage = "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."

// maskKey shows a key the way OpenAI does in its 401 message.
func maskKey(k string) string {
	if len(k) <= 8 {
		return "****"
	}
	return k[:3] + "*****" + k[len(k)-4:]
}

// openaiStreamError is the in-stream error event of an OpenAI stream.
const openaiStreamError = `data: {"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}` + "\n\n"

// openaiStreamErrorFor is the in-stream error event for f: the usual one,
// or one with f's ErrorMessage and ErrorCode.
func openaiStreamErrorFor(f Fault) []byte {
	if f.ErrorMessage == "" && f.ErrorCode == "" {
		return []byte(openaiStreamError)
	}
	o := openaiErrorObject{Message: f.ErrorMessage, Type: "server_error"}
	if o.Message == "" {
		o.Message = "The server had an error while processing your request. Sorry about that!"
	}
	if f.ErrorCode != "" {
		o.Code = strp(f.ErrorCode)
	}
	b, _ := json.Marshal(struct {
		Error openaiErrorObject `json:"error"`
	}{o})
	return append(append([]byte("data: "), b...), "\n\n"...)
}

// anthropicErrorTypes follows anthropic-sdk-go's shared ErrorType list.
var anthropicErrorTypes = map[int]string{
	400: "invalid_request_error",
	401: "authentication_error",
	402: "billing_error",
	403: "permission_error",
	404: "not_found_error",
	413: "request_too_large",
	429: "rate_limit_error",
	500: "api_error",
	504: "timeout_error",
	529: "overloaded_error",
}

var anthropicMessages = map[string]string{
	"invalid_request_error": "Invalid request",
	"authentication_error":  "invalid x-api-key",
	"billing_error":         "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
	"permission_error":      "Your API key does not have permission to use the specified resource.",
	"not_found_error":       "Not found",
	"request_too_large":     "Request exceeds the maximum allowed number of bytes.",
	"rate_limit_error":      "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.",
	"api_error":             "Internal server error",
	"timeout_error":         "Request timed out",
	"overloaded_error":      "Overloaded",
}

func anthropicError(e apiErr, c *call) (int, []byte) {
	status, msg := e.status, e.msg
	switch e.kind {
	case errNoKey:
		status, msg = http.StatusUnauthorized, "x-api-key header is required"
	case errBadKey:
		status = http.StatusUnauthorized
	case errBilling:
		status = http.StatusPaymentRequired
	case errNotFound:
		msg = "model: " + c.model
	}
	typ, ok := anthropicErrorTypes[status]
	if !ok {
		typ = "invalid_request_error"
		if status >= 500 {
			typ = "api_error"
		}
	}
	if msg == "" {
		msg = anthropicMessages[typ]
	}
	b, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}{Type: "error", Error: struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}{typ, msg}, RequestID: "req_" + c.requestID()})
	return status, b
}

// anthropicStreamError is the in-stream error event of an Anthropic stream.
const anthropicStreamError = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"

// geminiStatuses maps HTTP status to google.rpc.Code names.
var geminiStatuses = map[int]string{
	400: "INVALID_ARGUMENT",
	401: "UNAUTHENTICATED",
	403: "PERMISSION_DENIED",
	404: "NOT_FOUND",
	409: "ABORTED",
	413: "INVALID_ARGUMENT",
	429: "RESOURCE_EXHAUSTED",
	499: "CANCELLED",
	500: "INTERNAL",
	501: "NOT_IMPLEMENTED",
	503: "UNAVAILABLE",
	504: "DEADLINE_EXCEEDED",
}

// geminiStatusName is the google.rpc.Code name of an HTTP status.
func geminiStatusName(status int) string {
	if st, ok := geminiStatuses[status]; ok {
		return st
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "UNKNOWN"
}

var geminiMessages = map[int]string{
	400: "Request contains an invalid argument.",
	401: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
	403: "The caller does not have permission",
	429: "Resource has been exhausted (e.g. check quota).",
	500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
	503: "The model is overloaded. Please try again later.",
	504: "Deadline expired before operation could complete.",
}

type geminiDetail map[string]any

func geminiError(e apiErr, c *call) (int, []byte) {
	status, msg := e.status, e.msg
	var details []geminiDetail
	switch e.kind {
	case errNoKey:
		status = http.StatusForbidden
		msg = "Method doesn't allow unregistered callers (callers without established identity). Please use API key or other form of API consumer identity to call this API."
	case errBadKey:
		status, msg = http.StatusBadRequest, "API key not valid. Please pass a valid API key."
		details = []geminiDetail{{
			"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
			"metadata": map[string]string{"service": "generativelanguage.googleapis.com"},
		}}
	case errBilling:
		status = http.StatusForbidden
		msg = "This API method requires billing to be enabled. Please enable billing on project #000000000000 by visiting https://console.developers.google.com/billing/enable?project=000000000000 then retry."
		details = []geminiDetail{{
			"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "BILLING_DISABLED", "domain": "googleapis.com",
			"metadata": map[string]string{"service": "generativelanguage.googleapis.com", "consumer": "projects/000000000000"},
		}}
	case errNotFound:
		msg = "models/" + c.model + " is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."
	case errTooLarge:
		msg = "Request payload size exceeds the limit."
	case errStatus:
		if status == http.StatusTooManyRequests && c.fault.RetryAfter > 0 {
			details = []geminiDetail{{
				"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retryAfterSeconds(c.fault.RetryAfter) + "s",
			}}
		}
	}
	return status, geminiErrorBody(status, msg, "", details...)
}

// geminiErrorBody is Google's error envelope; indent pretty-prints it as
// Google does (and as Vertex does inside a stream).
func geminiErrorBody(status int, msg, indent string, details ...geminiDetail) []byte {
	st := geminiStatusName(status)
	if msg == "" {
		msg = geminiMessages[status]
		if msg == "" {
			msg = http.StatusText(status)
		}
	}
	v := struct {
		Error struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Status  string         `json:"status"`
			Details []geminiDetail `json:"details,omitempty"`
		} `json:"error"`
	}{}
	v.Error.Code, v.Error.Message, v.Error.Status, v.Error.Details = status, msg, st, details
	var b []byte
	if indent != "" {
		b, _ = json.MarshalIndent(v, "", indent)
	} else {
		b, _ = json.Marshal(v)
	}
	return b
}
