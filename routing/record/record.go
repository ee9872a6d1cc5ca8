package record

import (
	"encoding/json"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/limit"
)

// Status is how a call ended, as the call log's status column stores it.
type Status string

// Call statuses.
const (
	StatusOK              Status = "ok"
	StatusUpstreamError   Status = "upstream_error"
	StatusRejected        Status = "rejected"
	StatusClientCancelled Status = "client_cancelled"
	// StatusInterrupted is a call this gateway cut itself: a stream still
	// open when the shutdown grace ran out.
	StatusInterrupted Status = "interrupted"
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
	At             time.Time       `json:"at"`
	RequestID      string          `json:"request_id"`
	CallerID       *int64          `json:"caller_id,omitempty"`
	Caller         string          `json:"caller,omitempty"`
	Tenant         string          `json:"tenant,omitempty"`
	RouteGroup     string          `json:"route_group,omitempty"`
	Tier           config.TierName `json:"tier,omitempty"`
	RequestedModel string          `json:"requested_model,omitempty"`
	// ModelAlias is the pattern of the route group's model alias the
	// requested model resolved through ("" when it named a tier or a
	// logic-model code).
	ModelAlias     string `json:"model_alias,omitempty"`
	LogicModel     string `json:"logic_model,omitempty"`
	DeploymentID   *int64 `json:"deployment_id,omitempty"`
	Provider       string `json:"provider,omitempty"`
	KeyFingerprint string `json:"key_fingerprint,omitempty"`
	Status         Status `json:"status"`
	// ErrorClass is the failure class (adapter.Class), or the class of a
	// refusal of the gateway's own (a limit's reason, overloaded).
	ErrorClass       adapter.Class `json:"error_class,omitempty"`
	ErrorCode        string        `json:"error_code,omitempty"`
	HTTPStatus       int           `json:"http_status"`
	LatencyMS        int           `json:"latency_ms"`        // arrival to last byte
	TTFCMS           *int          `json:"ttfc_ms,omitempty"` // arrival to first content chunk (streams)
	PromptTokens     *int64        `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64        `json:"completion_tokens,omitempty"`
	CachedTokens     *int64        `json:"cached_tokens,omitempty"`
	ReasoningTokens  *int64        `json:"reasoning_tokens,omitempty"`
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
	// Needs and Fields are the request's shape as routing saw it, so the
	// impact preview can replay the request against a draft: what it
	// required of a deployment, and the OpenAI chat fields it set (the
	// bits of adapter.FieldSet) that a protocol may refuse.
	Needs  Needs  `json:"needs,omitempty"`
	Fields uint64 `json:"fields,omitempty"`
	// Degraded is the rung of the degradation ladder that answered:
	// step_down, cached or static ("" when none).
	Degraded string `json:"degraded,omitempty"`
	// Retries counts the attempts after the first (the roll-ups of the
	// retry budget; the trail has them one by one).
	Retries int `json:"retries,omitempty"`
	// PriorityClass is the caller's class (interactive | normal | batch).
	PriorityClass config.PriorityClass `json:"priority_class,omitempty"`
	// QueueWaitMS is how long the request waited in its class's queue for
	// capacity (the instance's in-flight cap and deployments at capacity
	// together); nil when it never queued.
	QueueWaitMS *int `json:"queue_wait_ms,omitempty"`
	// Endpoint is the front door the request came through
	// (chat_completions, messages, count_tokens, responses, embeddings,
	// models); "" on rows written before it was recorded.
	Endpoint string `json:"endpoint,omitempty"`
	// The limit that refused the request, if one did (the journey's
	// Answer.Refusal): its kind, its configured value (nil when it has
	// none, e.g. the instance gate; micro-units for a budget) and how long
	// after the refusal it lets a request pass again.
	LimitKind    limit.Kind `json:"limit_kind,omitempty"`
	LimitValue   *int64     `json:"limit_value,omitempty"`
	LimitResetMS *int64     `json:"limit_reset_ms,omitempty"`
	// DroppedFields are the request fields the vendor did not get: a
	// translation for its protocol dropped them (a hint with no
	// counterpart there). Empty when the request reached it whole.
	DroppedFields []string `json:"dropped_fields,omitempty"`
	// PresentedKey is the fingerprint of the caller key the request
	// presented (config.PresentedKeyFingerprint), never the key: set
	// whenever a key was sent, also when it was unknown or revoked; ""
	// when none was.
	PresentedKey string `json:"presented_key,omitempty"`
}

// Needs are what a request required of a deployment, as bits (one
// smallint column).
type Needs uint16

const (
	NeedThinking   Needs = 1 << iota // reasoning asked for (also forces deep)
	NeedVision                       // an image in the messages
	NeedTools                        // tools offered
	NeedEmbedding                    // an embeddings request
	NeedOtherField                   // a top-level field this build does not know
)

// Has reports whether every bit of n is set.
func (s Needs) Has(n Needs) bool { return s&n == n }

// ValidStatus reports whether s is one of the call statuses.
func ValidStatus(s Status) bool {
	switch s {
	case StatusOK, StatusUpstreamError, StatusRejected, StatusClientCancelled, StatusInterrupted:
		return true
	}
	return false
}
