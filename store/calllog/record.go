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

	"switchyard/routing/limit"
	"switchyard/routing/record"
)

// Call statuses (see record).
const (
	StatusOK              = record.StatusOK
	StatusUpstreamError   = record.StatusUpstreamError
	StatusRejected        = record.StatusRejected
	StatusClientCancelled = record.StatusClientCancelled
)

// ErrInvalidRecord is wrapped by the error for a record that cannot be stored.
var ErrInvalidRecord = errors.New("calllog: invalid record")

// Record is one call-log row (defined with the journey that produces it).
type Record = record.Call

// ValidStatus reports whether s is a known call status.
func ValidStatus(s string) bool { return record.ValidStatus(s) }

// normalize makes r storable and deterministic, so that the same record
// written twice (a retry, a spill replay) is the same row: the time is
// truncated to PostgreSQL's microsecond precision, a missing time or request
// id is filled in, and text PostgreSQL would refuse (NUL bytes, invalid
// UTF-8) or numbers that overflow an integer column are repaired. Only an
// unknown status is an error.
func normalize(r *Record) error {
	if r.At.IsZero() {
		r.At = time.Now()
	}
	r.At = r.At.Truncate(time.Microsecond).UTC()
	if r.RequestID == "" {
		r.RequestID = record.NewRequestID()
	}
	if !ValidStatus(r.Status) {
		return fmt.Errorf("%w: request %s: unknown status %q", ErrInvalidRecord, r.RequestID, r.Status)
	}
	for _, s := range []*string{
		&r.RequestID, &r.Caller, &r.Tenant, &r.RouteGroup, &r.Tier, &r.RequestedModel,
		&r.LogicModel, &r.Provider, &r.KeyFingerprint, &r.ErrorClass, &r.ErrorCode,
		&r.Currency, &r.Fallback, &r.Degraded, &r.PriorityClass, &r.Endpoint,
	} {
		*s = cleanText(*s)
	}
	r.HTTPStatus = clampInt32(r.HTTPStatus)
	r.LatencyMS = clampInt32(r.LatencyMS)
	if r.TTFCMS != nil {
		v := clampInt32(*r.TTFCMS)
		r.TTFCMS = &v
	}
	if r.QueueWaitMS != nil {
		v := min(max(*r.QueueWaitMS, 0), math.MaxInt32)
		r.QueueWaitMS = &v
	}
	if r.CostMicros != nil && (*r.CostMicros < 0 || *r.CostMicros > MaxCallCostMicros) {
		v := min(max(*r.CostMicros, 0), MaxCallCostMicros)
		r.CostMicros = &v
	}
	r.LimitKind = limit.Kind(cleanText(string(r.LimitKind)))
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
	"prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", "usage_estimated",
	"cost_micros", "currency", "stream", "idempotency_replay", "fallback", "config_version",
	"attempts",
	"needs", "fields",
	"degraded",
	"priority_class", "queue_wait_ms",
	"endpoint",
	"limit_kind", "limit_value", "limit_reset_ms",
}

var columnList = strings.Join(columns, ", ")

// values returns r's column values for COPY, in the order of columns.
func values(r *Record) []any {
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
		nullInt64(r.ReasoningTokens), r.UsageEstimated, nullInt64(r.CostMicros), nullText(r.Currency),
		r.Stream, r.IdempotencyReplay, nullText(r.Fallback), nullInt64(r.ConfigVersion),
		attempts,
		int64(r.Needs), int64(r.Fields),
		nullText(r.Degraded),
		nullText(r.PriorityClass), nullInt(r.QueueWaitMS),
		nullText(r.Endpoint),
		nullText(string(r.LimitKind)), nullInt64(r.LimitValue), nullInt64(r.LimitResetMS),
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
		cost                                                           sql.NullInt64
		attempts                                                       []byte
		needs, fields                                                  int64
		degraded                                                       sql.NullString
		class                                                          sql.NullString
		queueWait                                                      sql.NullInt64
		endpoint                                                       sql.NullString
		limitKind                                                      sql.NullString
		limitValue, limitReset                                         sql.NullInt64
	)
	err := s.Scan(&r.At, &r.RequestID, &callerID, &caller, &tenant, &routeGroup, &tier,
		&requestedModel, &logicModel, &deploymentID, &provider, &keyFingerprint,
		&r.Status, &errorClass, &errorCode, &r.HTTPStatus, &r.LatencyMS, &ttfc,
		&prompt, &completion, &cached, &reasoning, &r.UsageEstimated,
		&cost, &currency, &r.Stream, &r.IdempotencyReplay, &fbk, &configVersion,
		&attempts,
		&needs, &fields,
		&degraded,
		&class, &queueWait,
		&endpoint,
		&limitKind, &limitValue, &limitReset)
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
	r.CostMicros = int64Ptr(cost)
	r.Currency = currency.String
	r.Fallback = fbk.String
	r.ConfigVersion = int64Ptr(configVersion)
	r.Attempts = json.RawMessage(attempts)
	r.Needs, r.Fields = record.Needs(needs), uint64(fields)
	r.Degraded = degraded.String
	r.PriorityClass = class.String
	if queueWait.Valid {
		v := int(queueWait.Int64)
		r.QueueWaitMS = &v
	}
	r.Endpoint = endpoint.String
	r.LimitKind = limit.Kind(limitKind.String)
	r.LimitValue = int64Ptr(limitValue)
	r.LimitResetMS = int64Ptr(limitReset)
	return r, nil
}

func int64Ptr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}
