// Package components holds small templ widgets shared by console pages.
package components

import (
	"slices"
	"sort"

	"switchyard/routing/config"
)

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
