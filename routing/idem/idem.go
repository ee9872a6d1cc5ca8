// Package idem is the request journey's vocabulary of the Idempotency-Key
// header: what a request's first arrival claims, what a repeat gets replayed,
// and how a request's content is fingerprinted. The store that keeps keys is
// store/redis/idempotency.
package idem

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// ErrInvalidKey reports an Idempotency-Key that is empty, longer than 255
// characters or not printable ASCII.
var ErrInvalidKey = errors.New("idempotency: invalid key")

// MaxKeyLen is the longest accepted Idempotency-Key.
const MaxKeyLen = 255

// ValidKey checks an Idempotency-Key: 1 to 255 printable ASCII characters.
func ValidKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return fmt.Errorf("%w: length %d, want 1 to %d", ErrInvalidKey, len(key), MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("%w: byte %#x at %d is not printable ASCII", ErrInvalidKey, c, i)
		}
	}
	return nil
}

// Fingerprint identifies a request's content: the same key with a different
// fingerprint is a conflict. Parts (e.g. the path and the body) are hashed
// with their lengths, so moving bytes between parts changes it.
func Fingerprint(parts ...[]byte) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// Result is a completed response, replayed to repeats of its key.
type Result struct {
	Status int
	// Header holds the response headers worth replaying (content-type and
	// the like). Credentials and cookies are dropped by Complete.
	Header map[string]string
	Body   []byte
	Stream bool // Body is an SSE transcript
}

// Claim is the ownership of a key by the request that runs it.
type Claim struct {
	CallerID int64
	Key      string
	// Token proves ownership; only the store that issued it reads it.
	Token string
}

// Outcome is what Begin found. Exactly one of Owned, Replay and Conflict is
// set.
type Outcome struct {
	// Owned: this request runs; it must end with Complete or Abandon.
	Owned bool
	Claim Claim
	// Replay is the stored result of an earlier request with this key and
	// the same fingerprint.
	Replay *Result
	// Conflict: the key was used with a different fingerprint (completed or
	// still running) — 422 idempotency_conflict.
	Conflict bool
	// Waited is how long Begin waited for an in-flight original.
	Waited time.Duration
}
