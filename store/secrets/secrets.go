// Package secrets seals provider API keys at rest with AES-256-GCM and makes
// the short fingerprints that are the only part of a secret ever displayed.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ErrKey reports an unusable SWITCHYARD_SECRET_KEY.
var ErrKey = errors.New("secrets: the secret key must be 32 bytes, given as 64 hex digits or base64")

// ErrOpen reports a ciphertext that does not decrypt under this key.
var ErrOpen = errors.New("secrets: cannot decrypt (wrong SWITCHYARD_SECRET_KEY, or corrupted data)")

// Sealer encrypts and decrypts secrets with one key.
type Sealer struct{ aead cipher.AEAD }

// ParseKey decodes a 32-byte key from hex or base64 text.
func ParseKey(text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	if b, err := hex.DecodeString(text); err == nil && len(b) == 32 {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(text); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, ErrKey
}

// NewKey returns a fresh random key as hex text.
func NewKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewSealer returns a Sealer for a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, ErrKey
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal returns nonce || ciphertext. The additional data binds the ciphertext
// to its row, so a sealed secret copied onto another key row will not open.
func (s *Sealer) Seal(plaintext string, additional []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, []byte(plaintext), additional)
}

// Open reverses Seal.
func (s *Sealer) Open(sealed, additional []byte) (string, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return "", ErrOpen
	}
	pt, err := s.aead.Open(nil, sealed[:n], sealed[n:], additional)
	if err != nil {
		return "", ErrOpen
	}
	return string(pt), nil
}
