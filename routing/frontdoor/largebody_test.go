package frontdoor

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// largeTurns is a body of about size bytes of short alternating turns
// after head (`{"model":…,` up to the messages): the shape that amplifies
// a parser's memory most, many tiny messages.
func largeTurns(head string, size int) []byte {
	var sb strings.Builder
	sb.Grow(size + 64)
	sb.WriteString(head)
	sb.WriteString(`"messages":[`)
	for i := 0; sb.Len() < size; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"role":%q,"content":"turn %d"}`, role, i)
	}
	sb.WriteString(`,{"role":"user","content":"end"}]}`)
	return []byte(sb.String())
}

// allocatedBy is the bytes f allocates on the heap.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Parsing a large body of many tiny turns allocates a bounded multiple of
// its size: the typed view (a Message and a text part per turn) and, for
// the Messages door, the translated chat body — never a document tree of
// maps per turn, which cost thirty times the body.
func TestParseLargeBodyAllocations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  []byte
		parse func([]byte) (int, error)
		max   float64 // allocated bytes per body byte
	}{
		{"chat", largeTurns(`{"model":"standard","max_tokens":16,`, 4<<20), func(b []byte) (int, error) {
			r, err := ParseChatRequest(b)
			if err != nil {
				return 0, err
			}
			return len(r.Messages), nil
		}, 5},
		{"messages", largeTurns(`{"model":"standard","max_tokens":16,`, 4<<20), func(b []byte) (int, error) {
			r, err := ParseMessagesRequest(b)
			if err != nil {
				return 0, err
			}
			return len(r.Messages), nil
		}, 6},
		{"responses", largeInput(`{"model":"standard","max_output_tokens":16,`, 4<<20), func(b []byte) (int, error) {
			r, err := ParseResponsesRequest(b)
			if err != nil {
				return 0, err
			}
			return len(r.Chat.Messages), nil
		}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n int
			var err error
			alloc := allocatedBy(func() { n, err = tc.parse(tc.body) })
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.Count(string(tc.body), `"role"`); n != want {
				t.Fatalf("%d messages, want %d", n, want)
			}
			per := float64(alloc) / float64(len(tc.body))
			t.Logf("%s: %.1f MB body, %.1f MB allocated (%.2f× the body)", tc.name, float64(len(tc.body))/(1<<20), float64(alloc)/(1<<20), per)
			if per > tc.max {
				t.Errorf("parsing allocated %.2f× the body, want at most %g×", per, tc.max)
			}
		})
	}
}

// BenchmarkParseLarge parses 9 MB bodies of 300,000 short turns (the shape
// a probe used to amplify the gateway's memory) at each door.
func BenchmarkParseLarge(b *testing.B) {
	head := `{"model":"standard","max_tokens":16,`
	for _, tc := range []struct {
		name  string
		body  []byte
		parse func([]byte) error
	}{
		{"chat", largeTurns(head, 9<<20), func(b []byte) error { _, err := ParseChatRequest(b); return err }},
		{"messages", largeTurns(head, 9<<20), func(b []byte) error { _, err := ParseMessagesRequest(b); return err }},
		{"responses", largeInput(head, 9<<20), func(b []byte) error { _, err := ParseResponsesRequest(b); return err }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.body)))
			for b.Loop() {
				if err := tc.parse(tc.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// largeInput is a Responses body of about size bytes of short input items.
func largeInput(head string, size int) []byte {
	b := largeTurns(head, size)
	return []byte(strings.Replace(string(b), `"messages":[`, `"input":[`, 1))
}

// The translated chat body carries every text as sent, whatever it needs
// escaped, in the chat body written turn by turn.
func TestMessagesTranslationEscapes(t *testing.T) {
	body := `{"model":"m","max_tokens":9,"system":"say \"hi\"\n<b>","messages":[` +
		`{"role":"user","content":"tab\there \u00e9 \u2028 \\ end"},` +
		`{"role":"assistant","content":[{"type":"text","text":"q\"1"},{"type":"tool_use","id":"c\"1","name":"f","input":{"a":"\"x\""}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c\"1","content":"bad \"input\"","is_error":true},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iV/BOR+w=="}}]}]}`
	r, err := ParseMessagesRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	got := []string{r.Messages[0].Text(), r.Messages[1].Text(), r.Messages[2].Text(),
		r.Messages[2].ToolCalls[0].ID, r.Messages[2].ToolCalls[0].Arguments,
		r.Messages[3].ToolCallID, r.Messages[3].Text(), r.Messages[4].Content[0].ImageURL}
	want := []string{"say \"hi\"\n<b>", "tab\there é \u2028 \\ end", "q\"1",
		"c\"1", `{"a":"\"x\""}`,
		"c\"1", "[tool error] bad \"input\"", "data:image/png;base64,iV/BOR+w=="}
	if len(r.Messages) != 5 {
		t.Fatalf("%d messages: %s", len(r.Messages), r.Body)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("value %d: %q, want %q", i, got[i], want[i])
		}
	}
}
