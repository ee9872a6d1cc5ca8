package routing

import (
	"switchyard/routing/adapter"
	"switchyard/routing/limit"
)

// ErrorCode is the error code a refused or failed request is answered
// with: the "code" (OpenAI) or "type" (Anthropic) of the error body, and
// the call-log row's error_code. Clients, tests and stored rows see these
// strings: a code, once shipped, keeps its spelling.
type ErrorCode string

// Error codes the journey answers with.
const (
	// The caller and its key.
	CodeInvalidAPIKey  ErrorCode = "invalid_api_key"
	CodeCallerDisabled ErrorCode = "caller_disabled"
	CodeCallerNotLive  ErrorCode = "caller_not_live" // a console test request's caller is not published
	// CodeAPIKeyExpired: the key is past its expiry (401).
	CodeAPIKeyExpired ErrorCode = "api_key_expired"
	// CodeAPIKeyRotated: the key was rotated and its grace period ended
	// (401).
	CodeAPIKeyRotated ErrorCode = "api_key_rotated"
	// CodeKeyScopeDenied: the key's scope does not allow the tier, logic
	// model or front door asked for (403).
	CodeKeyScopeDenied ErrorCode = "key_scope_denied"

	// The request itself.
	CodeInvalidRequest       ErrorCode = "invalid_request"
	CodeRequestTimeout       ErrorCode = "request_timeout" // the body did not arrive in time
	CodeModelNotFound        ErrorCode = "model_not_found"
	CodeUnsupportedParameter ErrorCode = adapter.CodeUnsupportedParameter
	CodeContentFiltered      ErrorCode = "content_filtered"

	// Idempotency-Key.
	CodeIdempotencyUnavailable ErrorCode = "idempotency_unavailable"
	CodeIdempotencyConflict    ErrorCode = "idempotency_conflict"

	// Limits and queues (a limit's refusal is its limit.Reason).
	CodeRateLimited      ErrorCode = ErrorCode(limit.ReasonRateLimited)
	CodeQuotaExceeded    ErrorCode = ErrorCode(limit.ReasonQuotaExceeded)
	CodeBudgetExceeded   ErrorCode = ErrorCode(limit.ReasonBudgetExceeded)
	CodeQueueFull        ErrorCode = "queue_full"
	CodeQueueShed        ErrorCode = "queue_shed"
	CodeBodyBytesFull    ErrorCode = "body_bytes_full" // the instance's body-bytes bound
	CodeNoAvailableModel ErrorCode = "no_available_model"
	// CodeRetryBudgetExhausted is the error code of a request the retry
	// budget stopped: its last attempt failed and the next step was not
	// tried.
	CodeRetryBudgetExhausted ErrorCode = "retry_budget_exhausted"

	// The upstream and the time budget.
	CodeUpstreamError ErrorCode = "upstream_error"
	CodeTimeout       ErrorCode = "timeout"

	// The caller left, or this instance cut the request.
	CodeClientCancelled ErrorCode = "client_cancelled"
	// CodeClientStalled is the call-log error code of an answer its caller
	// did not read within the write deadline (Answer.WriteDeadline).
	CodeClientStalled ErrorCode = "client_stalled"
	CodeShuttingDown  ErrorCode = "shutting_down"

	CodeInternalError ErrorCode = "internal_error"
)

// ClassOverloaded is the error class of a request this instance refused
// because it is overloaded (its body-bytes bound), beside the vendor
// failure classes of adapter.Class.
const ClassOverloaded adapter.Class = "overloaded"

// limitClass is the error class of a limit's refusal: its reason, as for
// the code (rate_limited, quota_exceeded, budget_exceeded).
func limitClass(r limit.Reason) adapter.Class { return adapter.Class(r) }

// codeOf is the error code of a limit's refusal (rate_limited,
// quota_exceeded, budget_exceeded).
func codeOf(r limit.Reason) ErrorCode { return ErrorCode(r) }

// policyCode is the error code the failure-classification table gives
// class.
func policyCode(class adapter.Class) ErrorCode { return ErrorCode(class.Policy().Code) }
