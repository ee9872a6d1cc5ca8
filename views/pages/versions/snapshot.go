package versions

import (
	"regexp"
	"strings"
)

// unlimitedRe matches a caller's tier limit written as 0, which means
// unlimited (config.TierLimit).
var unlimitedRe = regexp.MustCompile(`^\s*(rpm|tpm|daily_tokens): 0$`)

// SnapshotText is the snapshot as the version page shows it: the export
// text, with "# unlimited" after each tier limit of 0 so nobody reads
// "tpm: 0" as "no tokens". The comment keeps the text valid to import.
func SnapshotText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if unlimitedRe.MatchString(l) {
			lines[i] = l + "  # unlimited"
		}
	}
	return strings.Join(lines, "\n")
}
