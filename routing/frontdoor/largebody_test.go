package frontdoor

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"switchyard/routing/adapter"
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
// its size. A request forwarded as sent needs no typed view and no
// translation: the chat door checks the messages without keeping them, the
// Messages and Responses doors check their chat translation turn by turn
// without writing it (writing it cost about the body's size), so parsing
// allocates a small fraction of the body. The chat body and the view a
// translating adapter reads (a Message and a text part per turn) are built
// on first use; parse and view together stay a few times the body — a
// document tree of maps per turn cost thirty.
func TestParseLargeBodyAllocations(t *testing.T) {
	head := `{"model":"standard","max_tokens":16,`
	for _, tc := range []struct {
		name         string
		body         []byte
		parse        func([]byte) (*adapter.ChatRequest, error)
		parsed, view float64 // allocated bytes per body byte: parsing, and with the chat body and view
	}{
		{"chat", largeTurns(head, 4<<20), ParseChatRequest, 0.2, 5},
		{"messages", largeTurns(head, 4<<20), ParseMessagesRequest, 0.1, 6},
		{"responses", largeInput(`{"model":"standard","max_output_tokens":16,`, 4<<20), func(b []byte) (*adapter.ChatRequest, error) {
			r, err := ParseResponsesRequest(b)
			if err != nil {
				return nil, err
			}
			return r.Chat, nil
		}, 0.1, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *adapter.ChatRequest
			var err error
			parsed := allocatedBy(func() { r, err = tc.parse(tc.body) })
			if err != nil {
				t.Fatal(err)
			}
			var n int
			viewed := parsed + allocatedBy(func() { n = len(r.Conversation()) })
			if want := strings.Count(string(tc.body), `"role"`); n != want {
				t.Fatalf("%d messages, want %d", n, want)
			}
			size := float64(len(tc.body))
			t.Logf("%.1f MB body: parsing allocated %.2f× its size, with the typed view %.2f×", size/(1<<20), float64(parsed)/size, float64(viewed)/size)
			if per := float64(parsed) / size; per > tc.parsed {
				t.Errorf("parsing allocated %.2f× the body, want at most %g×", per, tc.parsed)
			}
			if per := float64(viewed) / size; per > tc.view {
				t.Errorf("parsing and the typed view allocated %.2f× the body, want at most %g×", per, tc.view)
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
	got := []string{r.Conversation()[0].Text(), r.Conversation()[1].Text(), r.Conversation()[2].Text(),
		r.Conversation()[2].ToolCalls[0].ID, r.Conversation()[2].ToolCalls[0].Arguments,
		r.Conversation()[3].ToolCallID, r.Conversation()[3].Text(), r.Conversation()[4].Content[0].ImageURL}
	want := []string{"say \"hi\"\n<b>", "tab\there é \u2028 \\ end", "q\"1",
		"c\"1", `{"a":"\"x\""}`,
		"c\"1", "[tool error] bad \"input\"", "data:image/png;base64,iV/BOR+w=="}
	if len(r.Conversation()) != 5 {
		t.Fatalf("%d messages: %s", len(r.Conversation()), r.ChatBody())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("value %d: %q, want %q", i, got[i], want[i])
		}
	}
}
