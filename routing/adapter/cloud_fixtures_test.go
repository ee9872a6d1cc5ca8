package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"
)

// The cloud vendors' documented answers (testdata/azure, testdata/bedrock;
// see their SOURCES.md) decoded through the adapters.

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixtureHead reads a .headers.txt file: a status line, then headers.
func fixtureHead(t *testing.T, name string) (int, http.Header) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(fixture(t, name)))
	sc.Scan()
	f := strings.Fields(sc.Text())
	status, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("%s: status line %q", name, sc.Text())
	}
	h := http.Header{}
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return status, h
}

// serveFixture answers every request with status, headers and body.
func serveFixture(t *testing.T, status int, h http.Header, body []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range h {
			w.Header()[k] = v
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// eventStream frames payloads as Bedrock does, with the SDK's encoder.
func eventStream(t *testing.T, events []struct {
	Event   string
	Payload json.RawMessage
}) []byte {
	t.Helper()
	var out bytes.Buffer
	enc := eventstream.NewEncoder()
	for _, ev := range events {
		err := enc.Encode(&out, eventstream.Message{Headers: eventstream.Headers{
			{Name: ":event-type", Value: eventstream.StringValue(ev.Event)},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			{Name: ":message-type", Value: eventstream.StringValue("event")},
		}, Payload: ev.Payload})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

func TestAzureFixtures(t *testing.T) {
	tg := func(url string) Target {
		return Target{BaseURL: url, APIKey: "azure-key-0001", UpstreamModel: "gpt4o-prod", APIVersion: "2024-10-21"}
	}
	t.Run("prompt filtered: 400 content_filter", func(t *testing.T) {
		url := serveFixture(t, http.StatusBadRequest, nil, fixture(t, "azure/error-400-content-filter.json"))
		_, err := NewAzure().Chat(context.Background(), tg(url), azureAsk())
		e := openaiAsError(t, err)
		if e.Class != ClassContentFilter || e.Status != http.StatusBadRequest || !strings.Contains(e.Message, "content management policy") {
			t.Fatalf("got %v", e)
		}
	})
	t.Run("completion filtered: finish_reason content_filter", func(t *testing.T) {
		url := serveFixture(t, http.StatusOK, nil, fixture(t, "azure/chat-finish-content-filter.response.json"))
		res, err := NewAzure().Chat(context.Background(), tg(url), azureAsk())
		if e := openaiAsError(t, err); e.Class != ClassContentFilter {
			t.Fatalf("got %v", e)
		}
		if res != nil && res.Usage.Known && (res.Usage.Prompt != 25 || res.Usage.Completion != 12) {
			t.Errorf("usage %+v", res.Usage)
		}
	})
	t.Run("429 retry-after-ms wins over retry-after", func(t *testing.T) {
		status, h := fixtureHead(t, "azure/error-429-rate-limit.headers.txt")
		url := serveFixture(t, status, h, fixture(t, "azure/error-429-rate-limit.json"))
		_, err := NewAzure().Chat(context.Background(), tg(url), azureAsk())
		e := openaiAsError(t, err)
		if e.Class != ClassRateLimited || e.RetryAfter != 6500*time.Millisecond {
			t.Fatalf("got %v, retry after %v", e, e.RetryAfter)
		}
	})
}

func TestBedrockFixtures(t *testing.T) {
	tg := func(url string) Target { return bedrockTarget(url, bedrockKey) }
	t.Run("Converse answer: text, finish and cache usage", func(t *testing.T) {
		url := serveFixture(t, http.StatusOK, nil, fixture(t, "bedrock/converse.response.json"))
		res, err := NewBedrock().Chat(context.Background(), tg(url), azureAsk())
		if err != nil {
			t.Fatal(err)
		}
		want := Usage{Prompt: 30 + 1800 + 200, Completion: 628, Cached: 1800, CacheCreation: 200, Known: true, CachedKnown: true}
		if res.Usage != want || res.FinishReason != "stop" || !strings.HasPrefix(gjson.GetBytes(res.Body, "choices.0.message.content").String(), "Here is a song") {
			t.Fatalf("usage %+v finish %q body %s", res.Usage, res.FinishReason, res.Body)
		}
	})
	t.Run("ConverseStream: text, a tool call, usage from metadata", func(t *testing.T) {
		var events []struct {
			Event   string
			Payload json.RawMessage
		}
		if err := json.Unmarshal(fixture(t, "bedrock/converse-stream.events.json"), &events); err != nil {
			t.Fatal(err)
		}
		url := serveFixture(t, http.StatusOK, http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}}, eventStream(t, events))
		s, err := NewBedrock().ChatStream(context.Background(), tg(url), azureAsk())
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := vendorCollect(t, s)
		if err != io.EOF {
			t.Fatalf("end %v", err)
		}
		var text, args strings.Builder
		var tool, finish string
		for _, c := range chunks {
			d := gjson.GetBytes(c.Data, "choices.0.delta")
			text.WriteString(d.Get("content").String())
			args.WriteString(d.Get("tool_calls.0.function.arguments").String())
			if n := d.Get("tool_calls.0.function.name").String(); n != "" {
				tool = n
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
		if text.String() != "Let me check the weather." || tool != "top_song" || args.String() != `{"sign": "WZPZ"}` || finish != "tool_calls" {
			t.Errorf("text %q tool %q args %q finish %q", text.String(), tool, args.String(), finish)
		}
		if u := s.Usage(); !u.Known || u.Prompt != 375 || u.Completion != 61 {
			t.Errorf("usage %+v", u)
		}
	})
	for _, tc := range []struct {
		name  string
		class Class
		code  string
	}{
		{"throttling", ClassRateLimited, "ThrottlingException"},
		{"validation", ClassBadRequest, "ValidationException"},
	} {
		t.Run(tc.name+" error", func(t *testing.T) {
			status, h := fixtureHead(t, "bedrock/error-"+tc.name+".headers.txt")
			url := serveFixture(t, status, h, fixture(t, "bedrock/error-"+tc.name+".json"))
			_, err := NewBedrock().Chat(context.Background(), tg(url), azureAsk())
			e := openaiAsError(t, err)
			want := gjson.GetBytes(fixture(t, "bedrock/error-"+tc.name+".json"), "message").String()
			if e.Class != tc.class || e.Code != tc.code || e.Status != status || e.Message != want {
				t.Fatalf("got %v (code %q)", e, e.Code)
			}
		})
	}
	t.Run("invoke answer passes as Anthropic's message", func(t *testing.T) {
		raw := fixture(t, "bedrock/invoke-anthropic.response.json")
		url := serveFixture(t, http.StatusOK, nil, raw)
		res, err := NewBedrock().Chat(context.Background(), tg(url), invokeAsk())
		if err != nil {
			t.Fatal(err)
		}
		want := Usage{Prompt: 12 + 1024, Completion: 19, Cached: 1024, Known: true, CachedKnown: true}
		if !bytes.Equal(res.Body, raw) || res.FinishReason != "stop" || res.Usage.Prompt != want.Prompt || res.Usage.Completion != want.Completion || res.Usage.Cached != want.Cached {
			t.Fatalf("usage %+v (want %+v) finish %q", res.Usage, want, res.FinishReason)
		}
	})
	t.Run("invoke stream: chunk events become Anthropic SSE events", func(t *testing.T) {
		var events []struct {
			Event   string
			Payload json.RawMessage
		}
		lines := bytes.Split(bytes.TrimSpace(fixture(t, "bedrock/invoke-anthropic-stream.chunks.jsonl")), []byte("\n"))
		for _, l := range lines {
			p, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString(l)})
			events = append(events, struct {
				Event   string
				Payload json.RawMessage
			}{"chunk", p})
		}
		url := serveFixture(t, http.StatusOK, http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}}, eventStream(t, events))
		s, err := NewBedrock().ChatStream(context.Background(), tg(url), invokeAsk())
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := vendorCollect(t, s)
		if err != io.EOF || len(chunks) != len(lines) {
			t.Fatalf("%d events for %d chunks, end %v", len(chunks), len(lines), err)
		}
		for i, c := range chunks {
			typ := gjson.GetBytes(lines[i], "type").String()
			if want := "event: " + typ + "\ndata: " + string(lines[i]) + "\n\n"; string(c.Data) != want {
				t.Errorf("event %d = %q, want %q", i, c.Data, want)
			}
		}
		if u := s.Usage(); !u.Known || u.Prompt != 14 || u.Completion != 9 {
			t.Errorf("usage %+v", u)
		}
	})
}
