package wire

import (
	"encoding/json"
	"testing"
)

// Every string reads back as itself from the JSON AppendString writes,
// quotes, backslashes, control characters and non-ASCII text included;
// text that is not UTF-8 reads back as encoding/json's.
func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `a "quoted" \ word`, "line\nbreak\r\ttab", "\x00\x01\x1f\x7f", "中文 — “quotes” 🙂", "</script>&", "\u2028\u2029", "bad \xff utf8"} {
		b := AppendString([]byte("["), s)
		var got string
		if err := json.Unmarshal(b[1:], &got); err != nil {
			t.Fatalf("%q: %s is not JSON: %v", s, b, err)
		}
		var want string // s, or encoding/json's reading of it when it is not UTF-8
		w, _ := json.Marshal(s)
		_ = json.Unmarshal(w, &want)
		if got != want {
			t.Errorf("%q: read back %q, want %q", s, got, want)
		}
	}
}
