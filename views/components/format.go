package components

import (
	"strconv"
	"strings"
	"time"
)

// I64 formats an int64 (an id or a count) in decimal.
func I64(v int64) string { return strconv.FormatInt(v, 10) }

// Itoa formats an int in decimal.
func Itoa(v int) string { return strconv.Itoa(v) }

// Ago says how long before now t was: seconds, minutes or hours up to two
// days, then the UTC time to the minute. The zero time is "never".
func Ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + " s ago"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + " min ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + " h ago"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// When is a time in UTC to the minute.
func When(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// WhenExact is a time in UTC to the second; the zero time is "—".
func WhenExact(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// Dash shows "—" for an empty field.
func Dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// WithArticle puts "a" or "an" before a word by its first letter ("an
// embedding model", "a chat request").
func WithArticle(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}
