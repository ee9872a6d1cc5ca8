package adapter_test

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/frontdoor"
)

// tinyTurns is a body of about size bytes of tiny alternating turns after
// head, under key ("messages" or "input"): the shape whose translation is
// as large as the body itself.
func tinyTurns(head, key string, size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 64)
	b.WriteString(head + `"` + key + `":[{"role":"developer","content":"terse"}`)
	if key == "messages" {
		b.Reset()
		b.WriteString(head + `"messages":[{"role":"user","content":"first"}`)
	}
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `,{"role":%q,"content":"t%d"}`, [2]string{"assistant", "user"}[i%2], i%10)
	}
	b.WriteString(`,{"role":"user","content":"end"}]}`)
	return b.Bytes()
}

// heapAllocated is the bytes f allocates on the heap.
func heapAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// The OpenAI adapter writes a front door's translation straight into the
// body it sends: it never holds the translated chat body whole beside its
// copy (the two, with the caller's body, made a translated request cost
// three times its bytes in flight). Its body is byte for byte the one
// copied from the whole translation, vendor quirks included.
func TestOpenAIWritesTranslationStraight(t *testing.T) {
	const size = 4 << 20
	doors := []struct {
		name  string
		body  []byte
		parse func([]byte) (*adapter.ChatRequest, error)
	}{
		{"messages", tinyTurns(`{"model":"m","max_tokens":16,"temperature":0.5,`, "messages", size), frontdoor.ParseMessagesRequest},
		{"responses", tinyTurns(`{"model":"m","max_output_tokens":16,"temperature":0.5,`, "input", size), func(b []byte) (*adapter.ChatRequest, error) {
			r, err := frontdoor.ParseResponsesRequest(b)
			if err != nil {
				return nil, err
			}
			return r.Chat, nil
		}},
	}
	for _, door := range doors {
		for _, quirks := range []config.Quirks{nil, config.ProviderQuirks} {
			t.Run(fmt.Sprintf("%s quirks %v", door.name, quirks), func(t *testing.T) {
				r, err := door.parse(door.body)
				if err != nil {
					t.Fatal(err)
				}
				var out []byte
				var e *adapter.Error
				allocated := heapAllocated(func() { out, e = adapter.OpenAIChatBody(r, "up", true, config.Capabilities{}, quirks) })
				if e != nil {
					t.Fatal(e)
				}
				per := float64(allocated) / float64(len(out))
				t.Logf("%.1f MB sent: writing it allocated %.2f× its size", float64(len(out))/(1<<20), per)
				// The copy itself is 1×, the translation's per-turn
				// garbage a little more; the whole translation beside
				// the copy was another 1×.
				if per > 1.5 {
					t.Errorf("writing the body allocated %.2f× its size, want at most 1.5×: the translation is held whole beside its copy", per)
				}
				want, e := adapter.OpenAIChatBody(adapter.WholeChatBody(r), "up", true, config.Capabilities{}, quirks)
				if e != nil {
					t.Fatal(e)
				}
				if !bytes.Equal(out, want) {
					t.Fatalf("written straight:\n%.300s\nfrom the whole translation:\n%.300s", out, want)
				}
				if developer := bytes.Contains(out, []byte(`"role":"developer"`)); developer == (len(quirks) > 0) && door.name == "responses" {
					t.Errorf("developer role sent %v with quirks %v", developer, quirks)
				}
				if !strings.HasPrefix(string(out), `{"model":"up","stream":true,"messages":[{"role":`) {
					t.Errorf("body starts %.80s", out)
				}
			})
		}
	}
}
