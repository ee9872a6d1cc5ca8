package fakevendor

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

const openaiToolBody = `{"model":"gpt-4o","stream":%s,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"Please call tool."}]}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}},{"type":"function","function":{"name":"other"}}]}`

func TestOpenAIChatNonStreamShape(t *testing.T) {
	_, base := start(t, Options{ReplyChunks: 3})
	h := openaiWire.header("sk-test")
	type completion struct {
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens        int `json:"prompt_tokens"`
			CompletionTokens    int `json:"completion_tokens"`
			TotalTokens         int `json:"total_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	tests := []struct {
		name, body, fixture string
		header              []string
		extra, missing      []string
		check               func(t *testing.T, c completion)
	}{
		{
			name: "text", fixture: "openai-chat-nonstream.json",
			body:   `{"model":"gpt-4o","messages":[{"role":"user","content":"0123456789abcdef"}]}`,
			header: []string{HeaderCachedTokens, "7"},
			extra:  []string{"system_fingerprint"},
			check: func(t *testing.T, c completion) {
				if c.Object != "chat.completion" || c.Model != "gpt-4o" {
					t.Errorf("object/model = %q/%q", c.Object, c.Model)
				}
				if got, want := *c.Choices[0].Message.Content, "Hello from gpt-4o. Hello from gpt-4o. Hello from gpt-4o."; got != want {
					t.Errorf("content = %q, want %q", got, want)
				}
				if c.Choices[0].FinishReason != "stop" {
					t.Errorf("finish_reason = %q", c.Choices[0].FinishReason)
				}
				u := c.Usage
				if u.PromptTokens != 4+7 || u.CompletionTokens != 3 || u.TotalTokens != 14 || u.PromptTokensDetails.CachedTokens != 7 {
					t.Errorf("usage = %+v, want prompt 11 (16 bytes/4 + 7 cached), completion 3, total 14, cached 7", u)
				}
			},
		},
		{
			name: "tool call", fixture: "openai-chat-nonstream-tool-calls.json",
			body:  strings.Replace(openaiToolBody, "%s", "false", 1),
			extra: []string{"system_fingerprint", "service_tier", "choices[].message.refusal", "choices[].message.annotations", "usage.prompt_tokens_details", "usage.completion_tokens_details.audio_tokens"},
			check: func(t *testing.T, c completion) {
				ch := c.Choices[0]
				if ch.FinishReason != "tool_calls" || ch.Message.Content != nil || len(ch.Message.ToolCalls) != 1 {
					t.Fatalf("choice = %+v, want one tool call, null content, finish tool_calls", ch)
				}
				tc := ch.Message.ToolCalls[0]
				if tc.Type != "function" || tc.Function.Name != "get_weather" || tc.Function.Arguments != "{}" || !strings.HasPrefix(tc.ID, "call_") {
					t.Errorf("tool call = %+v", tc)
				}
			},
		},
		{
			name: "max tokens truncates", fixture: "openai-chat-nonstream.json",
			body:  `{"model":"gpt-4o","max_completion_tokens":2,"messages":[{"role":"user","content":"hi"}]}`,
			extra: []string{"system_fingerprint"},
			check: func(t *testing.T, c completion) {
				if c.Choices[0].FinishReason != "length" || *c.Choices[0].Message.Content != "Hello from gpt-4o. Hello from gpt-4o." || c.Usage.CompletionTokens != 2 {
					t.Errorf("choice = %+v usage %+v, want 2 chunks and finish length", c.Choices[0], c.Usage)
				}
			},
		},
		{
			name: "tools without the phrase answer text", fixture: "openai-chat-nonstream.json",
			body:  strings.Replace(strings.Replace(openaiToolBody, "%s", "false", 1), "call tool", "hello", 1),
			extra: []string{"system_fingerprint"},
			check: func(t *testing.T, c completion) {
				if c.Choices[0].FinishReason != "stop" || len(c.Choices[0].Message.ToolCalls) != 0 {
					t.Errorf("choice = %+v, want plain text", c.Choices[0])
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hh := h.Clone()
			for i := 0; i+1 < len(tt.header); i += 2 {
				hh.Set(tt.header[i], tt.header[i+1])
			}
			res := send(t, http.MethodPost, base+"/v1/chat/completions", hh, tt.body)
			if res.status != http.StatusOK || !strings.HasPrefix(res.header.Get("Content-Type"), "application/json") {
				t.Fatalf("status %d %s: %s", res.status, res.header.Get("Content-Type"), res.body)
			}
			sameShape(t, tt.name, keyPaths(t, res.body), keyPaths(t, readFixture(t, tt.fixture)), tt.extra, nil)
			var c completion
			decode(t, res.body, &c)
			tt.check(t, c)
		})
	}
}

// dataOf returns the data of every event, checking each event is data-only.
func dataOf(t *testing.T, events []sseEvent) []string {
	t.Helper()
	var out []string
	for _, e := range events {
		if e.Event != "" || e.Raw != "" {
			t.Errorf("unexpected non-data lines in OpenAI stream: %+v", e)
		}
		out = append(out, e.Data)
	}
	return out
}

func TestOpenAIStreamShape(t *testing.T) {
	_, base := start(t, Options{ReplyChunks: 4})
	h := openaiWire.header("sk-test")

	t.Run("include_usage", func(t *testing.T) {
		res := send(t, http.MethodPost, base+"/v1/chat/completions", h, openaiWire.body("gpt-4o", true))
		if res.status != 200 || !strings.HasPrefix(res.header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("status %d, content type %q", res.status, res.header.Get("Content-Type"))
		}
		events, terminated := parseSSE(res.body)
		if !terminated {
			t.Error("last event does not end with a blank line")
		}
		if strings.Contains(string(res.body), "\n\n\n") {
			t.Error("events separated by more than one blank line")
		}
		data := dataOf(t, events)
		// role chunk + 4 content + finish + usage + [DONE]
		if len(data) != 8 || data[7] != "[DONE]" {
			t.Fatalf("got %d events ending %q, want 8 ending [DONE]:\n%s", len(data), data[len(data)-1], res.body)
		}
		var chunks [][]byte
		for _, d := range data[:7] {
			chunks = append(chunks, []byte(d))
		}
		want := fixtureEvents(t, "openai-chat-stream-include-usage.sse")
		var wantChunks [][]byte
		for _, e := range want[:len(want)-1] {
			wantChunks = append(wantChunks, []byte(e.Data))
		}
		sameShape(t, "stream chunks", keyPaths(t, chunks...), keyPaths(t, wantChunks...),
			[]string{"usage.prompt_tokens_details", "usage.completion_tokens_details.audio_tokens", "usage.completion_tokens_details.accepted_prediction_tokens", "usage.completion_tokens_details.rejected_prediction_tokens"}, nil)

		type chunk struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Role    *string `json:"role"`
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		var cs []chunk
		for _, d := range data[:7] {
			var c chunk
			decode(t, []byte(d), &c)
			if c.Object != "chat.completion.chunk" || (len(cs) > 0 && c.ID != cs[0].ID) {
				t.Errorf("chunk object/id = %q/%q", c.Object, c.ID)
			}
			cs = append(cs, c)
		}
		first := cs[0].Choices[0]
		if first.Delta.Role == nil || *first.Delta.Role != "assistant" || first.Delta.Content == nil || *first.Delta.Content != "" {
			t.Errorf("first chunk must be role-only, got %s", data[0])
		}
		var text string
		for _, c := range cs[1:5] {
			if c.Choices[0].Delta.Role != nil || c.Choices[0].FinishReason != nil || c.Usage != nil {
				t.Errorf("content chunk carries role/finish/usage: %+v", c)
			}
			text += *c.Choices[0].Delta.Content
		}
		if want := strings.Repeat(" Hello from gpt-4o.", 4)[1:]; text != want {
			t.Errorf("text = %q, want %q", text, want)
		}
		if fr := cs[5].Choices[0].FinishReason; fr == nil || *fr != "stop" || cs[5].Choices[0].Delta.Content != nil {
			t.Errorf("finish chunk = %s", data[5])
		}
		if len(cs[6].Choices) != 0 || cs[6].Usage == nil || cs[6].Usage.CompletionTokens != 4 || !strings.Contains(data[6], `"choices":[]`) {
			t.Errorf("usage chunk = %s, want choices [] and completion_tokens 4", data[6])
		}
	})

	t.Run("without include_usage", func(t *testing.T) {
		body := `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		res := send(t, http.MethodPost, base+"/v1/chat/completions", h, body)
		data := dataOf(t, mustEvents(t, res))
		if len(data) != 7 || data[6] != "[DONE]" || !strings.Contains(data[5], `"finish_reason":"stop"`) {
			t.Fatalf("want role, 4 content, finish, [DONE]; got %q", data)
		}
		if strings.Contains(string(res.body), `"usage"`) {
			t.Errorf("usage sent although include_usage was not asked:\n%s", res.body)
		}
	})

	t.Run("tool call", func(t *testing.T) {
		res := send(t, http.MethodPost, base+"/v1/chat/completions", h, strings.Replace(openaiToolBody, "%s", `true,"stream_options":{"include_usage":true}`, 1))
		data := dataOf(t, mustEvents(t, res))
		if len(data) != 5 || data[4] != "[DONE]" {
			t.Fatalf("want tool start, arguments, finish, usage, [DONE]; got %q", data)
		}
		var chunks [][]byte
		for _, d := range data[:4] {
			chunks = append(chunks, []byte(d))
		}
		var wantChunks [][]byte
		for _, e := range fixtureEvents(t, "openai-chat-stream-tool-call.sse") {
			if e.Data != "[DONE]" {
				wantChunks = append(wantChunks, []byte(e.Data))
			}
		}
		sameShape(t, "tool stream", keyPaths(t, chunks...), keyPaths(t, wantChunks...),
			[]string{"usage.prompt_tokens_details", "usage.completion_tokens_details.audio_tokens", "usage.completion_tokens_details.accepted_prediction_tokens", "usage.completion_tokens_details.rejected_prediction_tokens"}, nil)
		if !strings.Contains(data[0], `"name":"get_weather","arguments":""`) || !strings.Contains(data[1], `"arguments":"{}"`) || !strings.Contains(data[2], `"finish_reason":"tool_calls"`) {
			t.Errorf("tool stream = %q", data)
		}
	})
}

func mustEvents(t *testing.T, res result) []sseEvent {
	t.Helper()
	if res.status != http.StatusOK || res.err != nil {
		t.Fatalf("status %d err %v: %s", res.status, res.err, res.body)
	}
	events, terminated := parseSSE(res.body)
	if !terminated {
		t.Errorf("stream does not end with a blank line: %q", res.body)
	}
	return events
}

func openaiClient(base, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func TestOpenAIOfficialClient(t *testing.T) {
	s, base := start(t, Options{ReplyChunks: 3})
	client := openaiClient(base, "sk-sdk")
	ctx := context.Background()

	t.Run("non-stream", func(t *testing.T) {
		res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello there")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Choices[0].Message.Content; got != "Hello from gpt-4o-mini. Hello from gpt-4o-mini. Hello from gpt-4o-mini." {
			t.Errorf("content = %q", got)
		}
		if res.Usage.CompletionTokens != 3 || res.Usage.PromptTokens != 3 || res.Usage.TotalTokens != 6 {
			t.Errorf("usage = %+v", res.Usage)
		}
		if !res.Usage.PromptTokensDetails.JSON.CachedTokens.Valid() {
			t.Error("prompt_tokens_details.cached_tokens not present")
		}
	})

	t.Run("stream", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:         "gpt-4o-mini",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello there")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		var acc openai.ChatCompletionAccumulator
		n := 0
		for stream.Next() {
			if !acc.AddChunk(stream.Current()) {
				t.Fatal("chunk not accumulated")
			}
			n++
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if n != 6 {
			t.Errorf("chunks = %d, want 6 (role, 3 content, finish, usage)", n)
		}
		if got := acc.Choices[0].Message.Content; got != "Hello from gpt-4o-mini. Hello from gpt-4o-mini. Hello from gpt-4o-mini." {
			t.Errorf("content = %q", got)
		}
		if acc.Usage.CompletionTokens != 3 || acc.Usage.TotalTokens != 6 || acc.Choices[0].FinishReason != "stop" {
			t.Errorf("usage %+v finish %q", acc.Usage, acc.Choices[0].FinishReason)
		}
	})

	t.Run("stream error event surfaces", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:    "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello there")},
		}, option.WithHeader(HeaderErrorAfter, "1"))
		n := 0
		for stream.Next() {
			n++
		}
		if stream.Err() == nil || !strings.Contains(stream.Err().Error(), "server_error") || n != 2 {
			t.Errorf("chunks %d err %v, want 2 chunks then a server_error", n, stream.Err())
		}
	})

	t.Run("tool call", func(t *testing.T) {
		res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "gpt-4o",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("please call tool")},
			Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
				Name: "lookup", Parameters: shared.FunctionParameters{"type": "object"},
			})},
		})
		if err != nil {
			t.Fatal(err)
		}
		tc := res.Choices[0].Message.ToolCalls
		if res.Choices[0].FinishReason != "tool_calls" || len(tc) != 1 || tc[0].Function.Name != "lookup" || tc[0].Function.Arguments != "{}" {
			t.Errorf("choice = %+v", res.Choices[0])
		}
	})

	t.Run("embeddings", func(t *testing.T) {
		res, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model:      "text-embedding-3-small",
			Input:      openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"alpha", "beta"}},
			Dimensions: openai.Int(16),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Data) != 2 || res.Usage.PromptTokens != 3 { // ceil(5/4) + ceil(4/4)
			t.Fatalf("data %d usage %+v", len(res.Data), res.Usage)
		}
		for i, text := range []string{"alpha", "beta"} {
			if res.Data[i].Index != int64(i) || !sameVector(res.Data[i].Embedding, Vector(text, 16)) {
				t.Errorf("item %d = index %d, %v", i, res.Data[i].Index, res.Data[i].Embedding)
			}
		}
	})

	t.Run("models", func(t *testing.T) {
		page, err := client.Models.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != 3 || page.Data[0].ID != "gpt-4o-mini" || page.Data[0].Object != "model" {
			t.Errorf("models = %+v", page.Data)
		}
	})

	t.Run("typed errors", func(t *testing.T) {
		for _, tt := range []struct {
			key, header string
			status      int
			code, typ   string
		}{
			{"bad-key-123456", "", 401, "invalid_api_key", "invalid_request_error"},
			{"broke-key-1234", "", 429, "insufficient_quota", "insufficient_quota"},
			{"sk-ok", "429", 429, "rate_limit_exceeded", "requests"},
			{"sk-ok", "500", 500, "", "server_error"},
		} {
			c := openaiClient(base, tt.key)
			var opts []option.RequestOption
			if tt.header != "" {
				opts = append(opts, option.WithHeader(HeaderStatus, tt.header))
			}
			_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
			}, opts...)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("%s: err = %v, want *openai.Error", tt.key, err)
			}
			if apiErr.StatusCode != tt.status || apiErr.Code != tt.code || apiErr.Type != tt.typ {
				t.Errorf("%s/%s: status %d code %q type %q, want %d %q %q", tt.key, tt.header, apiErr.StatusCode, apiErr.Code, apiErr.Type, tt.status, tt.code, tt.typ)
			}
		}
	})
	if s.CountKey("sk-sdk") == 0 {
		t.Error("requests of the official client were not counted")
	}
}

func sameVector(got []float64, want []float32) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if float32(got[i]) != want[i] {
			return false
		}
	}
	return true
}

func TestOpenAIEmbeddings(t *testing.T) {
	_, base := start(t, Options{Dimension: 12})
	h := openaiWire.header("sk-emb")
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	type response struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}
	tests := []struct {
		name   string
		body   string
		header []string
		texts  []string
		dim    int
	}{
		{name: "string", body: `{"model":"text-embedding-3-small","input":"The food was delicious"}`, texts: []string{"The food was delicious"}, dim: 12},
		{name: "array", body: `{"model":"m","input":["a","bb","ccc"]}`, texts: []string{"a", "bb", "ccc"}, dim: 12},
		{name: "dimensions field", body: `{"model":"m","input":["a"],"dimensions":5}`, texts: []string{"a"}, dim: 5},
		{name: "fault dimension wins", body: `{"model":"m","input":["a"],"dimensions":5}`, header: []string{HeaderDimension, "3"}, texts: []string{"a"}, dim: 3},
		{name: "token array", body: `{"model":"m","input":[1,2,3]}`, texts: []string{"[1,2,3]"}, dim: 12},
		{name: "token arrays", body: `{"model":"m","input":[[1,2],[3]]}`, texts: []string{"[1,2]", "[3]"}, dim: 12},
		{name: "base64", body: `{"model":"m","input":["a","b"],"encoding_format":"base64"}`, texts: []string{"a", "b"}, dim: 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hh := h.Clone()
			for i := 0; i+1 < len(tt.header); i += 2 {
				hh.Set(tt.header[i], tt.header[i+1])
			}
			res := send(t, http.MethodPost, base+"/v1/embeddings", hh, tt.body)
			if res.status != 200 {
				t.Fatalf("status %d: %s", res.status, res.body)
			}
			if !strings.Contains(tt.body, "base64") {
				sameShape(t, "embeddings", keyPaths(t, res.body), keyPaths(t, readFixture(t, "openai-embeddings.json")), nil, nil)
			}
			var r response
			decode(t, res.body, &r)
			if r.Object != "list" || len(r.Data) != len(tt.texts) {
				t.Fatalf("object %q, %d items", r.Object, len(r.Data))
			}
			tokens := 0
			for i, it := range r.Data {
				if it.Index != i || it.Object != "embedding" {
					t.Errorf("item %d: index %d object %q", i, it.Index, it.Object)
				}
				got := embeddingValues(t, it.Embedding)
				want := Vector(tt.texts[i], tt.dim)
				if len(got) != tt.dim || !equalF32(got, want) {
					t.Errorf("item %d: %v, want %v", i, got, want)
				}
				tokens += max(1, (len(tt.texts[i])+3)/4)
			}
			if r.Usage.PromptTokens != tokens || r.Usage.TotalTokens != tokens {
				t.Errorf("usage = %+v, want %d", r.Usage, tokens)
			}
		})
	}

	t.Run("vectors are unit length and differ by text", func(t *testing.T) {
		a, b := Vector("one", 64), Vector("two", 64)
		var na, nb float64
		for i := range a {
			na += float64(a[i]) * float64(a[i])
			nb += float64(b[i]) * float64(b[i])
		}
		if math.Abs(na-1) > 1e-5 || math.Abs(nb-1) > 1e-5 || equalF32(a, b) || !equalF32(a, Vector("one", 64)) {
			t.Errorf("norms %v %v; distinct %v", na, nb, !equalF32(a, b))
		}
	})

	for _, bad := range []string{`{"model":"m"}`, `{"model":"m","input":""}`, `{"model":"m","input":[]}`, `{"model":"m","input":["a",1]}`, `{"input":"a"}`, `{`} {
		res := send(t, http.MethodPost, base+"/v1/embeddings", h, bad)
		var e struct {
			Error openaiErrorObject `json:"error"`
		}
		decode(t, res.body, &e)
		if res.status != 400 || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
			t.Errorf("%s: status %d body %s", bad, res.status, res.body)
		}
	}
}

func embeddingValues(t *testing.T, v any) []float32 {
	t.Helper()
	switch x := v.(type) {
	case []any:
		out := make([]float32, len(x))
		for i, f := range x {
			out[i] = float32(f.(float64))
		}
		return out
	case string:
		raw, err := base64.StdEncoding.DecodeString(x)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, len(raw)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return out
	}
	t.Fatalf("embedding of type %T", v)
	return nil
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestOpenAIRequestValidation(t *testing.T) {
	_, base := start(t, Options{Models: []string{"gpt-4o"}})
	tests := []struct {
		name, key, body string
		status          int
		code            string
		msg             string
	}{
		{"missing key", "", `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`, 401, "", "You didn't provide an API key"},
		{"invalid json", "sk", `{"model":`, 400, "", "could not parse the JSON body"},
		{"no model", "sk", `{"messages":[{"role":"user","content":"x"}]}`, 400, "", "you must provide a model parameter"},
		{"no messages", "sk", `{"model":"gpt-4o","messages":[]}`, 400, "", "too short"},
		{"unknown model", "sk", `{"model":"gpt-5","messages":[{"role":"user","content":"x"}]}`, 404, "model_not_found", "gpt-5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{"Content-Type": {"application/json"}}
			if tt.key != "" {
				h.Set("Authorization", "Bearer "+tt.key)
			}
			res := send(t, http.MethodPost, base+"/v1/chat/completions", h, tt.body)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			decode(t, res.body, &e)
			sameShape(t, tt.name, keyPaths(t, res.body), keyPaths(t, readFixture(t, "openai-error-401.json")), nil, nil)
			code := ""
			if e.Error.Code != nil {
				code = *e.Error.Code
			}
			if res.status != tt.status || code != tt.code || !strings.Contains(e.Error.Message, tt.msg) {
				t.Errorf("status %d code %q message %q", res.status, code, e.Error.Message)
			}
		})
	}
}

// scriptedCase is one scripted tool exchange, the same in every protocol:
// the tool the answer calls with its arguments, or the text it says.
type scriptedCase struct {
	name, prompt string // prompt: the user's message
	lastIsResult bool   // the conversation goes on with a Read call and its result
	webSearch    bool   // the request offers the hosted web search
	tool, args   string // the call the answer makes, or
	text         string // the text it says
}

const (
	readDirective = `Read the notes. call tool Read {"file_path": "/tmp/x/notes.txt"}`
	readArgs      = `{"file_path":"/tmp/x/notes.txt"}`
	readResult    = "     1\tthe notes say 42"
)

var scriptedCases = []scriptedCase{
	{name: "named call with arguments", prompt: readDirective, tool: "Read", args: readArgs},
	{name: "unknown name", prompt: `call tool Grep {"pattern":"x"}`, text: "no tool Grep was offered; offered: Bash, Read"},
	{name: "tool result echoed", prompt: readDirective, lastIsResult: true, text: "Tool result: " + readResult},
	{name: "web search tool accepted", prompt: "What is new?", webSearch: true, text: "Hello from m. Hello from m. Hello from m."},
}

// Scripted tool calls through the official openai-go client, whole and
// streamed: named call, unknown name, tool result, web search, with
// mid-conversation developer and system messages, reasoning_effort and
// verbosity as agents send them.
func TestOpenAIScriptedTools(t *testing.T) {
	s, url := start(t, Options{ReplyChunks: 3})
	c := openaiClient(url, "sk-good")
	fn := func(name string) openai.ChatCompletionToolUnionParam {
		return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: name, Parameters: shared.FunctionParameters{"type": "object"}})
	}
	for _, stream := range []bool{false, true} {
		for _, tc := range scriptedCases {
			t.Run(tc.name+map[bool]string{true: " streamed"}[stream], func(t *testing.T) {
				msgs := []openai.ChatCompletionMessageParamUnion{openai.DeveloperMessage("be brief"), openai.UserMessage(tc.prompt), openai.SystemMessage("mid-conversation instructions")}
				if tc.lastIsResult {
					call := openai.ChatCompletionMessageFunctionToolCallParam{ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "Read", Arguments: readArgs}}
					msgs = append(msgs, openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
						ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &call}}}}, openai.ToolMessage(readResult, "call_1"))
				}
				p := openai.ChatCompletionNewParams{Model: "m", Messages: msgs, Tools: []openai.ChatCompletionToolUnionParam{fn("Bash"), fn("Read")},
					ReasoningEffort: shared.ReasoningEffortLow, Verbosity: openai.ChatCompletionNewParamsVerbosityLow}
				if tc.webSearch {
					p.WebSearchOptions = openai.ChatCompletionNewParamsWebSearchOptions{SearchContextSize: "low"}
				}
				before := s.Stats().WebSearch
				var choice openai.ChatCompletionChoice
				if stream {
					st := c.Chat.Completions.NewStreaming(context.Background(), p)
					acc := openai.ChatCompletionAccumulator{}
					for st.Next() {
						acc.AddChunk(st.Current())
					}
					if err := st.Err(); err != nil {
						t.Fatal(err)
					}
					choice = acc.Choices[0]
				} else {
					res, err := c.Chat.Completions.New(context.Background(), p)
					if err != nil {
						t.Fatal(err)
					}
					choice = res.Choices[0]
				}
				checkWebSearch(t, s, "m", before, tc.webSearch)
				calls := choice.Message.ToolCalls
				if tc.tool != "" {
					if choice.FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != tc.tool || calls[0].Function.Arguments != tc.args || calls[0].ID == "" {
						t.Fatalf("choice %s", choice.RawJSON())
					}
					return
				}
				if choice.FinishReason != "stop" || len(calls) != 0 || choice.Message.Content != tc.text {
					t.Fatalf("finish %q content %q, want %q", choice.FinishReason, choice.Message.Content, tc.text)
				}
			})
		}
	}
}

// checkWebSearch fails unless the last request for model was marked as
// offering web search, and counted, exactly when want.
func checkWebSearch(t *testing.T, s *Server, model string, before int64, want bool) {
	t.Helper()
	req, _ := s.LastRequest(model)
	if got := s.Stats().WebSearch - before; req.WebSearch != want || (got == 1) != want || got > 1 {
		t.Errorf("web search recorded %v, counted %d, want %v", req.WebSearch, got, want)
	}
}
