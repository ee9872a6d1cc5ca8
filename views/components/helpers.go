// Package components holds small templ widgets shared by console pages.
package components

import (
	"slices"
	"sort"

	"github.com/a-h/templ"

	"switchyard/routing/config"
)

func merged(list []templ.Attributes) templ.Attributes {
	out := templ.Attributes{}
	for _, a := range list {
		for k, v := range a {
			out[k] = v
		}
	}
	return out
}

func otherErrors(errs config.FieldErrors, known []string) []string {
	var out []string
	for k, v := range errs {
		if !slices.Contains(known, k) {
			out = append(out, k+": "+v)
		}
	}
	sort.Strings(out)
	return out
}

// BreakerKind is the badge kind of a circuit-breaker state.
func BreakerKind(state string) string {
	switch state {
	case "closed":
		return "ok"
	case "half_open":
		return "warn"
	case "open":
		return "bad"
	}
	return ""
}

// SeverityWords says what a dry-run finding does to a publish, in words
// (severity is never shown by colour alone).
func SeverityWords(s config.Severity) string {
	switch s {
	case config.SeverityError:
		return "error: blocks publishing"
	case config.SeverityAcknowledge:
		return "blocks unless acknowledged"
	}
	return "warning"
}

// SeverityKind is the badge kind of a severity.
func SeverityKind(s config.Severity) string {
	switch s {
	case config.SeverityError:
		return "bad"
	case config.SeverityAcknowledge:
		return "warn"
	}
	return "info"
}
