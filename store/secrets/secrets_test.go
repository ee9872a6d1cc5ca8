package secrets

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealOpen(t *testing.T) {
	key, err := ParseKey(NewKey())
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "sk-proj-very-secret-value-1234"
	sealed := s.Seal(secret, []byte("key:7"))
	if bytes.Contains(sealed, []byte(secret)) || bytes.Contains(sealed, []byte("secret-value")) {
		t.Fatal("sealed bytes contain the plaintext")
	}
	got, err := s.Open(sealed, []byte("key:7"))
	if err != nil || got != secret {
		t.Fatalf("open = %q, %v", got, err)
	}
	if _, err := s.Open(sealed, []byte("key:8")); !errors.Is(err, ErrOpen) {
		t.Fatalf("opening under other additional data: %v", err)
	}
	other, _ := NewSealer(bytes.Repeat([]byte{1}, 32))
	if _, err := other.Open(sealed, []byte("key:7")); !errors.Is(err, ErrOpen) {
		t.Fatalf("opening with another key: %v", err)
	}
	if _, err := s.Open([]byte{1, 2}, nil); !errors.Is(err, ErrOpen) {
		t.Fatalf("short input: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	for _, bad := range []string{"", "short", "zz" + NewKey()[2:], NewKey()[:62]} {
		if _, err := ParseKey(bad); !errors.Is(err, ErrKey) {
			t.Errorf("ParseKey(%q) = %v", bad, err)
		}
	}
	if _, err := ParseKey("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="); err != nil {
		t.Errorf("base64 key refused: %v", err)
	}
}
