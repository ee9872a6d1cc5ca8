package config

import (
	"strings"
	"testing"
)

func TestKeyFingerprint(t *testing.T) {
	cases := map[string]string{
		"sk-abcdefghijklmnop1234":           "sk-…1234",
		"sk-ant-api03-abcdefghijklmnopwxyz": "sk-ant-…wxyz",
		"AIzaSyA-1234567890abcdefg":         "AIz…defg",
		"short":                             "…rt",
		"":                                  "…",
	}
	for in, want := range cases {
		if got := KeyFingerprint(in); got != want {
			t.Errorf("KeyFingerprint(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPresentedKeyFingerprint(t *testing.T) {
	key := "sy-Ab12CdEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
	fp := PresentedKeyFingerprint(key)
	if !strings.HasPrefix(fp, "sy-Ab12Cd…") || len(fp) != len("sy-Ab12Cd…")+6 {
		t.Errorf("our key: %q, want sy-Ab12Cd… and six hex digits", fp)
	}
	if strings.Contains(fp, "EFGH") {
		t.Errorf("the fingerprint %q shows the secret part of the key", fp)
	}
	if other := PresentedKeyFingerprint(key + "x"); other == fp {
		t.Errorf("two keys with one prefix share the fingerprint %q", fp)
	}
	for _, foreign := range []string{"sk-proj-secretsecretsecret", "sy-", "sy-ab<cd>efghij", "x"} {
		got := PresentedKeyFingerprint(foreign)
		if !strings.HasPrefix(got, "…") || len(got) != len("…")+8 {
			t.Errorf("foreign key %q: %q, want … and eight hex digits only", foreign, got)
		}
	}
	if PresentedKeyFingerprint("") != "" {
		t.Error("no key has a fingerprint")
	}
}
