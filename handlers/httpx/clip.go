package httpx

import "unicode/utf8"

// Truncated marks a caller's string that was cut before being echoed or
// logged.
const Truncated = "…[truncated]"

// ShownLen is how much of a caller's string (a path, a username) an error
// message or a log line repeats.
const ShownLen = 200

// Clip returns s cut to at most n bytes at a character boundary, with
// Truncated appended when it was cut; a caller's string is clipped before
// it is echoed in an answer or written to a log.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + Truncated
}
