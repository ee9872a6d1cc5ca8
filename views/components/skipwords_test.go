package components

import (
	"strings"
	"testing"

	"switchyard/routing"
	"switchyard/routing/reason"
)

// Every skip code has the console's sentence: walking reason.Codes (which
// a test in routing/reason proves complete), none falls back to the
// caller's short words.
func TestEverySkipCodeHasWords(t *testing.T) {
	for _, c := range reason.Codes {
		r := reason.Reason{Code: c, Detail: "detail", Provider: "p", Capability: "vision", Kind: "chat", Want: "embedding", Max: 3,
			Protocol: "openai", Param: "n", Tier: "fast", Percent: 10, PerSecond: 1, WindowMS: 10000}
		got, ok := skipSentence(r)
		if !ok || got == "" {
			t.Errorf("skip code %q has no words in SkipWords", c)
		}
	}
}

func TestSkipWordsFallsBackToTheCallerWords(t *testing.T) {
	got := SkipWords(reason.Reason{Code: "from_a_newer_build"})
	if !strings.HasPrefix(got, "skipped: ") || !strings.Contains(got, "from_a_newer_build") {
		t.Errorf("SkipWords(unknown) = %q", got)
	}
}

// The counted causes of a tier's verdict: every code reads as words, none
// as the bare code a caller's message would carry.
func TestEveryCauseCodeHasWords(t *testing.T) {
	for _, c := range reason.Codes {
		r := reason.Reason{Code: c, Detail: "detail", Provider: "p", Capability: "vision", Kind: "chat", Want: "embedding", Max: 3,
			Protocol: "openai", Param: "n", Tier: "fast", Percent: 10, PerSecond: 1, WindowMS: 10000}
		got := CauseWords(routing.Cause{Count: 2, Reason: r})
		if !strings.HasPrefix(got, "2") && !strings.Contains(got, "(2 deployment(s))") {
			t.Errorf("cause %q: %q does not say how many", c, got)
		}
		if short := r.String(); c != reason.Legacy && strings.HasSuffix(got, "× "+short) { // a legacy reason is only its detail
			t.Errorf("cause %q reads as the caller's words %q, not the console's", c, got)
		}
	}
}
