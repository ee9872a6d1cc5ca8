package config

import (
	"encoding/hex"
	"encoding/json"
	"strings"
)

// KeyFingerprint shows a secret's vendor prefix and last four characters, e.g.
// "sk-…abcd"; short secrets show only their last two.
func KeyFingerprint(secret string) string {
	secret = strings.TrimSpace(secret)
	if strings.HasPrefix(secret, "{") {
		return serviceAccountFingerprint(secret)
	}
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

// CallerKeyShownLen is how much of a caller key the console shows as its
// prefix: "sy-" and six characters (what store's key maker keeps).
const CallerKeyShownLen = 9

// CallerKeyFingerprint names a caller key by its shown prefix and the first
// three bytes of its SHA-256 (the hash caller_keys stores), e.g.
// "sy-Ab12Cd…3f9a0c": the console computes it for every known key, the
// data plane for the key a request presents (PresentedKeyFingerprint).
func CallerKeyFingerprint(shown string, hash []byte) string {
	if len(hash) < 3 {
		return shown + "…"
	}
	return shown + "…" + hex.EncodeToString(hash[:3])
}

// PresentedKeyFingerprint is what a call log keeps of the key a request
// presented, never the key: a key shaped like ours gets its
// CallerKeyFingerprint, anything else (a vendor key sent by mistake, a
// random string) only "…" and four bytes of its hash, so no character of
// a foreign secret is stored. "" when no key was presented.
func PresentedKeyFingerprint(key string) string {
	if key == "" {
		return ""
	}
	return PresentedKeyFingerprintHashed(key, HashCallerKey(key))
}

// PresentedKeyFingerprintHashed is PresentedKeyFingerprint given the
// key's HashCallerKey (the data plane hashes a presented key once).
func PresentedKeyFingerprintHashed(key string, h [32]byte) string {
	if key == "" {
		return ""
	}
	if len(key) > CallerKeyShownLen && strings.HasPrefix(key, "sy-") && tokenText(key[3:CallerKeyShownLen]) {
		return CallerKeyFingerprint(key[:CallerKeyShownLen], h[:])
	}
	return "…" + hex.EncodeToString(h[:4])
}

// tokenText: only letters and digits, the alphabet of our keys.
func tokenText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// serviceAccountFingerprint shows a service-account key file as set, with
// the last four characters of its private key id (which is not secret) to
// tell several apart; nothing of the key itself.
func serviceAccountFingerprint(doc string) string {
	var sa struct {
		KeyID string `json:"private_key_id"`
	}
	if json.Unmarshal([]byte(doc), &sa) != nil || len(sa.KeyID) < 4 {
		return SecretSet
	}
	return SecretSet + " …" + sa.KeyID[len(sa.KeyID)-4:]
}

// CredentialKind is how a key of a provider of protocol p authenticates,
// read from its fingerprint (which keeps a secret's first characters):
// Azure's "api_key" or "entra" (client credentials, "entra:…"); Bedrock's
// "aws_access_key" or "aws_default_chain" ("default-chain"); "" for the
// other protocols, whose keys are all API keys.
func CredentialKind(p Protocol, fingerprint string) string {
	switch p {
	case ProtocolAzure:
		if strings.HasPrefix(fingerprint, "ent…") {
			return "entra"
		}
		return "api_key"
	case ProtocolBedrock:
		if strings.HasPrefix(fingerprint, "def…") {
			return "aws_default_chain"
		}
		return "aws_access_key"
	}
	return ""
}
