package calllog

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Call statuses.
const (
	StatusOK              = "ok"
	StatusUpstreamError   = "upstream_error"
	StatusRejected        = "rejected"
	StatusClientCancelled = "client_cancelled"
)

// ErrInvalidRecord is wrapped by the error for a record that cannot be stored.
var ErrInvalidRecord = errors.New("calllog: invalid record")

// Record is one call-log row.
//
// Text columns are plain strings: an empty string is stored as NULL and NULL
// reads back as "". Numeric columns where 0 is a real value are pointers:
// nil means unknown (usage not reported, call not priced, no first chunk),
// which is kept distinct from 0.
type Record struct {
	// At is when the request arrived; with RequestID it is the row's key,
	// and it decides the partition and the roll-up day and hour (UTC).
	At                time.Time       `json:"at"`
	RequestID         string          `json:"request_id"`
	CallerID          *int64          `json:"caller_id,omitempty"`
	Caller            string          `json:"caller,omitempty"`
	Tenant            string          `json:"tenant,omitempty"`
	RouteGroup        string          `json:"route_group,omitempty"`
	Tier              string          `json:"tier,omitempty"`
	RequestedModel    string          `json:"requested_model,omitempty"`
	LogicModel        string          `json:"logic_model,omitempty"`
	DeploymentID      *int64          `json:"deployment_id,omitempty"`
	Provider          string          `json:"provider,omitempty"`
	KeyFingerprint    string          `json:"key_fingerprint,omitempty"`
	Status            string          `json:"status"` // StatusOK, StatusUpstreamError, StatusRejected or StatusClientCancelled
	ErrorClass        string          `json:"error_class,omitempty"`
	ErrorCode         string          `json:"error_code,omitempty"`
	HTTPStatus        int             `json:"http_status"`
	LatencyMS         int             `json:"latency_ms"`        // arrival to last byte
	TTFCMS            *int            `json:"ttfc_ms,omitempty"` // arrival to first content chunk (streams)
	PromptTokens      *int64          `json:"prompt_tokens,omitempty"`
	CompletionTokens  *int64          `json:"completion_tokens,omitempty"`
	CachedTokens      *int64          `json:"cached_tokens,omitempty"`
	ReasoningTokens   *int64          `json:"reasoning_tokens,omitempty"`
	Cost              *float64        `json:"cost,omitempty"`
	Currency          string          `json:"currency,omitempty"`
	Stream            bool            `json:"stream,omitempty"`
	IdempotencyReplay bool            `json:"idempotency_replay,omitempty"`
	Fallback          string          `json:"fallback,omitempty"` // e.g. "policy shared → group general"
	ConfigVersion     *int64          `json:"config_version,omitempty"`
	Attempts          json.RawMessage `json:"attempts,omitempty"` // the attempt trail, stored as given (jsonb)
}

// ValidStatus reports whether s is one of the call statuses.
func ValidStatus(s string) bool {
	switch s {
	case StatusOK, StatusUpstreamError, StatusRejected, StatusClientCancelled:
		return true
	}
	return false
}

// normalize makes r storable and deterministic, so that the same record
// written twice (a retry, a spill replay) is the same row: the time is
// truncated to PostgreSQL's microsecond precision, a missing time or request
// id is filled in, and text PostgreSQL would refuse (NUL bytes, invalid
// UTF-8) or numbers that overflow an integer column are repaired. Only an
// unknown status is an error.
func (r *Record) normalize() error {
	if r.At.IsZero() {
		r.At = time.Now()
	}
	r.At = r.At.Truncate(time.Microsecond).UTC()
	if r.RequestID == "" {
		r.RequestID = NewRequestID()
	}
	if !ValidStatus(r.Status) {
		return fmt.Errorf("%w: request %s: unknown status %q", ErrInvalidRecord, r.RequestID, r.Status)
	}
	for _, s := range []*string{
		&r.RequestID, &r.Caller, &r.Tenant, &r.RouteGroup, &r.Tier, &r.RequestedModel,
		&r.LogicModel, &r.Provider, &r.KeyFingerprint, &r.ErrorClass, &r.ErrorCode,
		&r.Currency, &r.Fallback,
	} {
		*s = cleanText(*s)
	}
	r.HTTPStatus = clampInt32(r.HTTPStatus)
	r.LatencyMS = clampInt32(r.LatencyMS)
	if r.TTFCMS != nil {
		v := clampInt32(*r.TTFCMS)
		r.TTFCMS = &v
	}
	if r.Cost != nil && (math.IsNaN(*r.Cost) || math.IsInf(*r.Cost, 0)) {
		r.Cost = nil
	}
	if len(r.Attempts) > 0 && !json.Valid(r.Attempts) {
		// Keep what was said, as a JSON string, rather than lose the row.
		b, _ := json.Marshal(cleanText(string(r.Attempts)))
		r.Attempts = b
	}
	return nil
}

func cleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	return s
}

func clampInt32(v int) int {
	return min(max(v, math.MinInt32), math.MaxInt32)
}

// columns lists call_logs' columns in the order of Record's fields; copy
// values and scan targets follow the same order.
var columns = []string{
	"at", "request_id", "caller_id", "caller", "tenant", "route_group", "tier",
	"requested_model", "logic_model", "deployment_id", "provider", "key_fingerprint",
	"status", "error_class", "error_code", "http_status", "latency_ms", "ttfc_ms",
	"prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens",
	"cost", "currency", "stream", "idempotency_replay", "fallback", "config_version",
	"attempts",
}

var columnList = strings.Join(columns, ", ")

// values returns r's column values for COPY, in the order of columns.
func (r *Record) values() []any {
	attempts := "[]"
	if len(r.Attempts) > 0 {
		attempts = string(r.Attempts) // a string: COPY would hex-encode []byte as bytea
	}
	return []any{
		r.At, r.RequestID, nullInt64(r.CallerID), nullText(r.Caller), nullText(r.Tenant),
		nullText(r.RouteGroup), nullText(r.Tier), nullText(r.RequestedModel),
		nullText(r.LogicModel), nullInt64(r.DeploymentID), nullText(r.Provider),
		nullText(r.KeyFingerprint), r.Status, nullText(r.ErrorClass), nullText(r.ErrorCode),
		int64(r.HTTPStatus), int64(r.LatencyMS), nullInt(r.TTFCMS),
		nullInt64(r.PromptTokens), nullInt64(r.CompletionTokens), nullInt64(r.CachedTokens),
		nullInt64(r.ReasoningTokens), nullFloat(r.Cost), nullText(r.Currency),
		r.Stream, r.IdempotencyReplay, nullText(r.Fallback), nullInt64(r.ConfigVersion),
		attempts,
	}
}

func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullInt64(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func nullInt(p *int) any {
	if p == nil {
		return nil
	}
	return int64(*p)
}

func nullFloat(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// scanner is *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanRecord reads one row selected with columnList.
func scanRecord(s scanner) (Record, error) {
	var (
		r                                                              Record
		callerID, deploymentID, configVersion                          sql.NullInt64
		caller, tenant, routeGroup, tier, requestedModel, logicModel   sql.NullString
		provider, keyFingerprint, errorClass, errorCode, currency, fbk sql.NullString
		ttfc                                                           sql.NullInt64
		prompt, completion, cached, reasoning                          sql.NullInt64
		cost                                                           sql.NullFloat64
		attempts                                                       []byte
	)
	err := s.Scan(&r.At, &r.RequestID, &callerID, &caller, &tenant, &routeGroup, &tier,
		&requestedModel, &logicModel, &deploymentID, &provider, &keyFingerprint,
		&r.Status, &errorClass, &errorCode, &r.HTTPStatus, &r.LatencyMS, &ttfc,
		&prompt, &completion, &cached, &reasoning,
		&cost, &currency, &r.Stream, &r.IdempotencyReplay, &fbk, &configVersion,
		&attempts)
	if err != nil {
		return Record{}, err
	}
	r.At = r.At.UTC()
	r.CallerID = int64Ptr(callerID)
	r.Caller = caller.String
	r.Tenant = tenant.String
	r.RouteGroup = routeGroup.String
	r.Tier = tier.String
	r.RequestedModel = requestedModel.String
	r.LogicModel = logicModel.String
	r.DeploymentID = int64Ptr(deploymentID)
	r.Provider = provider.String
	r.KeyFingerprint = keyFingerprint.String
	r.ErrorClass = errorClass.String
	r.ErrorCode = errorCode.String
	if ttfc.Valid {
		v := int(ttfc.Int64)
		r.TTFCMS = &v
	}
	r.PromptTokens = int64Ptr(prompt)
	r.CompletionTokens = int64Ptr(completion)
	r.CachedTokens = int64Ptr(cached)
	r.ReasoningTokens = int64Ptr(reasoning)
	if cost.Valid {
		r.Cost = &cost.Float64
	}
	r.Currency = currency.String
	r.Fallback = fbk.String
	r.ConfigVersion = int64Ptr(configVersion)
	r.Attempts = json.RawMessage(attempts)
	return r, nil
}

func int64Ptr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}
