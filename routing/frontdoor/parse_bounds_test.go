package frontdoor

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// A model over MaxModelLen is refused with its own code, and the message
// says how long it was without repeating it.
func TestModelBounded(t *testing.T) {
	long := strings.Repeat("m", 5<<20)
	for name, parse := range map[string]func([]byte) error{
		"chat": func(b []byte) error {
			_, err := ParseChatRequest(b)
			return err
		},
		"embeddings": func(b []byte) error {
			_, err := ParseEmbeddingRequest(b)
			return err
		},
	} {
		body := []byte(`{"model":"` + long + `","messages":[{"role":"user","content":"hi"}],"input":"x"}`)
		err := parse(body)
		var re *RequestError
		if !errors.As(err, &re) || re.Code != CodeModelTooLong || re.Param != "model" {
			t.Fatalf("%s: %v, want a model_too_long RequestError", name, err)
		}
		if len(re.Message) > 100 || !strings.Contains(re.Message, "at most 256 bytes, got 5242880") {
			t.Fatalf("%s: message %.200q", name, re.Message)
		}
		ok := []byte(`{"model":"` + strings.Repeat("m", MaxModelLen) + `","messages":[{"role":"user","content":"hi"}],"input":"x"}`)
		if err := parse(ok); err != nil {
			t.Fatalf("%s: a model of exactly %d bytes: %v", name, MaxModelLen, err)
		}
	}
}

// Caller values quoted in parse errors are cut to a few dozen bytes.
func TestParseErrorsDoNotEchoLongValues(t *testing.T) {
	big := strings.Repeat("é", 50000)
	digits := strings.Repeat("9", 100000)
	chat := func(extra, msg string) []byte {
		return []byte(`{"model":"fast"` + extra + `,"messages":[` + msg + `]}`)
	}
	user := `{"role":"user","content":"hi"}`
	for name, body := range map[string][]byte{
		"tool_choice": chat(`,"tool_choice":"`+big+`"`, user),
		"max_tokens":  chat(`,"max_tokens":`+digits, user),
		"fraction":    chat(`,"max_tokens":1.`+strings.Repeat("1", 100000), user),
		"temperature": chat(`,"temperature":`+digits, user),
	} {
		_, err := ParseChatRequest(body)
		var re *RequestError
		if !errors.As(err, &re) {
			t.Fatalf("%s: %v", name, err)
		}
		if len(re.Message) > 200 || !strings.Contains(re.Message, "…[truncated]") || !utf8.ValidString(re.Message) {
			t.Errorf("%s: message of %d bytes: %.200q", name, len(re.Message), re.Message)
		}
	}
	for name, body := range map[string]string{
		"encoding_format": `{"model":"e","input":"x","encoding_format":"` + big + `"}`,
		"input_type":      `{"model":"e","input":"x","input_type":"` + big + `"}`,
	} {
		_, err := ParseEmbeddingRequest([]byte(body))
		var re *RequestError
		if !errors.As(err, &re) || len(re.Message) > 200 || !strings.Contains(re.Message, "…[truncated]") {
			t.Errorf("%s: %.200v", name, err)
		}
	}
}

func TestParseShow(t *testing.T) {
	if got := parseShow("short"); got != "short" {
		t.Fatalf("short: %q", got)
	}
	// 63 ASCII bytes then a two-byte character across the cut.
	s := strings.Repeat("a", 63) + "é" + "bbb"
	if got := parseShow(s); got != strings.Repeat("a", 63)+"…[truncated]" {
		t.Fatalf("cut inside a character: %q", got)
	}
}
