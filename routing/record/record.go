package record

import (
	"encoding/json"
	"time"

	"switchyard/routing/limit"
)

// Call statuses.
const (
	StatusOK              = "ok"
	StatusUpstreamError   = "upstream_error"
	StatusRejected        = "rejected"
	StatusClientCancelled = "client_cancelled"
	// StatusInterrupted is a call this gateway cut itself: a stream still
	// open when the shutdown grace ran out.
	StatusInterrupted = "interrupted"
)

// Call is one call-log row: what the journey records about one request.
//
// Text columns are plain strings: an empty string is stored as NULL and NULL
// reads back as "". Numeric columns where 0 is a real value are pointers:
// nil means unknown (usage not reported, call not priced, no first chunk),
// which is kept distinct from 0.
type Call struct {
	// At is when the request arrived; with RequestID it is the row's key,
	// and it decides the partition and the roll-up day and hour (UTC).
	At               time.Time `json:"at"`
	RequestID        string    `json:"request_id"`
	CallerID         *int64    `json:"caller_id,omitempty"`
	Caller           string    `json:"caller,omitempty"`
	Tenant           string    `json:"tenant,omitempty"`
	RouteGroup       string    `json:"route_group,omitempty"`
	Tier             string    `json:"tier,omitempty"`
	RequestedModel   string    `json:"requested_model,omitempty"`
	LogicModel       string    `json:"logic_model,omitempty"`
	DeploymentID     *int64    `json:"deployment_id,omitempty"`
	Provider         string    `json:"provider,omitempty"`
	KeyFingerprint   string    `json:"key_fingerprint,omitempty"`
	Status           string    `json:"status"` // one of the Status constants
	ErrorClass       string    `json:"error_class,omitempty"`
	ErrorCode        string    `json:"error_code,omitempty"`
	HTTPStatus       int       `json:"http_status"`
	LatencyMS        int       `json:"latency_ms"`        // arrival to last byte
	TTFCMS           *int      `json:"ttfc_ms,omitempty"` // arrival to first content chunk (streams)
	PromptTokens     *int64    `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64    `json:"completion_tokens,omitempty"`
	CachedTokens     *int64    `json:"cached_tokens,omitempty"`
	ReasoningTokens  *int64    `json:"reasoning_tokens,omitempty"`
	// UsageEstimated: the vendor reported no usage; the token counts are the
	// gateway's own (an embedded tokenizer), not the vendor's.
	UsageEstimated    bool            `json:"usage_estimated,omitempty"`
	CostMicros        *int64          `json:"cost_micros,omitempty"` // micro-units of Currency; nil = not priced
	Currency          string          `json:"currency,omitempty"`
	Stream            bool            `json:"stream,omitempty"`
	IdempotencyReplay bool            `json:"idempotency_replay,omitempty"`
	Fallback          string          `json:"fallback,omitempty"` // e.g. "policy shared → group general"
	ConfigVersion     *int64          `json:"config_version,omitempty"`
	Attempts          json.RawMessage `json:"attempts,omitempty"` // the attempt trail, stored as given (jsonb)
	// The limit that refused the request, if one did (the journey's
	// Answer.Refusal): its kind, its configured value (nil when it has
	// none, e.g. the instance gate; micro-units for a budget) and how long
	// after the refusal it lets a request pass again.
	LimitKind    limit.Kind `json:"limit_kind,omitempty"`
	LimitValue   *int64     `json:"limit_value,omitempty"`
	LimitResetMS *int64     `json:"limit_reset_ms,omitempty"`
}

// ValidStatus reports whether s is one of the call statuses.
func ValidStatus(s string) bool {
	switch s {
	case StatusOK, StatusUpstreamError, StatusRejected, StatusClientCancelled, StatusInterrupted:
		return true
	}
	return false
}
