package adapter

import (
	"regexp"
	"strings"
)

// Redacted replaces whatever Scrub takes out of a message.
const Redacted = "[redacted]"

// Scrub takes anything that looks like a credential out of a vendor's
// message before it is shown to a caller: API keys (sk-…, sk-ant-…,
// sk-proj-…, AIza…, and a few other vendors' prefixes), Bearer tokens,
// key=… and api_key: … values, JWTs, key fingerprints and vendor-masked
// keys (sk-…XYZW, sk-*****XYZW), and long hex or base64 tokens. Ordinary
// words, numbers, model names and paths are kept, so a message such as a
// context-length overflow still says what to fix.
func Scrub(s string) string {
	if s == "" {
		return s
	}
	for _, r := range scrubRules {
		s = r.re.ReplaceAllStringFunc(s, r.repl)
	}
	return s
}

type scrubRule struct {
	re   *regexp.Regexp
	repl func(match string) string
}

// keyChars is what a key, a fingerprint or a masked key is made of.
const keyChars = `A-Za-z0-9_\-*…`

var scrubRules = []scrubRule{
	// Authorization: Bearer <token>
	{regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/=\-*…]{6,}`), func(string) string { return "Bearer " + Redacted }},
	// api_key=…, access_token: "…", password=…, x-api-key: …
	{regexp.MustCompile(`(?i)\b(?:x-goog-api-key|x-api-key|api[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|client[_-]?secret|secret[_-]?key|password)"?\s*[=:]\s*["']?[^\s"'&,;)]{4,}`), keepName},
	// ?key=… (Google puts the key in the query) and token=…
	{regexp.MustCompile(`(?i)\b(?:key|token)=[^\s"'&,;)]{4,}`), keepName},
	// JWTs: header.payload[.signature]
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}(?:\.[A-Za-z0-9_\-]*)?`), redact},
	// OpenAI, Anthropic and compatible keys, our fingerprints (sk-…XYZW) and
	// vendors' masks (sk-*****XYZW, sk-...XYZW). A word such as "sk-learn"
	// (short, no digit, no mask) is kept.
	{regexp.MustCompile(`\bsk-(?:[` + keyChars + `]|\.{2,})+`), func(m string) string {
		rest := m[len("sk-"):]
		if len(rest) >= 8 || strings.ContainsAny(rest, "0123456789*….") {
			return Redacted
		}
		return m
	}},
	// Google API keys.
	{regexp.MustCompile(`\bAIza[` + keyChars + `]{6,}`), redact},
	// Other vendors' key prefixes: xAI, Groq, Perplexity, Hugging Face,
	// Replicate, GitHub, GitLab, Slack, AWS access keys, Stripe-style keys.
	{regexp.MustCompile(`\b(?:xai-|gsk_|pplx-|hf_|r8_|ghp_|gho_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|(?:sk|rk|pk)_(?:live|test)_)[` + keyChars + `]{8,}`), redact},
	// Fingerprints and masks without a known prefix: abc…WXYZ, ****WXYZ.
	{regexp.MustCompile(`[A-Za-z0-9_\-]*(?:…|\*{3,})[A-Za-z0-9_\-]{2,}`), redact},
	// Long random tokens (hex, base64, base64url), told from words and
	// model names by their length and their mix of digits and letters.
	{regexp.MustCompile(`[A-Za-z0-9+/=_\-]{16,}`), func(m string) string {
		if tokenLike(m) {
			return Redacted
		}
		return m
	}},
}

func redact(string) string { return Redacted }

// keepName keeps "name=" or "name: " of a name-value match and redacts the
// value.
func keepName(m string) string {
	i := strings.IndexAny(m, "=:")
	j := i + 1
	for j < len(m) && (m[j] == ' ' || m[j] == '\t' || m[j] == '"' || m[j] == '\'') {
		j++
	}
	return m[:j] + Redacted
}

// tokenLike reports a run with a segment (between /, +, -, _ and =) that
// looks random: at least 16 characters mixing digits and letters, or at
// least 32 mixing upper and lower case.
func tokenLike(run string) bool {
	for _, seg := range strings.FieldsFunc(run, func(r rune) bool {
		return r == '/' || r == '+' || r == '-' || r == '_' || r == '='
	}) {
		if len(seg) < 16 {
			continue
		}
		var digit, upper, lower bool
		for i := 0; i < len(seg); i++ {
			switch c := seg[i]; {
			case c >= '0' && c <= '9':
				digit = true
			case c >= 'A' && c <= 'Z':
				upper = true
			case c >= 'a' && c <= 'z':
				lower = true
			}
		}
		if digit && (upper || lower) || len(seg) >= 32 && upper && lower {
			return true
		}
	}
	return false
}
