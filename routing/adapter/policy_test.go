package adapter_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/frontdoor"
)

// fieldSamples sets each field of ChatFields (and one unknown field) to a
// value that asks for something: the JSON members added to a minimal body.
var fieldSamples = map[string]string{
	"model":                  ``,
	"messages":               ``,
	"stream":                 `"stream":true`,
	"stream_options":         `"stream":true,"stream_options":{"include_usage":true}`,
	"max_tokens":             `"max_tokens":50`,
	"max_completion_tokens":  `"max_completion_tokens":60`,
	"temperature":            `"temperature":0.5`,
	"top_p":                  `"top_p":0.9`,
	"stop":                   `"stop":["END"]`,
	"tools":                  `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}]`,
	"tool_choice":            `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}],"tool_choice":"required"`,
	"reasoning_effort":       `"reasoning_effort":"low"`,
	"thinking":               `"thinking":{"type":"enabled","budget_tokens":2048}`,
	"response_format":        `"response_format":{"type":"json_schema","json_schema":{"name":"person","schema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}}}`,
	"user":                   `"user":"u-1"`,
	"n":                      `"n":2`,
	"seed":                   `"seed":7`,
	"frequency_penalty":      `"frequency_penalty":0.5`,
	"presence_penalty":       `"presence_penalty":0.25`,
	"logit_bias":             `"logit_bias":{"50256":-100}`,
	"logprobs":               `"logprobs":true`,
	"top_logprobs":           `"top_logprobs":2`,
	"parallel_tool_calls":    `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}],"parallel_tool_calls":false`,
	"modalities":             `"modalities":["text","audio"]`,
	"audio":                  `"audio":{"voice":"alloy","format":"wav"}`,
	"prediction":             `"prediction":{"type":"content","content":"x"}`,
	"service_tier":           `"service_tier":"flex"`,
	"store":                  `"store":true`,
	"metadata":               `"metadata":{"k":"v"}`,
	"web_search_options":     `"web_search_options":{}`,
	"functions":              `"functions":[{"name":"f"}]`,
	"function_call":          `"function_call":"auto"`,
	"verbosity":              `"verbosity":"low"`,
	"prompt_cache_key":       `"prompt_cache_key":"k"`,
	"prompt_cache_retention": `"prompt_cache_retention":"24h"`,
	"safety_identifier":      `"safety_identifier":"s-1"`,
	"top_k":                  `"top_k":5`,
	"effort":                 ``, // a hint: set on the parsed request (walkRequest)
	adapter.AnyOtherField:    `"x_vendor":{"a":1}`,
}

// upstreamSaw is what the fake vendor received for one request.
type upstreamSaw struct {
	body   gjson.Result // the last body
	path   string
	calls  int64
	chunks []adapter.Chunk // the stream the caller got, for stream requests
}

// translated is the evidence, per protocol and field, that a Translate
// decision did translate: what the vendor's request (or the caller's
// stream) shows.
var translated = map[config.Protocol]map[string]func(s upstreamSaw) bool{
	config.ProtocolOpenAI: {
		"model":          func(s upstreamSaw) bool { return s.body.Get("model").Str == "up-model" },
		"stream":         func(s upstreamSaw) bool { return s.body.Get("stream").Bool() },
		"stream_options": func(s upstreamSaw) bool { return s.body.Get("stream_options.include_usage").Bool() },
		"effort":         func(s upstreamSaw) bool { return s.body.Get("reasoning_effort").Str == "high" },
	},
	config.ProtocolAnthropic: {
		"model":                 func(s upstreamSaw) bool { return s.body.Get("model").Str == "up-model" },
		"messages":              func(s upstreamSaw) bool { return s.body.Get("messages.0.content.0.text").Str == "hi" },
		"stream":                func(s upstreamSaw) bool { return s.body.Get("stream").Bool() },
		"stream_options":        usageChunkLast,
		"max_tokens":            func(s upstreamSaw) bool { return s.body.Get("max_tokens").Int() == 50 },
		"max_completion_tokens": func(s upstreamSaw) bool { return s.body.Get("max_tokens").Int() == 60 },
		"temperature":           func(s upstreamSaw) bool { return s.body.Get("temperature").Num == 0.5 },
		"top_p":                 func(s upstreamSaw) bool { return s.body.Get("top_p").Num == 0.9 },
		"stop":                  func(s upstreamSaw) bool { return s.body.Get("stop_sequences.0").Str == "END" },
		"tools":                 func(s upstreamSaw) bool { return s.body.Get("tools.0.input_schema.properties.a").Exists() },
		"tool_choice":           func(s upstreamSaw) bool { return s.body.Get("tool_choice.type").Str == "any" },
		"reasoning_effort":      func(s upstreamSaw) bool { return s.body.Get("thinking.budget_tokens").Int() == 2048 },
		"thinking":              func(s upstreamSaw) bool { return s.body.Get("thinking.type").Str == "enabled" },
		"response_format": func(s upstreamSaw) bool {
			return s.body.Get("tool_choice.name").Str == "person" && s.body.Get("tools.0.input_schema.required.0").Str == "name" ||
				s.body.Get("output_config.format.schema.required.0").Str == "name" // structured output capability
		},
		"user":                func(s upstreamSaw) bool { return s.body.Get("metadata.user_id").Str == "u-1" },
		"safety_identifier":   func(s upstreamSaw) bool { return s.body.Get("metadata.user_id").Str == "s-1" },
		"n":                   func(s upstreamSaw) bool { return s.calls == 2 },
		"parallel_tool_calls": func(s upstreamSaw) bool { return s.body.Get("tool_choice.disable_parallel_tool_use").Bool() },
		"top_k":               func(s upstreamSaw) bool { return s.body.Get("top_k").Int() == 5 },
		"web_search_options": func(s upstreamSaw) bool {
			return s.body.Get(`tools.#(type=="web_search_20250305").name`).Str == "web_search"
		},
		"effort": func(s upstreamSaw) bool { return s.body.Get("output_config.effort").Str == "high" },
	},
	config.ProtocolBedrock: {
		"model":                 func(s upstreamSaw) bool { return strings.HasPrefix(s.path, "/model/up-model/converse") },
		"messages":              func(s upstreamSaw) bool { return s.body.Get("messages.0.content.0.text").Str == "hi" },
		"stream":                func(s upstreamSaw) bool { return strings.HasSuffix(s.path, "/converse-stream") },
		"stream_options":        usageChunkLast,
		"max_tokens":            func(s upstreamSaw) bool { return s.body.Get("inferenceConfig.maxTokens").Int() == 50 },
		"max_completion_tokens": func(s upstreamSaw) bool { return s.body.Get("inferenceConfig.maxTokens").Int() == 60 },
		"temperature":           func(s upstreamSaw) bool { return s.body.Get("inferenceConfig.temperature").Num == 0.5 },
		"top_p":                 func(s upstreamSaw) bool { return s.body.Get("inferenceConfig.topP").Num == 0.9 },
		"stop":                  func(s upstreamSaw) bool { return s.body.Get("inferenceConfig.stopSequences.0").Str == "END" },
		"tools": func(s upstreamSaw) bool {
			return s.body.Get("toolConfig.tools.0.toolSpec.inputSchema.json.properties.a").Exists()
		},
		"tool_choice": func(s upstreamSaw) bool { return s.body.Get("toolConfig.toolChoice.any").Exists() },
	},
	config.ProtocolGemini: {
		"model":                 func(s upstreamSaw) bool { return strings.Contains(s.path, "/models/up-model:") },
		"messages":              func(s upstreamSaw) bool { return s.body.Get("contents.0.parts.0.text").Str == "hi" },
		"stream":                func(s upstreamSaw) bool { return strings.HasSuffix(s.path, ":streamGenerateContent") },
		"stream_options":        usageChunkLast,
		"max_tokens":            func(s upstreamSaw) bool { return s.body.Get("generationConfig.maxOutputTokens").Int() == 50 },
		"max_completion_tokens": func(s upstreamSaw) bool { return s.body.Get("generationConfig.maxOutputTokens").Int() == 60 },
		"temperature":           func(s upstreamSaw) bool { return s.body.Get("generationConfig.temperature").Num == 0.5 },
		"top_p":                 func(s upstreamSaw) bool { return s.body.Get("generationConfig.topP").Num == 0.9 },
		"stop":                  func(s upstreamSaw) bool { return s.body.Get("generationConfig.stopSequences.0").Str == "END" },
		"tools":                 func(s upstreamSaw) bool { return s.body.Get("tools.0.functionDeclarations.0.name").Str == "f" },
		"tool_choice":           func(s upstreamSaw) bool { return s.body.Get("toolConfig.functionCallingConfig.mode").Str == "ANY" },
		"reasoning_effort": func(s upstreamSaw) bool {
			return s.body.Get("generationConfig.thinkingConfig.thinkingBudget").Int() == 2048
		},
		"thinking": func(s upstreamSaw) bool {
			return s.body.Get("generationConfig.thinkingConfig.thinkingBudget").Int() == 2048
		},
		"response_format": func(s upstreamSaw) bool {
			return s.body.Get("generationConfig.responseMimeType").Str == "application/json" &&
				s.body.Get("generationConfig.responseJsonSchema.required.0").Str == "name"
		},
		"n":                 func(s upstreamSaw) bool { return s.body.Get("generationConfig.candidateCount").Int() == 2 },
		"seed":              func(s upstreamSaw) bool { return s.body.Get("generationConfig.seed").Int() == 7 },
		"frequency_penalty": func(s upstreamSaw) bool { return s.body.Get("generationConfig.frequencyPenalty").Num == 0.5 },
		"presence_penalty":  func(s upstreamSaw) bool { return s.body.Get("generationConfig.presencePenalty").Num == 0.25 },
		"top_k":             func(s upstreamSaw) bool { return s.body.Get("generationConfig.topK").Int() == 5 },
		"web_search_options": func(s upstreamSaw) bool {
			return s.body.Get("tools.#(googleSearch)").Exists()
		},
		"effort": func(s upstreamSaw) bool {
			return s.body.Get("generationConfig.thinkingConfig.thinkingBudget").Int() == 16384
		},
	},
}

// usageChunkLast: the caller's stream ended with the usage-only chunk.
func usageChunkLast(s upstreamSaw) bool {
	return len(s.chunks) > 0 && s.chunks[len(s.chunks)-1].UsageOnly
}

// TestFieldTables walks every OpenAI chat field the parser knows, the
// canonical hints and one field it does not know through every adapter,
// under no declared capabilities and under all of them: the parser
// records the field as set, the adapter's table has a decision for it,
// and the adapter does what the decision says against the fake vendor —
// pass forwards the value untouched, translate leaves its evidence in the
// vendor's request, drop keeps it from the vendor and names it in the
// verdict, refuse answers unsupported_parameter naming the field without
// calling the vendor. The requests are marked as a door's translation, so
// OpenAI's table applies too (a chat-completions caller reaches an
// OpenAI-protocol vendor natively).
func TestFieldTables(t *testing.T) {
	fake := fakevendor.New(fakevendor.Options{})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	rows := append(append(adapter.ChatFields[:], adapter.Hints[:]...), adapter.AnyOtherField)
	for _, field := range rows {
		if _, ok := fieldSamples[field]; !ok {
			t.Fatalf("no sample value for field %s", field)
		}
	}
	all := config.Capabilities{Thinking: true, Vision: true, Tools: true, WebSearch: true, StructuredOutput: true}
	for p, ad := range adapter.All() {
		fielded, ok := ad.(adapter.Fielded)
		if !ok {
			// Azure speaks OpenAI's wire and is judged by its table
			// (config.WireOf); its own tests cover its addressing.
			if config.WireOf(p, "") == p {
				t.Errorf("%s: no field table and no other wire", p)
			}
			continue
		}
		table := fielded.Fields()
		if len(table) != len(rows) {
			t.Errorf("%s: table has %d rows, want %d (every field, hint and %q)", p, len(table), len(rows), adapter.AnyOtherField)
		}
		for _, field := range rows {
			for _, caps := range []config.Capabilities{{}, all} {
				t.Run(fmt.Sprintf("%s/%s/%v", p, field, caps == all), func(t *testing.T) {
					rule, ok := table[field]
					if !ok || rule.How == "" {
						t.Fatalf("no decision (or no words for it) for %s", field)
					}
					walkField(t, fake, srv.URL, p, ad, field, rule, caps)
				})
			}
		}
	}
}

// walkRequest is the request of one field's sample, marked as a door's
// translation.
func walkRequest(t *testing.T, field string) (*adapter.ChatRequest, string) {
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]`
	if s := fieldSamples[field]; s != "" {
		body += "," + s
	}
	body += "}"
	r, err := frontdoor.ParseChatRequest([]byte(body))
	if err != nil {
		t.Fatalf("sample refused by the parser: %v", err)
	}
	switch field {
	case adapter.AnyOtherField:
		if len(r.Unknown) != 1 || r.Unknown[0] != "x_vendor" {
			t.Fatalf("unknown fields %v", r.Unknown)
		}
	case "effort":
		r.Effort = "high"
	default:
		if !r.Set.Has(field) {
			t.Fatalf("the parser does not record %s as set (set: %v)", field, r.Set.Names())
		}
	}
	r.Native = &adapter.Native{Door: "test"}
	return r, body
}

// walkField sends one field's sample through adapter ad and checks the
// outcome against rule.
func walkField(t *testing.T, fake *fakevendor.Server, url string, p config.Protocol, ad adapter.Adapter, field string, rule adapter.FieldRule, caps config.Capabilities) {
	r, body := walkRequest(t, field)
	base := url
	if p == config.ProtocolOpenAI {
		base += "/v1"
	}
	target := adapter.Target{BaseURL: base, APIKey: "k", UpstreamModel: "up-model", Capabilities: caps}
	if p == config.ProtocolBedrock {
		target.APIKey, target.Region = "AKIAWALK:fake-secret-AKIAWALK", "us-east-1"
	}
	fake.Reset()
	saw, callErr := walkCall(fake, ad, target, r)
	v := adapter.Judge(p, r, caps, false)
	name := field
	if field == adapter.AnyOtherField {
		name = "x_vendor"
	}
	decision := rule.Decision
	if rule.RefuseIf != nil && rule.RefuseIf(r, caps) {
		decision = adapter.Refuse
	} else if rule.DropIf != nil && rule.DropIf(r, caps) {
		decision = adapter.Drop
	}
	switch decision {
	case adapter.Refuse:
		var e *adapter.Error
		if v.Refused != name || !errors.As(callErr, &e) || e.Code != adapter.CodeUnsupportedParameter || e.Param != name || saw.calls != 0 {
			t.Fatalf("refuse: router sees %q, adapter error %v, %d vendor calls", v.Refused, callErr, saw.calls)
		}
	case adapter.Pass:
		if v.Refused != "" || callErr != nil || slices.Contains(v.Dropped, name) {
			t.Fatalf("pass: verdict %+v, error %v", v, callErr)
		}
		want := gjson.Get(body, name).Raw
		if got := saw.body.Get(name).Raw; !bytes.Equal(compactJSON(got), compactJSON(want)) {
			t.Fatalf("pass: vendor got %s = %s, caller sent %s", name, got, want)
		}
	case adapter.Drop:
		if v.Refused != "" || callErr != nil || !slices.Contains(v.Dropped, name) {
			t.Fatalf("drop: verdict %+v, error %v", v, callErr)
		}
		if got := saw.body.Get(name); got.Exists() || saw.body.Get("generationConfig."+name).Exists() {
			t.Fatalf("drop: the vendor got %s = %s", name, got.Raw)
		}
		if strict := adapter.Judge(p, r, caps, true); strict.Refused != v.Dropped[0] {
			t.Fatalf("strict: refused %q, want the first drop %q", strict.Refused, v.Dropped[0])
		}
	case adapter.Translate:
		if v.Refused != "" || callErr != nil || slices.Contains(v.Dropped, name) {
			t.Fatalf("translate: verdict %+v, error %v", v, callErr)
		}
		check := translated[p][field]
		if check == nil {
			t.Fatalf("translate: no evidence check for %s/%s in the test", p, field)
		}
		if !check(saw) {
			t.Fatalf("translate: no trace of %s in what the vendor got: %s %s", field, saw.path, saw.body.Raw)
		}
	default:
		t.Fatalf("unknown decision %q", rule.Decision)
	}
}

// walkCall makes the adapter's call (streamed when r asks) and reports what
// the fake vendor saw.
func walkCall(fake *fakevendor.Server, ad adapter.Adapter, target adapter.Target, r *adapter.ChatRequest) (upstreamSaw, error) {
	saw := upstreamSaw{}
	var callErr error
	if r.Stream {
		var s adapter.Stream
		if s, callErr = ad.ChatStream(context.Background(), target, r); callErr == nil {
			for {
				c, err := s.Next()
				if err != nil {
					if !errors.Is(err, io.EOF) {
						callErr = err
					}
					break
				}
				saw.chunks = append(saw.chunks, c)
			}
			s.Close()
		}
	} else {
		_, callErr = ad.Chat(context.Background(), target, r)
	}
	saw.calls = fake.Count("up-model")
	if last, ok := fake.LastRequest("up-model"); ok {
		saw.body, saw.path = gjson.ParseBytes(last.Body), last.Path
	}
	return saw, callErr
}

func compactJSON(s string) []byte {
	var b bytes.Buffer
	if gjson.Valid(s) {
		b.WriteString(gjson.Parse(s).Get("@ugly").Raw)
	}
	return b.Bytes()
}

// The conditional refusals of Translate rows: the field is translated for
// most requests and refused where the vendor would not honour it.
func TestFieldTablesConditionalRefusals(t *testing.T) {
	native := config.Capabilities{StructuredOutput: true}
	rf := `"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object"}}}`
	tools := `"tools":[{"type":"function","function":{"name":"f"}}]`
	for _, tc := range []struct {
		name    string
		p       config.Protocol
		members string
		caps    config.Capabilities
		want    string
	}{
		{"temperature above Anthropic's range", config.ProtocolAnthropic, `"temperature":1.5`, config.Capabilities{}, "temperature"},
		{"temperature 1 with thinking", config.ProtocolAnthropic, `"temperature":1,"reasoning_effort":"low"`, config.Capabilities{}, ""},
		{"temperature with thinking", config.ProtocolAnthropic, `"temperature":0.3,"reasoning_effort":"low"`, config.Capabilities{}, "temperature"},
		{"low top_p with thinking", config.ProtocolAnthropic, `"top_p":0.5,"thinking":{"type":"enabled"}`, config.Capabilities{}, "top_p"},
		{"forced tool with thinking", config.ProtocolAnthropic, tools + `,"tool_choice":"required","reasoning_effort":"high"`, config.Capabilities{}, "tool_choice"},
		{"format tool beside the caller's tools", config.ProtocolAnthropic, tools + "," + rf, config.Capabilities{}, "response_format"},
		{"native format beside the caller's tools", config.ProtocolAnthropic, tools + "," + rf, native, ""},
		{"format tool with thinking", config.ProtocolAnthropic, rf + `,"reasoning_effort":"low"`, config.Capabilities{}, "response_format"},
		{"json_object has no native form", config.ProtocolAnthropic, tools + `,"response_format":{"type":"json_object"}`, native, "response_format"},
		{"user and another safety_identifier", config.ProtocolAnthropic, `"user":"a","safety_identifier":"b"`, config.Capabilities{}, "user"},
		{"user and the same safety_identifier", config.ProtocolAnthropic, `"user":"a","safety_identifier":"a"`, config.Capabilities{}, ""},
		{"defaults ask for nothing", config.ProtocolGemini, `"n":1,"logprobs":false,"parallel_tool_calls":true,"store":false,"metadata":{},"service_tier":"auto","modalities":["text"],"response_format":{"type":"text"},"frequency_penalty":0`, config.Capabilities{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := frontdoor.ParseChatRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],` + tc.members + `}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := adapter.Refusal(tc.p, r, tc.caps, false); got != tc.want {
				t.Fatalf("refused %q, want %q", got, tc.want)
			}
		})
	}
}
