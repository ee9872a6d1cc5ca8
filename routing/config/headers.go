package config

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
)

// Headers toward a vendor. A provider may send static extra headers with
// every request (a vendor's organization or beta flags; a secret one is
// sealed like a provider key) and may let named caller headers through (an
// allowlist, e.g. anthropic-beta or OpenAI-Organization). Nothing else a
// caller sends reaches a vendor, and the names that carry credentials or
// frame the HTTP message can be neither set nor passed (ReservedHeader).

// SecretSet is how a secret header's value is shown everywhere — console,
// admin API, snapshot text, diffs and exports: that it is set, never what.
const SecretSet = "••• set"

// ProviderHeader is a static header sent with every request to a provider.
type ProviderHeader struct {
	Name string `yaml:"name" json:"name"`
	// Value is a plain header's value. A secret header's value lives sealed
	// outside the configuration and reads as SecretSet; on input a new value
	// replaces it, and SecretSet or "" keeps the stored one.
	Value  string `yaml:"value" json:"value"`
	Secret bool   `yaml:"secret,omitempty" json:"secret,omitempty"`
	// SecretID names a secret header's sealed value (set by the store).
	SecretID int64 `yaml:"secret_id,omitempty" json:"secret_id,omitempty"`
}

// KeepsSecret reports a secret header whose input leaves the stored value
// as it is.
func (h ProviderHeader) KeepsSecret() bool {
	return h.Secret && (h.Value == "" || h.Value == SecretSet)
}

// Limits of the header lists.
const (
	MaxProviderHeaders   = 20
	MaxPassHeaders       = 20
	maxHeaderValueLength = 4096
)

// reservedHeaders are never set or passed toward a vendor: credentials
// (ours and the caller's), cookies, and what frames the HTTP message.
var reservedHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "x-api-key": true, "api-key": true, "x-goog-api-key": true,
	"cookie": true, "set-cookie": true,
	"host": true, "content-length": true, "content-type": true, "content-encoding": true, "transfer-encoding": true,
	"connection": true, "keep-alive": true, "proxy-connection": true, "te": true, "trailer": true, "upgrade": true,
	"expect": true, "accept-encoding": true,
}

// ReservedHeader reports a header name that never goes to a vendor from the
// configuration or from a caller.
func ReservedHeader(name string) bool { return reservedHeaders[strings.ToLower(name)] }

// validHeaderName is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue has no control characters but tab (no line breaks).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// checkHeaders validates a provider's static headers and passthrough list.
func checkHeaders(f FieldErrors, p Provider) {
	if len(p.Headers) > MaxProviderHeaders {
		f.Add("headers", "at most 20 extra headers")
	}
	seen := map[string]bool{}
	for _, h := range p.Headers {
		name := strings.TrimSpace(h.Name)
		switch {
		case !validHeaderName(name):
			f.Add("headers", "header name "+quoteName(h.Name)+" is not a valid HTTP header name")
		case ReservedHeader(name):
			f.Add("headers", name+" cannot be set: credentials, cookies and message framing are the gateway's")
		case seen[strings.ToLower(name)]:
			f.Add("headers", name+" is listed twice")
		case h.KeepsSecret():
		case h.Value == "" && !h.Secret:
			f.Add("headers", name+" needs a value")
		case len(h.Value) > maxHeaderValueLength:
			f.Add("headers", name+": the value must be at most 4096 characters")
		case !validHeaderValue(h.Value) || h.Value != strings.TrimSpace(h.Value):
			f.Add("headers", name+": the value must be one line without control characters or surrounding spaces")
		}
		seen[strings.ToLower(name)] = true
	}
	if len(p.PassHeaders) > MaxPassHeaders {
		f.Add("pass_headers", "at most 20 passthrough headers")
	}
	passed := map[string]bool{}
	for _, n := range p.PassHeaders {
		name := strings.TrimSpace(n)
		switch {
		case !validHeaderName(name):
			f.Add("pass_headers", quoteName(n)+" is not a valid HTTP header name")
		case ReservedHeader(name):
			f.Add("pass_headers", name+" cannot be passed: caller keys, cookies and message framing never reach a vendor")
		case passed[strings.ToLower(name)]:
			f.Add("pass_headers", name+" is listed twice")
		case seen[strings.ToLower(name)]:
			f.Add("pass_headers", name+" is also a static header; keep one")
		}
		passed[strings.ToLower(name)] = true
	}
}

func quoteName(s string) string { return `"` + strings.ToValidUTF8(s, "?") + `"` }

// CanonicalHeaders puts a provider's header lists into canonical form:
// canonical names, sorted; a stored secret header's value reads SecretSet.
func CanonicalHeaders(p *Provider) {
	if len(p.Headers) == 0 {
		p.Headers = nil
	}
	for i := range p.Headers {
		h := &p.Headers[i]
		h.Name = http.CanonicalHeaderKey(strings.TrimSpace(h.Name))
		if h.Secret && h.SecretID != 0 {
			h.Value = SecretSet
		}
	}
	slices.SortFunc(p.Headers, func(a, b ProviderHeader) int { return cmp.Compare(a.Name, b.Name) })
	if len(p.PassHeaders) == 0 {
		p.PassHeaders = nil
	}
	for i, n := range p.PassHeaders {
		p.PassHeaders[i] = http.CanonicalHeaderKey(strings.TrimSpace(n))
	}
	slices.Sort(p.PassHeaders)
}

// DefaultPassHeaders are the caller headers a provider of a protocol lets
// through when its own list names none: an Anthropic vendor gets the
// caller's anthropic-beta and anthropic-version, the Messages API's
// switches for the features and the version Claude Code and the Anthropic
// SDKs use (a list of the operator's own replaces it). A translated call
// still speaks the version its translation was written for.
var DefaultPassHeaders = map[Protocol][]string{
	ProtocolAnthropic: {"Anthropic-Beta", "Anthropic-Version"},
}

// HeaderSecret is a secret header's sealed value, opened, with the provider
// it was sealed for (a value is never sent to another provider's vendor).
type HeaderSecret struct {
	ProviderID int64
	Value      string
}

// Outgoing is what an attempt on this provider adds to the vendor request:
// the static headers, and the caller's headers the allowlist names, as the
// caller sent them. nil when the provider sets and passes nothing.
func (p *RProvider) Outgoing(caller http.Header) http.Header {
	if len(p.Headers) == 0 && len(p.Pass) == 0 {
		return nil
	}
	h := make(http.Header, len(p.Headers)+len(p.Pass))
	for k, v := range p.Headers {
		h[k] = v
	}
	for _, name := range p.Pass {
		if v := caller[name]; len(v) > 0 {
			h[name] = v
		}
	}
	return h
}
