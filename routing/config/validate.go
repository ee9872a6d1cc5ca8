package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// FieldErrors maps a field name to what is wrong with it. The console shows
// each message next to its field; the admin API returns them as JSON.
type FieldErrors map[string]string

// Add records msg for field unless the field already has a message.
func (f FieldErrors) Add(field, msg string) {
	if _, ok := f[field]; !ok {
		f[field] = msg
	}
}

// Err returns f as an error, or nil when it is empty.
func (f FieldErrors) Err() error {
	if len(f) == 0 {
		return nil
	}
	return &ValidationError{Fields: f}
}

// ValidationError carries per-field messages.
type ValidationError struct{ Fields FieldErrors }

func (e *ValidationError) Error() string {
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + e.Fields[k]
	}
	return "invalid input: " + strings.Join(parts, "; ")
}

var (
	nameRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	codeRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9._:-]{0,62}$`)
	currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)
)

const nameRule = "use 1–63 letters, digits, '.', '_' or '-', starting with a letter or digit"

func checkName(f FieldErrors, field, v string) {
	if strings.TrimSpace(v) == "" {
		f.Add(field, "is required")
	} else if !nameRE.MatchString(v) {
		f.Add(field, nameRule)
	}
}

func checkText(f FieldErrors, field, v string, max int) {
	if len(v) > max {
		f.Add(field, fmt.Sprintf("must be at most %d characters", max))
	}
}

func checkPositiveMS(f FieldErrors, field string, v int, allowZero bool) {
	switch {
	case v < 0 || (v == 0 && !allowZero):
		f.Add(field, "must be a positive number of milliseconds")
	case v > 3_600_000:
		f.Add(field, "must be at most one hour (3600000 ms)")
	}
}

// ValidateBaseURL checks that u is an absolute http(s) URL without
// credentials, query or fragment.
func ValidateBaseURL(u string) string {
	if strings.TrimSpace(u) == "" {
		return "is required"
	}
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "must be an absolute URL such as https://api.openai.com/v1"
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return "must start with http:// or https://"
	}
	if p.User != nil {
		return "must not contain credentials; add keys to the key pool instead"
	}
	if p.RawQuery != "" || p.Fragment != "" {
		return "must not contain a query or fragment"
	}
	return ""
}

// ValidateTenant checks one tenant's own fields.
func ValidateTenant(t Tenant) FieldErrors {
	f := FieldErrors{}
	checkName(f, "name", t.Name)
	checkText(f, "description", t.Description, 500)
	return f
}

// ValidateProvider checks one provider's own fields (not its keys).
func ValidateProvider(p Provider) FieldErrors {
	f := FieldErrors{}
	checkName(f, "name", p.Name)
	if !slices.Contains(Protocols, p.Protocol) {
		f.Add("protocol", "must be one of openai, anthropic, gemini, azure, bedrock, vertex")
	}
	checkText(f, "api_version", p.APIVersion, 40)
	checkText(f, "region", p.Region, 40)
	checkText(f, "project", p.Project, 63)
	if p.AuthURL != "" {
		if msg := ValidateBaseURL(p.AuthURL); msg != "" {
			f.Add("auth_url", msg)
		}
	}
	if p.Protocol == ProtocolVertex && strings.TrimSpace(p.BaseURL) == "" {
		// Vertex AI's endpoint follows from the location.
	} else if msg := ValidateBaseURL(p.BaseURL); msg != "" {
		f.Add("base_url", msg)
	}
	checkPositiveMS(f, "timeout_ms", p.TimeoutMS, false)
	checkText(f, "notes", p.Notes, 2000)
	checkHeaders(f, p)
	checkQuirks(f, p)
	return f
}

// ValidateProviderKey checks a key's label and, when adding one, its secret.
func ValidateProviderKey(label, secret string, adding bool) FieldErrors {
	f := FieldErrors{}
	checkText(f, "label", label, 100)
	if adding {
		s := strings.TrimSpace(secret)
		if strings.HasPrefix(s, "{") {
			if msg := checkServiceAccount(s); msg != "" {
				f.Add("secret", msg)
			}
			return f
		}
		switch {
		case s == "":
			f.Add("secret", "is required")
		case len(s) < 8:
			f.Add("secret", "looks too short to be an API key")
		case len(s) > 4096:
			f.Add("secret", "is too long")
		case strings.ContainsAny(s, " \t\r\n"):
			f.Add("secret", "must not contain spaces or line breaks")
		}
	}
	return f
}

// ValidateLogicModel checks one logic model's own fields.
func ValidateLogicModel(m LogicModel) FieldErrors {
	f := FieldErrors{}
	switch {
	case strings.TrimSpace(m.Code) == "":
		f.Add("code", "is required")
	case ValidTier(m.Code) || m.Code == "auto":
		f.Add("code", "is reserved for a tier; pick another code")
	case !codeRE.MatchString(m.Code):
		f.Add("code", "use 1–63 lower-case letters, digits, '.', '_', ':' or '-'")
	}
	switch m.Kind {
	case KindChat:
		if m.EmbeddingDimension != 0 {
			f.Add("embedding_dimension", "only embedding models have a dimension")
		}
	case KindEmbedding:
		if m.EmbeddingDimension < 0 || m.EmbeddingDimension > 65536 {
			f.Add("embedding_dimension", "must be between 1 and 65536")
		}
	default:
		f.Add("kind", "must be chat or embedding")
	}
	checkText(f, "query_prefix", m.QueryPrefix, 500)
	checkText(f, "document_prefix", m.DocumentPrefix, 500)
	checkText(f, "description", m.Description, 2000)
	return f
}

// MaxInflightTokens bounds a deployment's max_inflight_tokens.
const MaxInflightTokens = 1_000_000_000

// ValidateDeployment checks one deployment's own fields.
func ValidateDeployment(d Deployment) FieldErrors {
	f := FieldErrors{}
	if strings.TrimSpace(d.Provider) == "" {
		f.Add("provider", "is required")
	}
	if strings.TrimSpace(d.UpstreamModel) == "" {
		f.Add("upstream_model", "is required")
	} else if len(d.UpstreamModel) > 200 || strings.ContainsAny(d.UpstreamModel, " \t\r\n") {
		f.Add("upstream_model", "must be the vendor's model name, without spaces")
	}
	if msg := ValidateWeight(d.Weight, d.Parked); msg != "" {
		f.Add("weight", msg)
	}
	if d.MaxConcurrency < 0 || d.MaxConcurrency > 100000 {
		f.Add("max_concurrency", "must be 0 (unlimited) or a positive number")
	}
	if d.MaxInflightTokens < 0 || d.MaxInflightTokens > MaxInflightTokens {
		f.Add("max_inflight_tokens", "must be 0 (unlimited) or a positive number of tokens up to 1000000000")
	}
	for field, v := range map[string]Micros{"price_input": d.Prices.InputMicros, "price_output": d.Prices.OutputMicros, "price_cached": d.Prices.CachedMicros} {
		if v < 0 || v > MaxPriceMicros {
			f.Add(field, "must be a non-negative price per 1M tokens, at most 1000000")
		}
	}
	if c := d.Prices.Currency; c != "" && !currencyRE.MatchString(c) {
		f.Add("currency", "must be a three-letter code such as USD or CNY")
	}
	if d.EmbeddingBatchLimit < 0 || d.EmbeddingBatchLimit > 100000 {
		f.Add("embedding_batch_limit", "must be 0 (no limit) or a positive number")
	}
	checkPositiveMS(f, "timeout_ms", d.TimeoutMS, true)
	if b := d.Breaker; b != nil {
		if b.Window < 0 || b.MinCalls < 0 || b.OpenMS < 0 || b.HalfOpenProbes < 0 {
			f.Add("breaker", "values must not be negative")
		}
		if b.FailurePercent < 0 || b.FailurePercent > 100 {
			f.Add("breaker", "failure percent must be between 0 and 100")
		}
		if b.Window > 0 && b.MinCalls > b.Window {
			f.Add("breaker", "minimum calls cannot exceed the window")
		}
	}
	return f
}

// ValidateRouteGroup checks one route group's own fields.
func ValidateRouteGroup(g RouteGroup) FieldErrors {
	f := FieldErrors{}
	checkName(f, "name", g.Name)
	checkText(f, "description", g.Description, 500)
	if g.Tenant == "" && g.Fallback != "" && g.Fallback != FallbackNone {
		f.Add("fallback", "only a group dedicated to a tenant has a fallback policy")
	}
	if g.Fallback != "" && g.Fallback == g.Name {
		f.Add("fallback", "a group cannot fall back to itself")
	}
	validateResilience(f, g)
	validateAliases(f, g)
	return f
}

// ValidateTier checks a tier's timeouts. The dry-run reports a non-positive
// timeout found in stored or imported configuration as tier_timeout.
func ValidateTier(t Tier) FieldErrors {
	f := FieldErrors{}
	if !ValidTier(string(t.Name)) {
		f.Add("name", "must be fast, standard or deep")
	}
	checkPositiveMS(f, "timeout_ms", t.TimeoutMS, false)
	checkPositiveMS(f, "first_chunk_timeout_ms", t.FirstChunkTimeoutMS, false)
	if t.FirstChunkTimeoutMS > 0 && t.TimeoutMS > 0 && t.FirstChunkTimeoutMS > t.TimeoutMS {
		f.Add("first_chunk_timeout_ms", "must not exceed the tier timeout")
	}
	return f
}

// MaxWeight bounds a deployment's or candidate's weight.
const MaxWeight = 10000

// ValidateWeight checks a deployment's or candidate's weight: a share of
// traffic from 1 to 10000; a parked one may keep 0. A weight never parks:
// parking is its own flag (the Park button, "parked: true" in a snapshot).
func ValidateWeight(w int, parked bool) string {
	switch {
	case w < 0 || w > MaxWeight:
		return "must be between 1 and 10000; to take it out of traffic, park it"
	case w == 0 && !parked:
		return "must be at least 1; to take it out of traffic, park it"
	}
	return ""
}

// ValidateCandidate checks a candidate's fields.
func ValidateCandidate(c Candidate) FieldErrors {
	f := FieldErrors{}
	if strings.TrimSpace(c.LogicModel) == "" {
		f.Add("logic_model", "is required")
	}
	if c.Priority < 0 || c.Priority > 1000 {
		f.Add("priority", "must be between 0 and 1000 (lower is tried first)")
	}
	if msg := ValidateWeight(c.Weight, c.Parked); msg != "" {
		f.Add("weight", msg)
	}
	return f
}

// ValidateCaller checks one caller's own fields and limits.
func ValidateCaller(c Caller) FieldErrors {
	f := FieldErrors{}
	checkName(f, "name", c.Name)
	checkText(f, "business_line", c.BusinessLine, 200)
	if strings.TrimSpace(c.RouteGroup) == "" {
		f.Add("route_group", "is required")
	}
	if !ValidClass(c.PriorityClass) {
		f.Add("priority_class", "must be interactive, normal or batch")
	}
	for _, l := range c.Limits {
		if !ValidTier(string(l.Tier)) {
			f.Add("limits", "unknown tier "+string(l.Tier))
			continue
		}
		prefix := "limits." + string(l.Tier) + "."
		if l.RPM < 0 {
			f.Add(prefix+"rpm", "must be 0 (unlimited) or positive")
		}
		if l.TPM < 0 {
			f.Add(prefix+"tpm", "must be 0 (unlimited) or positive")
		}
		if l.DailyTokens < 0 {
			f.Add(prefix+"daily_tokens", "must be 0 (unlimited) or positive")
		}
	}
	if c.MonthlyBudgetMicros < 0 || c.MonthlyBudgetMicros > MaxBudgetMicros {
		f.Add("monthly_budget", "must be 0 (unlimited) or a positive amount up to 1000000000")
	}
	if cur := c.BudgetCurrency; cur != "" && !currencyRE.MatchString(cur) {
		f.Add("budget_currency", "must be a three-letter code such as USD or CNY")
	}
	return f
}

// maxServiceAccountJSON bounds a service-account key file kept as a secret.
const maxServiceAccountJSON = 16 << 10

// checkServiceAccount checks a key secret that is a JSON document: it must
// be a Google service-account key file (Vertex AI's credential). The
// message never quotes the document.
func checkServiceAccount(s string) string {
	if len(s) > maxServiceAccountJSON {
		return "is too long for a service-account key file"
	}
	var sa struct {
		Type        string `json:"type"`
		ClientEmail string `json:"client_email"`
		PrivateKey  string `json:"private_key"`
	}
	if err := json.Unmarshal([]byte(s), &sa); err != nil {
		return "is not valid JSON; paste the service account's whole key file"
	}
	if sa.Type != "service_account" || sa.ClientEmail == "" || !strings.Contains(sa.PrivateKey, "PRIVATE KEY") {
		return "must be a service-account key file (type service_account, with client_email and private_key)"
	}
	return ""
}
