package calllogs

import (
	"strconv"
	"strings"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/record"
)

// CSVHeader names the columns of a call-log export. Keys appear only as
// fingerprints; the attempt trail (vendors' own words) is not exported.
var CSVHeader = []string{
	"time_utc", "request_id", "front_door", "caller", "caller_key", "tenant", "route_group", "tier",
	"requested_model", "logic_model", "provider", "deployment_id", "key", "status", "http_status",
	"error_class", "error_code", "latency_ms", "ttfc_ms", "prompt_tokens", "completion_tokens",
	"cached_tokens", "cost", "currency", "nothing_spent", "stream", "config_version",
}

// CSVRecord is one call as an export line, in CSVHeader's order. Unknown
// numbers are empty cells (not 0); a call that reached no vendor says
// nothing_spent=yes with zero tokens and cost.
func CSVRecord(r record.Call) []string {
	none := NothingSpent(r)
	num := func(p *int64) string {
		switch {
		case p != nil:
			return strconv.FormatInt(*p, 10)
		case none:
			return "0"
		}
		return ""
	}
	cost := ""
	switch {
	case r.CostMicros != nil:
		cost = config.Micros(*r.CostMicros).String()
	case none:
		cost = "0"
	}
	ttfc := ""
	if r.TTFCMS != nil {
		ttfc = strconv.Itoa(*r.TTFCMS)
	}
	fields := []string{
		r.At.UTC().Format(time.RFC3339Nano), r.RequestID, r.Endpoint, r.Caller, r.PresentedKey, r.Tenant, r.RouteGroup, string(r.Tier),
		r.RequestedModel, r.LogicModel, r.Provider, i64Cell(r.DeploymentID), r.KeyFingerprint, string(r.Status), strconv.Itoa(r.HTTPStatus),
		string(r.ErrorClass), r.ErrorCode, strconv.Itoa(r.LatencyMS), ttfc, num(r.PromptTokens), num(r.CompletionTokens),
		num(r.CachedTokens), cost, r.Currency, yesNo(none), yesNo(r.Stream), i64Cell(r.ConfigVersion),
	}
	for i, f := range fields {
		fields[i] = csvSafe(f)
	}
	return fields
}

func i64Cell(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}

// csvSafe keeps a spreadsheet from reading a caller-chosen value (a
// request id, a requested model) as a formula: one starting with = + - @
// or a tab or carriage return gets a leading apostrophe.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
