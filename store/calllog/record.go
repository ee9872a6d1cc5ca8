package calllog

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/limit"
	"switchyard/routing/record"
	"switchyard/routing/wire"

	"github.com/lib/pq"
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
func ValidStatus(s string) bool { return record.ValidStatus(record.Status(s)) }

// cleanTyped is cleanText for a text column of a named string type.
func cleanTyped[T ~string](s *T) { *s = T(cleanText(string(*s))) }

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
	if !record.ValidStatus(r.Status) {
		return fmt.Errorf("%w: request %s: unknown status %q", ErrInvalidRecord, r.RequestID, r.Status)
	}
	for _, s := range []*string{
		&r.RequestID, &r.Caller, &r.Tenant, &r.RouteGroup, &r.RequestedModel,
		&r.LogicModel, &r.Provider, &r.KeyFingerprint, &r.ErrorCode,
		&r.Currency, &r.Fallback, &r.Degraded, &r.Endpoint, &r.ModelAlias,
		&r.PresentedKey,
	} {
		*s = cleanText(*s)
	}
	cleanTyped(&r.Tier)
	cleanTyped(&r.ErrorClass)
	cleanTyped(&r.PriorityClass)
	r.DroppedFields = cleanFields(r.DroppedFields)
	r.HTTPStatus = clampInt32(r.HTTPStatus)
	r.LatencyMS = clampInt32(r.LatencyMS)
	// A value that changes gets a copy of its own: the pointers are the
	// caller's.
	if r.TTFCMS != nil {
		if v := clampInt32(*r.TTFCMS); v != *r.TTFCMS {
			r.TTFCMS = &v
		}
	}
	if r.QueueWaitMS != nil {
		if v := min(max(*r.QueueWaitMS, 0), math.MaxInt32); v != *r.QueueWaitMS {
			r.QueueWaitMS = &v
		}
	}
	if r.CostMicros != nil && (*r.CostMicros < 0 || *r.CostMicros > MaxCallCostMicros) {
		v := min(max(*r.CostMicros, 0), MaxCallCostMicros)
		r.CostMicros = &v
	}
	r.LimitKind = limit.Kind(cleanText(string(r.LimitKind)))
	// wire.ValidJSON: json.Valid's verdict at under half its cost.
	if len(r.Attempts) > 0 && !wire.ValidJSON(r.Attempts) {
		// Keep what was said, as a JSON string, rather than lose the row.
		b, _ := json.Marshal(cleanText(string(r.Attempts)))
		r.Attempts = b
	}
	return nil
}

// cleanFields repairs field names as cleanText does, on a copy when one
// changes (the slice is the caller's), and drops empty ones; none is nil.
func cleanFields(fs []string) []string {
	for i, f := range fs {
		if c := cleanText(f); c != f || c == "" {
			var out []string
			out = append(out, fs[:i]...)
			for _, f := range fs[i:] {
				if c := cleanText(f); c != "" {
					out = append(out, c)
				}
			}
			return out
		}
	}
	if len(fs) == 0 {
		return nil
	}
	return fs
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

// columns lists call_logs' columns in the order of Record's fields; COPY
// lines (appendCopyLine) and scan targets follow the same order.
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
	"model_alias", "dropped_fields",
	"presented_key",
}

var columnList = strings.Join(columns, ", ")

// appendCopyLine appends r as one line of COPY's text format, in the order
// of columns: the values lib/pq's COPY wrote for it. An empty text column
// and a nil number are \N (NULL), but for the request id and the status,
// never empty once normalized; an empty attempt trail is [].
func appendCopyLine(b []byte, r *Record) []byte {
	b = appendCopyTime(b, r.At)
	b = appendCopyBytes(append(b, '\t'), r.RequestID)
	b = appendCopyInt64Ptr(b, r.CallerID)
	b = appendCopyText(b, r.Caller)
	b = appendCopyText(b, r.Tenant)
	b = appendCopyText(b, r.RouteGroup)
	b = appendCopyText(b, string(r.Tier))
	b = appendCopyText(b, r.RequestedModel)
	b = appendCopyText(b, r.LogicModel)
	b = appendCopyInt64Ptr(b, r.DeploymentID)
	b = appendCopyText(b, r.Provider)
	b = appendCopyText(b, r.KeyFingerprint)
	b = appendCopyBytes(append(b, '\t'), string(r.Status))
	b = appendCopyText(b, string(r.ErrorClass))
	b = appendCopyText(b, r.ErrorCode)
	b = appendCopyInt(b, int64(r.HTTPStatus))
	b = appendCopyInt(b, int64(r.LatencyMS))
	b = appendCopyIntPtr(b, r.TTFCMS)
	b = appendCopyInt64Ptr(b, r.PromptTokens)
	b = appendCopyInt64Ptr(b, r.CompletionTokens)
	b = appendCopyInt64Ptr(b, r.CachedTokens)
	b = appendCopyInt64Ptr(b, r.ReasoningTokens)
	b = appendCopyBool(b, r.UsageEstimated)
	b = appendCopyInt64Ptr(b, r.CostMicros)
	b = appendCopyText(b, r.Currency)
	b = appendCopyBool(b, r.Stream)
	b = appendCopyBool(b, r.IdempotencyReplay)
	b = appendCopyText(b, r.Fallback)
	b = appendCopyInt64Ptr(b, r.ConfigVersion)
	if len(r.Attempts) > 0 {
		b = appendCopyBytes(append(b, '\t'), r.Attempts)
	} else {
		b = append(b, "\t[]"...)
	}
	b = appendCopyInt(b, int64(r.Needs))
	b = appendCopyInt(b, int64(r.Fields))
	b = appendCopyText(b, r.Degraded)
	b = appendCopyText(b, string(r.PriorityClass))
	b = appendCopyIntPtr(b, r.QueueWaitMS)
	b = appendCopyText(b, r.Endpoint)
	b = appendCopyText(b, string(r.LimitKind))
	b = appendCopyInt64Ptr(b, r.LimitValue)
	b = appendCopyInt64Ptr(b, r.LimitResetMS)
	b = appendCopyText(b, r.ModelAlias)
	b = appendCopyTextArray(b, r.DroppedFields)
	b = appendCopyText(b, r.PresentedKey)
	return append(b, '\n')
}

// appendCopyTime appends t (the line's first column) in ISO 8601, UTC,
// to the microsecond.
func appendCopyTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	if y := t.Year(); y < 1 || y > 9999 {
		return append(b, pq.FormatTimestamp(t)...) // BC, or five digits: as lib/pq wrote them
	}
	return t.AppendFormat(b, "2006-01-02T15:04:05.999999Z07:00")
}

// appendCopyText appends a text column; "" is NULL.
func appendCopyText(b []byte, s string) []byte {
	if s == "" {
		return append(b, `	\N`...)
	}
	return appendCopyBytes(append(b, '\t'), s)
}

// appendCopyBytes appends s escaped for COPY's text format as lib/pq
// escapes it: backslash, newline, carriage return and tab. Other bytes are
// taken as they are (s must not hold NUL, which text cannot hold).
func appendCopyBytes[T ~string | ~[]byte](b []byte, s T) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		var esc byte
		switch s[i] {
		case '\\':
			esc = '\\'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		case '\t':
			esc = 't'
		default:
			continue
		}
		b = append(append(b, s[start:i]...), '\\', esc)
		start = i + 1
	}
	return append(b, s[start:]...)
}

// appendCopyTextArray appends a text[] column: NULL when empty, else an
// array literal with every element double-quoted, a quote or backslash
// inside escaped with a backslash — and the literal escaped in turn for
// COPY's text format, as appendCopyBytes does.
func appendCopyTextArray(b []byte, vs []string) []byte {
	if len(vs) == 0 {
		return append(b, `	\N`...)
	}
	b = append(b, '\t', '{')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for j := 0; j < len(v); j++ {
			switch c := v[j]; c {
			case '"':
				b = append(b, `\\"`...) // \" in the literal
			case '\\':
				b = append(b, `\\\\`...) // \\ in the literal
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, c)
			}
		}
		b = append(b, '"')
	}
	return append(b, '}')
}

func appendCopyInt(b []byte, n int64) []byte {
	return strconv.AppendInt(append(b, '\t'), n, 10)
}

func appendCopyInt64Ptr(b []byte, p *int64) []byte {
	if p == nil {
		return append(b, `	\N`...)
	}
	return appendCopyInt(b, *p)
}

func appendCopyIntPtr(b []byte, p *int) []byte {
	if p == nil {
		return append(b, `	\N`...)
	}
	return appendCopyInt(b, int64(*p))
}

func appendCopyBool(b []byte, v bool) []byte {
	return strconv.AppendBool(append(b, '\t'), v)
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
		alias                                                          sql.NullString
		dropped                                                        pq.StringArray
		presented                                                      sql.NullString
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
		&limitKind, &limitValue, &limitReset,
		&alias, &dropped,
		&presented)
	if err != nil {
		return Record{}, err
	}
	r.At = r.At.UTC()
	r.CallerID = int64Ptr(callerID)
	r.Caller = caller.String
	r.Tenant = tenant.String
	r.RouteGroup = routeGroup.String
	r.Tier = config.TierName(tier.String)
	r.RequestedModel = requestedModel.String
	r.LogicModel = logicModel.String
	r.DeploymentID = int64Ptr(deploymentID)
	r.Provider = provider.String
	r.KeyFingerprint = keyFingerprint.String
	r.ErrorClass = adapter.Class(errorClass.String)
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
	r.PriorityClass = config.PriorityClass(class.String)
	if queueWait.Valid {
		v := int(queueWait.Int64)
		r.QueueWaitMS = &v
	}
	r.Endpoint = endpoint.String
	r.LimitKind = limit.Kind(limitKind.String)
	r.LimitValue = int64Ptr(limitValue)
	r.LimitResetMS = int64Ptr(limitReset)
	r.ModelAlias = alias.String
	if len(dropped) > 0 {
		r.DroppedFields = []string(dropped)
	}
	r.PresentedKey = presented.String
	return r, nil
}

func int64Ptr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}
