package adapter

// The Anthropic and Gemini adapters against the project's fake vendor
// (e2e/fakevendor, served by cmd/fakeupstream), which speaks both wire protocols with fault injection: the
// two must agree, since the sandbox, the benchmarks and the e2e tests put
// them together.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"switchyard/e2e/fakevendor"
)

func fakeVendor(t *testing.T, f fakevendor.Fault) string {
	t.Helper()
	srv := httptest.NewServer(fakevendor.New(fakevendor.Options{ReplyChunks: 3, Dimension: 8, Fault: f}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestTranslatingAdaptersAgainstFakeVendor(t *testing.T) {
	adapters := []struct {
		name  string
		a     Adapter
		model string
	}{
		{"anthropic", Anthropic{}, "claude-sonnet-4-5"},
		{"gemini", Gemini{}, "gemini-2.5-flash"},
	}
	ask := func(text string) *ChatRequest {
		return &ChatRequest{Messages: []Message{{Role: "user", Content: vtText(text)}}}
	}
	for _, ad := range adapters {
		t.Run(ad.name, func(t *testing.T) {
			target := func(url, key string) Target {
				return Target{BaseURL: url, APIKey: key, UpstreamModel: ad.model}
			}
			want := "Hello from " + ad.model + ". Hello from " + ad.model + ". Hello from " + ad.model + "."

			t.Run("chat and stream agree", func(t *testing.T) {
				url := fakeVendor(t, fakevendor.Fault{CachedTokens: 4})
				res, err := ad.a.Chat(context.Background(), target(url, "k1"), ask("hello there"))
				if err != nil {
					t.Fatal(err)
				}
				var c vtCompletion
				if err := json.Unmarshal(res.Body, &c); err != nil {
					t.Fatal(err)
				}
				if got := *c.Choices[0].Message.Content; got != want || res.FinishReason != "stop" {
					t.Errorf("chat: %q %q", got, res.FinishReason)
				}
				if !res.Usage.Known || res.Usage.Completion != 3 || res.Usage.Cached != 4 || res.Usage.Prompt < 5 {
					t.Errorf("chat usage %+v", res.Usage)
				}

				s, err := ad.a.ChatStream(context.Background(), target(url, "k1"), ask("hello there"))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				chunks, err := vendorCollect(t, s)
				sum := vendorSummarize(t, chunks, err)
				if sum.Content != want || sum.Finish != "stop" || sum.ErrClass != "" || sum.Usage == nil {
					t.Errorf("stream: %+v", sum)
				}
				if s.Usage() != res.Usage {
					t.Errorf("stream usage %+v, chat usage %+v", s.Usage(), res.Usage)
				}
			})

			t.Run("tool call", func(t *testing.T) {
				url := fakeVendor(t, fakevendor.Fault{})
				r := ask("please call tool")
				r.Tools = []Tool{{Name: "lookup", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}}
				res, err := ad.a.Chat(context.Background(), target(url, "k"), r)
				if err != nil {
					t.Fatal(err)
				}
				var c vtCompletion
				_ = json.Unmarshal(res.Body, &c)
				if calls := c.Choices[0].Message.ToolCalls; res.FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "lookup" || calls[0].Function.Arguments != "{}" || calls[0].ID == "" {
					t.Errorf("chat: %s", res.Body)
				}
				s, err := ad.a.ChatStream(context.Background(), target(url, "k"), r)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				chunks, err := vendorCollect(t, s)
				sum := vendorSummarize(t, chunks, err)
				if sum.Finish != "tool_calls" || len(sum.ToolCalls) != 1 || sum.ToolCalls[0].Function.Name != "lookup" {
					t.Errorf("stream: %+v", sum)
				}
			})

			t.Run("max tokens", func(t *testing.T) {
				url := fakeVendor(t, fakevendor.Fault{})
				r := ask("hi")
				r.MaxTokens = vtInt(1)
				res, err := ad.a.Chat(context.Background(), target(url, "k"), r)
				if err != nil || res.FinishReason != "length" {
					t.Errorf("res %+v err %v", res, err)
				}
			})

			failures := []struct {
				name   string
				key    string
				fault  fakevendor.Fault
				want   Class
				stream bool // only meaningful for a stream
			}{
				{"bad key", "bad-key", fakevendor.Fault{}, ClassAuth, false},
				{"billing", "broke-key", fakevendor.Fault{}, ClassBilling, false},
				{"rate limited", "k", fakevendor.Fault{Status: 429, RetryAfter: 3 * time.Second}, ClassRateLimited, false},
				{"server", "k", fakevendor.Fault{Status: 503}, ClassServer, false},
				{"content filter", "k", fakevendor.Fault{ContentFilter: true}, ClassContentFilter, false},
				{"in-stream error", "k", fakevendor.Fault{ErrorAfterChunks: 1}, ClassServer, true},
				{"cut stream", "k", fakevendor.Fault{CutAfterChunks: 1}, ClassNetwork, true},
			}
			for _, f := range failures {
				t.Run(f.name, func(t *testing.T) {
					url := fakeVendor(t, f.fault)
					if !f.stream {
						_, err := ad.a.Chat(context.Background(), target(url, f.key), ask("hi"))
						var ue *Error
						if !errors.As(err, &ue) || ue.Class != f.want {
							t.Fatalf("chat: %v, want %s", err, f.want)
						}
						if f.want == ClassRateLimited && ue.RetryAfter != 3*time.Second {
							t.Errorf("RetryAfter = %v", ue.RetryAfter)
						}
					}
					s, err := ad.a.ChatStream(context.Background(), target(url, f.key), ask("hi"))
					if err == nil {
						defer s.Close()
						_, err = vendorCollect(t, s)
					}
					if got := vendorErrClass(err); got != f.want {
						t.Errorf("stream: %v (%s), want %s", err, got, f.want)
					}
				})
			}

			t.Run("no usage is counted and marked estimated", func(t *testing.T) {
				url := fakeVendor(t, fakevendor.Fault{NoUsage: true})
				s, err := ad.a.ChatStream(context.Background(), target(url, "k"), ask("hi"))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				chunks, err := vendorCollect(t, s)
				if sum := vendorSummarize(t, chunks, err); sum.ErrClass != "" || sum.Usage == nil || !s.Usage().Known || !s.Usage().Estimated {
					t.Errorf("%+v usage %+v", sum, s.Usage())
				}
			})

			t.Run("first chunk too slow", func(t *testing.T) {
				url := fakeVendor(t, fakevendor.Fault{FirstChunkDelay: 5 * time.Second})
				ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
				defer cancel()
				s, err := ad.a.ChatStream(ctx, target(url, "k"), ask("hi"))
				if err == nil {
					defer s.Close()
					_, err = vendorCollect(t, s)
				}
				if vendorErrClass(err) != ClassTimeout || errors.Is(err, io.EOF) {
					t.Errorf("err = %v", err)
				}
			})

			t.Run("models", func(t *testing.T) {
				list, err := ad.a.ListModels(context.Background(), target(fakeVendor(t, fakevendor.Fault{}), "k"))
				if err != nil || len(list.Models) == 0 {
					t.Fatalf("%v %v", list, err)
				}
				for _, m := range list.Models {
					if strings.HasPrefix(m, "models/") {
						t.Errorf("model %q keeps its collection prefix", m)
					}
				}
			})
		})
	}

	t.Run("gemini embeddings", func(t *testing.T) {
		url := fakeVendor(t, fakevendor.Fault{})
		res, err := Gemini{}.Embed(context.Background(), Target{BaseURL: url, APIKey: "k", UpstreamModel: "gemini-embedding-001"},
			&EmbedRequest{Inputs: []string{"a", "b", "c"}, Dimensions: 4})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Vectors) != 3 || len(res.Vectors[0]) != 4 {
			t.Errorf("vectors %v", res.Vectors)
		}
		want := fakevendor.Vector("b", 4)
		for i := range want {
			if res.Vectors[1][i] != want[i] {
				t.Fatalf("vector 1 = %v, want %v (order kept)", res.Vectors[1], want)
			}
		}
	})
}
