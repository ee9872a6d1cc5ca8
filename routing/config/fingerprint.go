package config

import "strings"

// KeyFingerprint shows a secret's vendor prefix and last four characters, e.g.
// "sk-…abcd"; short secrets show only their last two.
func KeyFingerprint(secret string) string {
	secret = strings.TrimSpace(secret)
	if len(secret) < 12 {
		if len(secret) <= 2 {
			return "…"
		}
		return "…" + secret[len(secret)-2:]
	}
	prefix := secret[:3]
	for _, known := range []string{"sk-ant-", "sk-proj-"} {
		if strings.HasPrefix(secret, known) && len(secret) >= len(known)+12 {
			prefix = known
		}
	}
	return prefix + "…" + secret[len(secret)-4:]
}
