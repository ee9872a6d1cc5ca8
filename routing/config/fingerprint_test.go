package config

import "testing"

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
