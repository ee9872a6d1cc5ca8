package fakevendor

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRuleSelection(t *testing.T) {
	s, base := start(t, Options{Fault: Fault{Status: 418}})
	s.SetRules(
		Rule{Model: "m1", Key: "k1", Fault: Fault{Status: 401}},
		Rule{Model: "m1", Fault: Fault{Status: 429}},
		Rule{Key: "k2", Fault: Fault{Status: 500}},
		Rule{Fault: Fault{}}, // everything else healthy, shadowing Options.Fault
	)
	s.AddRule(Rule{Fault: Fault{Status: 503}}) // never reached: the catch-all above wins
	tests := []struct {
		model, key string
		headers    []string
		want       int
	}{
		{"m1", "k1", nil, 401},                           // model and key
		{"m1", "k9", nil, 429},                           // model only
		{"m2", "k2", nil, 500},                           // key only
		{"m2", "k3", nil, 200},                           // the catch-all
		{"m1", "k9", []string{HeaderStatus, "503"}, 503}, // a header overrides the rule
	}
	for _, tt := range tests {
		for _, w := range wires {
			if got := w.call(t, base, tt.model, tt.key, false, tt.headers...).status; got != tt.want {
				t.Errorf("%s %s/%s: status %d, want %d", w.name, tt.model, tt.key, got, tt.want)
			}
		}
	}
	rules := s.Rules()
	if len(rules) != 5 || rules[0].Matched != 3 || rules[1].Matched != 6 || rules[4].Matched != 0 {
		t.Errorf("rules = %+v", rules)
	}

	s.ClearRules()
	if got := openaiWire.call(t, base, "m2", "k3", false).status; got != 418 {
		t.Errorf("without rules status %d, want Options.Fault's 418", got)
	}
}

func TestRulesOverHTTP(t *testing.T) {
	s, base := start(t, Options{})
	put := `[{"model":"slow","fault":{"latency":"150ms","status":529,"retry_after":"2s","fail_times":1}},{"key":"k-cut","fault":{"cut_after_chunks":1,"inter_chunk_delay":1000000}}]`
	res := send(t, http.MethodPut, base+"/_fake/rules", http.Header{"Content-Type": {"application/json"}}, put)
	if res.status != 200 {
		t.Fatalf("PUT: %d %s", res.status, res.body)
	}
	want := []Rule{
		{Model: "slow", Fault: Fault{Latency: 150 * time.Millisecond, Status: 529, RetryAfter: 2 * time.Second, FailTimes: 1}},
		{Key: "k-cut", Fault: Fault{CutAfterChunks: 1, InterChunkDelay: time.Millisecond}},
	}
	var got []RuleStatus
	decode(t, send(t, http.MethodGet, base+"/_fake/rules", nil, "").body, &got)
	if len(got) != 2 || got[0].Rule != want[0] || got[1].Rule != want[1] {
		t.Fatalf("GET rules = %+v, want %+v", got, want)
	}

	t0 := time.Now()
	r := anthropicWire.call(t, base, "slow", "k", false)
	if r.status != 529 || r.header.Get("Retry-After") != "2" || time.Since(t0) < 150*time.Millisecond {
		t.Errorf("rule set over HTTP: status %d Retry-After %q after %v", r.status, r.header.Get("Retry-After"), time.Since(t0))
	}
	if r := anthropicWire.call(t, base, "slow", "k", false); r.status != 200 {
		t.Errorf("second request: %d, want 200 after fail_times 1", r.status)
	}
	if r := openaiWire.call(t, base, "any", "k-cut", true); r.err == nil {
		t.Error("key rule over HTTP did not cut the stream")
	}

	res = send(t, http.MethodPost, base+"/_fake/rules", nil, `{"model":"x","fault":{"content_filter":true}}`)
	if res.status != 200 || len(s.Rules()) != 3 || !s.Rules()[2].Fault.ContentFilter {
		t.Errorf("POST rule: %d %+v", res.status, s.Rules())
	}

	for _, bad := range []string{
		`[{"model":"x","fault":{"statuss":500}}]`,
		`[{"model":"x","fault":{"latency":"soon"}}]`,
		`[{"model":"x","falt":{}}]`,
		`[{"fault":{"status":42}}]`,
		`{"model":"x"}`,
	} {
		res := send(t, http.MethodPut, base+"/_fake/rules", nil, bad)
		if res.status != 400 || !strings.Contains(string(res.body), `"error"`) {
			t.Errorf("PUT %s: %d %s", bad, res.status, res.body)
		}
	}
	if len(s.Rules()) != 3 {
		t.Error("a rejected PUT changed the rules")
	}

	res = send(t, http.MethodDelete, base+"/_fake/rules", nil, "")
	if res.status != 204 || len(s.Rules()) != 0 {
		t.Errorf("DELETE: %d, %d rules left", res.status, len(s.Rules()))
	}
	if r := anthropicWire.call(t, base, "slow", "k", false); r.status != 200 {
		t.Errorf("after DELETE: %d", r.status)
	}
}

func TestFaultJSONRoundTrip(t *testing.T) {
	f := Fault{
		Status: 503, RetryAfter: 1500 * time.Millisecond, Latency: time.Second, FirstChunkDelay: 2 * time.Millisecond,
		InterChunkDelay: 3 * time.Microsecond, CutAfterChunks: -1, ErrorAfterChunks: 2, ErrorStatus: 499, ContentFilter: true, OversizedLine: 70000,
		NoUsage: true, FailTimes: 3, ShuffleEmbeddings: true, Dimension: 8, CachedTokens: 9, ReplyChunks: 10,
		ErrorMessage: "too long", ErrorCode: "context_length_exceeded",
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"retry_after":"1.5s"`) {
		t.Errorf("durations must be written as Go duration strings: %s", b)
	}
	var back Fault
	if err := json.Unmarshal(b, &back); err != nil || back != f {
		t.Errorf("round trip: %+v (%v), want %+v", back, err, f)
	}
	if b, _ := json.Marshal(Fault{}); string(b) != "{}" {
		t.Errorf("zero fault = %s, want {}", b)
	}
}

func TestCountersAndReset(t *testing.T) {
	s, base := start(t, Options{})
	openaiWire.call(t, base, "gpt-x", "k-a", false)
	openaiWire.call(t, base, "gpt-x", "k-a", true, HeaderStatus, "429")
	anthropicWire.call(t, base, "claude-x", "k-b", false)
	geminiWire.call(t, base, "gem-x", "k-a", true)
	geminiWire.call(t, base, "gem-x", "bad-k", false)
	send(t, http.MethodPost, base+"/v1/embeddings", openaiWire.header("k-a"), `{"model":"emb-x","input":"hi"}`)
	send(t, http.MethodGet, base+"/v1/models", openaiWire.header("k-c"), "")

	if s.Count("gpt-x") != 2 || s.Count("claude-x") != 1 || s.Count("gem-x") != 2 || s.Count("emb-x") != 1 || s.Count("nope") != 0 {
		t.Errorf("Count: gpt %d claude %d gem %d emb %d", s.Count("gpt-x"), s.Count("claude-x"), s.Count("gem-x"), s.Count("emb-x"))
	}
	if s.CountKey("k-a") != 4 || s.CountKey("k-b") != 1 || s.CountKey("bad-k") != 1 || s.CountKey("k-c") != 1 {
		t.Errorf("CountKey: %+v", s.Stats().Keys)
	}
	if s.CountStatus("gpt-x", 200) != 1 || s.CountStatus("gpt-x", 429) != 1 || s.CountStatus("gem-x", 400) != 1 {
		t.Errorf("CountStatus: %+v", s.Stats().Models)
	}
	st := s.Stats()
	wantProto := map[string]Counter{
		"openai":    {Requests: 4, Statuses: map[int]int64{200: 3, 429: 1}},
		"anthropic": {Requests: 1, Statuses: map[int]int64{200: 1}},
		"gemini":    {Requests: 2, Statuses: map[int]int64{200: 1, 400: 1}},
	}
	if st.Requests != 7 || !reflect.DeepEqual(st.Protocols, wantProto) {
		t.Errorf("Stats = %+v", st)
	}

	var overHTTP Stats
	decode(t, send(t, http.MethodGet, base+"/_fake/stats", nil, "").body, &overHTTP)
	if !reflect.DeepEqual(overHTTP, st) {
		t.Errorf("GET /_fake/stats = %+v, want %+v", overHTTP, st)
	}

	if got := string(s.LastBody("emb-x")); got != `{"model":"emb-x","input":"hi"}` {
		t.Errorf("LastBody = %q", got)
	}
	last, ok := s.LastRequest("claude-x")
	if !ok || last.Protocol != "anthropic" || last.Path != "/v1/messages" || last.Key != "k-b" || last.Header.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("LastRequest = %+v", last)
	}
	last, _ = s.LastRequest("gem-x")
	if last.RawQuery != "" || !strings.HasSuffix(last.Path, ":generateContent") {
		t.Errorf("last gemini request = %+v", last)
	}
	var lastHTTP Request
	decode(t, send(t, http.MethodGet, base+"/_fake/last?model=gpt-x", nil, "").body, &lastHTTP)
	if lastHTTP.Key != "k-a" || !strings.Contains(string(lastHTTP.Body), `"stream":true`) {
		t.Errorf("GET /_fake/last = %+v", lastHTTP)
	}

	if res := send(t, http.MethodPost, base+"/_fake/reset", nil, ""); res.status != 204 {
		t.Fatalf("reset: %d", res.status)
	}
	if st := s.Stats(); st.Requests != 0 || len(st.Models) != 0 || len(st.Keys) != 0 || st.Protocols["openai"].Requests != 0 || s.LastBody("emb-x") != nil {
		t.Errorf("after reset: %+v", st)
	}
	if res := send(t, http.MethodGet, base+"/_fake/last?model=gpt-x", nil, ""); res.status != 404 {
		t.Errorf("last after reset: %d", res.status)
	}
	if res := send(t, http.MethodGet, base+"/_fake/reset", nil, ""); res.status != 405 {
		t.Errorf("GET reset: %d", res.status)
	}
}

func TestConcurrentRequestsAndRuleChanges(t *testing.T) {
	s, base := start(t, Options{ReplyChunks: 2})
	stop := make(chan struct{})
	var toggler sync.WaitGroup
	toggler.Add(1)
	go func() {
		defer toggler.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				s.SetRules(Rule{Model: "c", Fault: Fault{Status: 503}})
			} else {
				s.AddRule(Rule{Key: "zz", Fault: Fault{NoUsage: true}})
				s.ClearRules()
			}
			_ = s.Stats()
		}
	}()
	var wg sync.WaitGroup
	const workers, each = 8, 25
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := wires[i%3]
			for range each {
				st := w.call(t, base, "c", "key-"+w.name, i%2 == 0).status
				if st != 200 && st != 503 {
					t.Errorf("status %d", st)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	toggler.Wait()
	c := s.Stats().Models["c"]
	if s.Count("c") != workers*each || c.Statuses[200]+c.Statuses[503] != workers*each {
		t.Errorf("count %d, statuses %v, want %d", s.Count("c"), c.Statuses, workers*each)
	}
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	s, base := start(t, Options{})
	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/v1/chat/completions", 405},
		{http.MethodPost, "/v1/models", 405},
		{http.MethodPost, "/v2/anything", 404},
		{http.MethodGet, "/_fake/nothing", 404},
		{http.MethodPatch, "/_fake/rules", 405},
	} {
		if res := send(t, tt.method, base+tt.path, openaiWire.header("k"), ""); res.status != tt.status {
			t.Errorf("%s %s: %d, want %d", tt.method, tt.path, res.status, tt.status)
		}
	}
	if s.Stats().Requests != 0 {
		t.Error("unroutable requests were counted")
	}
}

func TestBodyLimit(t *testing.T) {
	_, base := start(t, Options{MaxBodyBytes: 64})
	body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 100) + `"}]}`
	res := send(t, http.MethodPost, base+"/v1/chat/completions", openaiWire.header("k"), body)
	if res.status != http.StatusRequestEntityTooLarge || !strings.Contains(string(res.body), `"error"`) {
		t.Errorf("status %d %s", res.status, res.body)
	}
}

func BenchmarkChatNonStream(b *testing.B) {
	s := New(Options{})
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"Hello there, how are you?"}]}`
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		s.ServeHTTP(discard{}, req)
	}
}

func BenchmarkChatStream(b *testing.B) {
	s := New(Options{})
	body := `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello there, how are you?"}]}`
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		s.ServeHTTP(discard{}, req)
	}
}

// discard is a ResponseWriter that drops everything, to measure the server
// alone.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
func (discard) Flush()                      {}
