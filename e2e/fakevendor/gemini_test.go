package fakevendor

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

type geminiResponse struct {
	Candidates []struct {
		Content *struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         *string `json:"text"`
				FunctionCall *struct {
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount"`
		TotalTokenCount         int `json:"totalTokenCount"`
		CachedContentTokenCount int `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
}

const geminiToolBody = `{"contents":[{"role":"user","parts":[{"text":"please call tool"}]}],"tools":[{"functionDeclarations":[{"name":"getTemperature","parameters":{"type":"OBJECT"}}]}]}`

func TestGeminiGenerateShape(t *testing.T) {
	_, base := start(t, Options{ReplyChunks: 2})
	h := geminiWire.header("AIza-test")
	tests := []struct {
		name, body, fixture string
		header              []string
		extra, missing      []string
		check               func(t *testing.T, r geminiResponse)
	}{
		{
			name: "text", fixture: "gemini-generate.json",
			body:    `{"systemInstruction":{"parts":[{"text":"abcd"}]},"contents":[{"role":"user","parts":[{"text":"abcd"}]}]}`,
			extra:   []string{"responseId", "candidates[].index"},
			missing: []string{"candidates[].safetyRatings", "candidates[].avgLogprobs", "usageMetadata.candidatesTokensDetails"},
			check: func(t *testing.T, r geminiResponse) {
				c := r.Candidates[0]
				if c.FinishReason != "STOP" || c.Content.Role != "model" || *c.Content.Parts[0].Text != "Hello from gemini-2.5-flash. Hello from gemini-2.5-flash." {
					t.Errorf("candidate = %+v", c)
				}
				if u := r.UsageMetadata; u.PromptTokenCount != 2 || u.CandidatesTokenCount != 2 || u.TotalTokenCount != 4 {
					t.Errorf("usage = %+v", u)
				}
				if r.ModelVersion != "gemini-2.5-flash" {
					t.Errorf("modelVersion = %q", r.ModelVersion)
				}
			},
		},
		{
			name: "cached tokens", fixture: "gemini-generate-implicit-caching.json",
			body:    geminiWire.body("", false),
			header:  []string{HeaderCachedTokens, "100"},
			extra:   []string{"responseId"},
			missing: []string{"usageMetadata.cacheTokensDetails", "usageMetadata.thoughtsTokenCount"},
			check: func(t *testing.T, r geminiResponse) {
				if u := r.UsageMetadata; u.CachedContentTokenCount != 100 || u.PromptTokenCount != 103 {
					t.Errorf("usage = %+v, want 100 cached of 103", u)
				}
			},
		},
		{
			name: "safety", fixture: "gemini-generate-safety.json",
			body:    geminiWire.body("", false),
			header:  []string{HeaderContentFilter, "1"},
			extra:   []string{"responseId", "candidates[].index", "candidates[].safetyRatings[].blocked"},
			missing: []string{"candidates[].content", "candidates[].avgLogprobs", "usageMetadata.candidatesTokenCount", "usageMetadata.candidatesTokensDetails"},
			check: func(t *testing.T, r geminiResponse) {
				if r.Candidates[0].FinishReason != "SAFETY" || r.Candidates[0].Content != nil {
					t.Errorf("candidate = %+v", r.Candidates[0])
				}
			},
		},
		{
			name: "function call", fixture: "gemini-generate.json",
			body:    geminiToolBody,
			extra:   []string{"responseId", "candidates[].index", "candidates[].content.parts[].functionCall"},
			missing: []string{"candidates[].safetyRatings", "candidates[].avgLogprobs", "usageMetadata.candidatesTokensDetails", "candidates[].content.parts[].text"},
			check: func(t *testing.T, r geminiResponse) {
				p := r.Candidates[0].Content.Parts[0]
				if p.FunctionCall == nil || p.FunctionCall.Name != "getTemperature" || p.FunctionCall.Args == nil || p.Text != nil {
					t.Errorf("part = %+v", p)
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
			res := send(t, http.MethodPost, base+"/v1beta/models/gemini-2.5-flash:generateContent", hh, tt.body)
			if res.status != 200 {
				t.Fatalf("status %d: %s", res.status, res.body)
			}
			sameShape(t, tt.name, keyPaths(t, res.body), keyPaths(t, readFixture(t, tt.fixture)), tt.extra, tt.missing)
			var r geminiResponse
			decode(t, res.body, &r)
			tt.check(t, r)
		})
	}
}

func TestGeminiStreamShape(t *testing.T) {
	_, base := start(t, Options{ReplyChunks: 3})
	h := geminiWire.header("AIza-test")

	t.Run("sse", func(t *testing.T) {
		res := send(t, http.MethodPost, base+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", h, geminiWire.body("", true))
		events := mustEvents(t, res)
		if len(events) != 4 {
			t.Fatalf("%d events, want 3 content + 1 final:\n%s", len(events), res.body)
		}
		var docs [][]byte
		var text string
		prev := 0
		for i, e := range events {
			if e.Event != "" || e.Raw != "" || e.Data == "[DONE]" {
				t.Fatalf("Gemini streams are data-only without [DONE], got %+v", e)
			}
			docs = append(docs, []byte(e.Data))
			var r geminiResponse
			decode(t, []byte(e.Data), &r)
			text += *r.Candidates[0].Content.Parts[0].Text
			u := r.UsageMetadata
			if u.CandidatesTokenCount < prev || u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount {
				t.Errorf("chunk %d usage %+v is not a cumulative snapshot", i, u)
			}
			prev = u.CandidatesTokenCount
			if (r.Candidates[0].FinishReason == "STOP") != (i == 3) {
				t.Errorf("chunk %d finishReason %q", i, r.Candidates[0].FinishReason)
			}
		}
		if prev != 3 || text != "Hello from gemini-2.5-flash."+strings.Repeat(" Hello from gemini-2.5-flash.", 2) {
			t.Errorf("final candidates tokens %d, text %q", prev, text)
		}
		var want [][]byte
		for _, e := range fixtureEvents(t, "gemini-stream.sse") {
			want = append(want, []byte(e.Data))
		}
		sameShape(t, "stream", keyPaths(t, docs...), keyPaths(t, want...), []string{"responseId", "candidates[].index"}, []string{"usageMetadata.candidatesTokensDetails"})
	})

	t.Run("function call", func(t *testing.T) {
		res := send(t, http.MethodPost, base+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", h, geminiToolBody)
		events := mustEvents(t, res)
		if len(events) != 2 || !strings.Contains(events[0].Data, `{"functionCall":{"name":"getTemperature","args":{}}}`) {
			t.Fatalf("events = %+v", events)
		}
		var want [][]byte
		for _, e := range fixtureEvents(t, "gemini-stream-function-call.sse") {
			want = append(want, []byte(e.Data))
		}
		sameShape(t, "function call stream", keyPaths(t, []byte(events[0].Data)), keyPaths(t, want...),
			[]string{"responseId", "usageMetadata", "modelVersion", "candidates[].content.role"}, []string{"candidates[].safetyRatings", "promptFeedback", "candidates[].finishReason", "candidates[].content.parts[].functionCall.args"})
	})

	t.Run("safety", func(t *testing.T) {
		hh := h.Clone()
		hh.Set(HeaderContentFilter, "true")
		events := mustEvents(t, send(t, http.MethodPost, base+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", hh, geminiWire.body("", true)))
		if len(events) != 1 || !strings.Contains(events[0].Data, `"finishReason":"SAFETY"`) {
			t.Errorf("events = %+v", events)
		}
	})

	t.Run("without alt=sse a JSON array", func(t *testing.T) {
		res := send(t, http.MethodPost, base+"/v1beta/models/gemini-2.5-flash:streamGenerateContent", h, geminiWire.body("", true))
		var arr []geminiResponse
		decode(t, res.body, &arr)
		if res.status != 200 || len(arr) != 4 || arr[3].Candidates[0].FinishReason != "STOP" {
			t.Errorf("status %d, %d items: %s", res.status, len(arr), res.body)
		}
	})
}

func TestGeminiErrors(t *testing.T) {
	_, base := start(t, Options{})
	body := geminiWire.body("", false)
	tests := []struct {
		name, url  string
		header     http.Header
		status     int
		rpc        string
		reason     string // ErrorInfo reason, if any
		fixture    string
		retryDelay string
	}{
		{name: "429", header: http.Header{HeaderStatus: {"429"}, HeaderRetryAfter: {"2500ms"}}, status: 429, rpc: "RESOURCE_EXHAUSTED", fixture: "gemini-error-429.json", retryDelay: "3s"},
		{name: "500", header: http.Header{HeaderStatus: {"500"}}, status: 500, rpc: "INTERNAL"},
		{name: "503", header: http.Header{HeaderStatus: {"503"}}, status: 503, rpc: "UNAVAILABLE"},
		{name: "504", header: http.Header{HeaderStatus: {"504"}}, status: 504, rpc: "DEADLINE_EXCEEDED"},
		{name: "404", header: http.Header{HeaderStatus: {"404"}}, status: 404, rpc: "NOT_FOUND"},
		{name: "401", header: http.Header{HeaderStatus: {"401"}}, status: 401, rpc: "UNAUTHENTICATED"},
		{name: "bad key as the real API: 400 API_KEY_INVALID", header: http.Header{"X-Goog-Api-Key": {"bad-1"}}, status: 400, rpc: "INVALID_ARGUMENT", reason: "API_KEY_INVALID", fixture: "gemini-error-400-api-key.json"},
		{name: "bad key in ?key=", url: "?key=bad-2", header: http.Header{"X-Goog-Api-Key": {""}}, status: 400, rpc: "INVALID_ARGUMENT", reason: "API_KEY_INVALID"},
		{name: "broke key", header: http.Header{"X-Goog-Api-Key": {"broke-1"}}, status: 403, rpc: "PERMISSION_DENIED", reason: "BILLING_DISABLED"},
		{name: "missing key", header: http.Header{"X-Goog-Api-Key": {""}}, status: 403, rpc: "PERMISSION_DENIED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := geminiWire.header("AIza-ok")
			for k, v := range tt.header {
				if v[0] == "" {
					h.Del(k)
				} else {
					h[k] = v
				}
			}
			res := send(t, http.MethodPost, base+"/v1beta/models/gemini-2.5-flash:generateContent"+tt.url, h, body)
			var e struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
					Status  string `json:"status"`
					Details []struct {
						Type       string `json:"@type"`
						Reason     string `json:"reason"`
						RetryDelay string `json:"retryDelay"`
					} `json:"details"`
				} `json:"error"`
			}
			decode(t, res.body, &e)
			if res.status != tt.status || e.Error.Code != tt.status || e.Error.Status != tt.rpc || e.Error.Message == "" {
				t.Errorf("status %d body %s, want %d %s", res.status, res.body, tt.status, tt.rpc)
			}
			var reason, delay string
			for _, d := range e.Error.Details {
				reason += d.Reason
				delay += d.RetryDelay
			}
			if reason != tt.reason || delay != tt.retryDelay {
				t.Errorf("details reason %q retryDelay %q, want %q %q", reason, delay, tt.reason, tt.retryDelay)
			}
			if tt.fixture != "" {
				sameShape(t, tt.name, keyPaths(t, res.body), keyPaths(t, readFixture(t, tt.fixture)),
					[]string{"error.details[].retryDelay"}, []string{"error.details[].locale", "error.details[].message", "error.details[].detail", "error.details[].links", "error.details[].metadata.consumer", "error.details[].metadata.quota_limit", "error.details[].metadata.quota_limit_value", "error.details[].metadata.quota_location", "error.details[].metadata.quota_metric", "error.details[].reason", "error.details[].domain", "error.details[].metadata"})
			}
		})
	}
}

func TestGeminiEmbeddings(t *testing.T) {
	_, base := start(t, Options{Dimension: 8})
	h := geminiWire.header("AIza-test")

	res := send(t, http.MethodPost, base+"/v1beta/models/gemini-embedding-001:embedContent", h,
		`{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"What is the meaning of life?"}]}}`)
	var one struct {
		Embedding struct {
			Values []float32 `json:"values"`
		} `json:"embedding"`
	}
	decode(t, res.body, &one)
	if res.status != 200 || !equalF32(one.Embedding.Values, Vector("What is the meaning of life?", 8)) {
		t.Errorf("embedContent %d: %s", res.status, res.body)
	}
	if got := keyPaths(t, res.body); len(got) != 2 || !got["embedding.values"] {
		t.Errorf("embedContent shape = %v", got)
	}

	res = send(t, http.MethodPost, base+"/v1beta/models/gemini-embedding-001:batchEmbedContents", h,
		`{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]}},{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"b"}]},"outputDimensionality":3}]}`)
	var batch struct {
		Embeddings []struct {
			Values []float32 `json:"values"`
		} `json:"embeddings"`
	}
	decode(t, res.body, &batch)
	if res.status != 200 || len(batch.Embeddings) != 2 || !equalF32(batch.Embeddings[0].Values, Vector("a", 8)) || !equalF32(batch.Embeddings[1].Values, Vector("b", 3)) {
		t.Errorf("batchEmbedContents %d: %s", res.status, res.body)
	}
	if got := keyPaths(t, res.body); len(got) != 2 || !got["embeddings[].values"] {
		t.Errorf("batchEmbedContents shape = %v", got)
	}

	for _, bad := range []struct{ method, body string }{
		{"embedContent", `{"content":{"parts":[]}}`},
		{"batchEmbedContents", `{"requests":[]}`},
		{"batchEmbedContents", `{"requests":[{"content":{"parts":[{"text":""}]}}]}`},
	} {
		res := send(t, http.MethodPost, base+"/v1beta/models/gemini-embedding-001:"+bad.method, h, bad.body)
		if res.status != 400 || !strings.Contains(string(res.body), "INVALID_ARGUMENT") {
			t.Errorf("%s %s: %d %s", bad.method, bad.body, res.status, res.body)
		}
	}
}

func TestGeminiModelsAndRoutes(t *testing.T) {
	s, base := start(t, Options{})
	res := send(t, http.MethodGet, base+"/v1beta/models?key=AIza-q", nil, "")
	var list struct {
		Models []struct {
			Name                       string   `json:"name"`
			SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
		} `json:"models"`
	}
	decode(t, res.body, &list)
	if res.status != 200 || len(list.Models) != 2 || list.Models[0].Name != "models/gemini-2.5-flash" || list.Models[1].SupportedGenerationMethods[0] != "embedContent" {
		t.Errorf("list %d: %s", res.status, res.body)
	}
	if s.CountKey("AIza-q") != 1 {
		t.Error("?key= not taken as the key")
	}
	// The v1 path works like v1beta.
	res = send(t, http.MethodPost, base+"/v1/models/gemini-2.5-flash:generateContent", geminiWire.header("AIza"), geminiWire.body("", false))
	if res.status != 200 {
		t.Errorf("v1 generateContent: %d %s", res.status, res.body)
	}
	res = send(t, http.MethodPost, base+"/v1beta/models/gemini-2.5-flash:countTokens", geminiWire.header("AIza"), geminiWire.body("", false))
	if res.status != 404 || !strings.Contains(string(res.body), "NOT_FOUND") {
		t.Errorf("unknown method: %d %s", res.status, res.body)
	}
	res = send(t, http.MethodPost, base+"/v1beta/models/gemini-2.5-flash:generateContent", geminiWire.header("AIza"), `{"contents":[]}`)
	if res.status != 400 || !strings.Contains(string(res.body), "contents is not specified") {
		t.Errorf("empty contents: %d %s", res.status, res.body)
	}
}

// Scripted tool calls over Gemini's REST wire, whole and streamed: named
// call, unknown name, a functionResponse (echoed as its response JSON),
// google_search; with a system-reminder part and a thinkingConfig.
func TestGeminiScriptedTools(t *testing.T) {
	s, base := start(t, Options{ReplyChunks: 3})
	h := geminiWire.header("AIza-test")
	for _, stream := range []bool{false, true} {
		for i, tc := range scriptedCases {
			t.Run(tc.name+map[bool]string{true: " streamed"}[stream], func(t *testing.T) {
				prompt, _ := json.Marshal(tc.prompt)
				contents := `{"role":"user","parts":[{"text":"<system-reminder>context</system-reminder>"},{"text":` + string(prompt) + `}]}`
				if tc.lastIsResult {
					contents += `,{"role":"model","parts":[{"functionCall":{"name":"Read","args":{"file_path":"/tmp/x/notes.txt"}},"thoughtSignature":"c2ln"}]}` +
						`,{"role":"user","parts":[{"functionResponse":{"name":"Read","response":{"content": "     1\tthe notes say 42"}}}]}`
					tc.text = `Tool result: {"content":"     1\tthe notes say 42"}`
				}
				tools := `{"functionDeclarations":[{"name":"Bash","parameters":{"type":"OBJECT"}},{"name":"Read"}]}`
				if tc.webSearch {
					tools = map[bool]string{true: `{"google_search":{}},`, false: `{"googleSearch":{}},`}[i%2 == 0] + tools
				}
				thinking := map[bool]string{true: `{"thinkingBudget":1024,"includeThoughts":true}`, false: `{"thinkingLevel":"low","includeThoughts":false}`}[stream]
				body := `{"contents":[` + contents + `],"tools":[` + tools + `],"generationConfig":{"thinkingConfig":` + thinking + `}}`
				before := s.Stats().WebSearch
				var docs []string
				if stream {
					for _, e := range mustEvents(t, send(t, http.MethodPost, base+"/v1beta/models/m:streamGenerateContent?alt=sse", h, body)) {
						docs = append(docs, e.Data)
					}
				} else {
					res := send(t, http.MethodPost, base+"/v1beta/models/m:generateContent", h, body)
					if res.status != 200 {
						t.Fatalf("status %d: %s", res.status, res.body)
					}
					docs = []string{string(res.body)}
				}
				checkWebSearch(t, s, "m", before, tc.webSearch)
				var text strings.Builder
				var call *struct {
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				}
				finish := ""
				for _, d := range docs {
					var r geminiResponse
					decode(t, []byte(d), &r)
					for _, p := range r.Candidates[0].Content.Parts {
						if p.Text != nil {
							text.WriteString(*p.Text)
						}
						if p.FunctionCall != nil {
							call = p.FunctionCall
						}
					}
					finish += r.Candidates[0].FinishReason
				}
				if tc.tool != "" {
					if call == nil {
						t.Fatalf("no call in %v", docs)
					}
					args, _ := json.Marshal(call.Args)
					if call.Name != tc.tool || string(args) != tc.args || text.Len() > 0 || finish != "STOP" {
						t.Fatalf("call %+v text %q finish %q in %v", call, text.String(), finish, docs)
					}
					return
				}
				if call != nil || text.String() != tc.text || finish != "STOP" {
					t.Fatalf("text %q finish %q, want %q (%v)", text.String(), finish, tc.text, docs)
				}
			})
		}
	}
}
