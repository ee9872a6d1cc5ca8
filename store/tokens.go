package store

import (
	"crypto/rand"
	"crypto/sha256"
	"math/big"
)

const tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// newToken returns prefix + 40 random base62 characters (about 238 bits) and
// the short public prefix shown in lists.
func newToken(prefix string) (token, shown string) {
	b := make([]byte, 40)
	n := big.NewInt(int64(len(tokenAlphabet)))
	for i := range b {
		v, _ := rand.Int(rand.Reader, n)
		b[i] = tokenAlphabet[v.Int64()]
	}
	token = prefix + string(b)
	return token, token[:len(prefix)+6]
}

// hashToken hashes a high-entropy token. A fast hash is right here: the
// token is random, so there is nothing for a slow hash to protect, and the
// data plane looks one up on every request.
func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// maxTokenLen bounds a presented token: ours are 44 characters.
const maxTokenLen = 256

// validTokenText reports whether a presented token is worth looking up: not
// empty, not absurdly long. Any bytes hash fine, so nothing else is refused.
func validTokenText(token string) bool {
	return token != "" && len(token) <= maxTokenLen
}
