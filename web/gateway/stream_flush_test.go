package gateway_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/e2e/fakevendor"
	"switchyard/web/gateway/gatewaytest"
)

// A stream's events reach the caller as the vendor sends them. The gateway
// leaves what it wrote unflushed while the vendor's events are at hand (so
// those sent together leave in one write) and flushes before it waits for
// more: while the vendor pauses between chunks, the chunk before the pause
// is already with the caller. Both front doors that relay an OpenAI
// vendor's stream.
func TestStreamEventsLeaveBeforeTheVendorPauses(t *testing.T) {
	e := gatewaytest.New(t)
	key := e.Simple()
	const pause = 400 * time.Millisecond
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{InterChunkDelay: pause, ReplyChunks: 3}})
	for _, c := range []struct {
		path, body, content string // content: what marks a content event
	}{
		{"/v1/chat/completions", `{"model":"standard","stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"delta":{"content":"`},
		{"/v1/messages", `{"model":"standard","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"text_delta"`},
	} {
		t.Run(strings.TrimPrefix(c.path, "/v1/"), func(t *testing.T) {
			res := send(t, e.URL, key, c.path, c.body)
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			var arrived []time.Time // when each content event was read
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), c.content) {
					arrived = append(arrived, time.Now())
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if len(arrived) != 3 {
				t.Fatalf("%d content events, want the vendor's 3", len(arrived))
			}
			for i := 1; i < len(arrived); i++ {
				// Held back until the end, they would arrive together.
				if gap := arrived[i].Sub(arrived[i-1]); gap < pause/2 {
					t.Fatalf("content event %d came %s after the one before it, though the vendor paused %s between them: it was held back while the gateway waited",
						i+1, gap, pause)
				}
			}
		})
	}
}
