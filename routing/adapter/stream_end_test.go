package adapter

import (
	"errors"
	"io"
	"testing"

	"github.com/tidwall/gjson"
)

// scripted is a Stream that returns its chunks, then io.EOF.
type scripted struct {
	chunks []Chunk
	usage  Usage
}

func (s *scripted) Next() (Chunk, error) {
	if len(s.chunks) == 0 {
		return Chunk{}, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}
func (s *scripted) Usage() Usage { return s.usage }
func (s *scripted) Close() error { return nil }

func chunkOf(data string) Chunk {
	c := Chunk{Data: []byte(data)}
	choices, reasons := chunkFinishes(c.Data)
	if len(choices) > 0 {
		c.FinishReason = reasons[0]
	}
	c.Content = chunkHasDelta(c.Data)
	c.UsageOnly = gjson.Get(data, "choices.#").Int() == 0 && gjson.Get(data, "usage").IsObject()
	return c
}

// Whatever order the vendor puts its finish reasons in, each choice gets
// exactly one, on its last chunk, and the usage chunk comes last.
func TestEndStreamOneFinishPerChoiceAtTheEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		usage  Usage
	}{
		{"finish on every chunk", []string{
			`{"id":"a","choices":[{"index":0,"delta":{"content":"He"},"finish_reason":"stop"}]}`,
			`{"id":"a","choices":[{"index":0,"delta":{"content":"llo"},"finish_reason":"stop"}]}`,
			`{"id":"a","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"length"}]}`,
		}, Usage{Prompt: 1, Completion: 3, Known: true}},
		{"a finish-only chunk, then more content", []string{
			`{"id":"a","choices":[{"index":0,"delta":{"content":"He"},"finish_reason":null}]}`,
			`{"id":"a","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"id":"a","choices":[{"index":0,"delta":{"content":"llo!"},"finish_reason":null}]}`,
			`{"id":"a","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
			`{"id":"a","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":3}}`,
		}, Usage{Prompt: 1, Completion: 3, Known: true}},
		{"two choices interleaved", []string{
			`{"id":"a","choices":[{"index":0,"delta":{"content":"He"},"finish_reason":"stop"}]}`,
			`{"id":"a","choices":[{"index":1,"delta":{"content":"He"},"finish_reason":"stop"}]}`,
			`{"id":"a","choices":[{"index":0,"delta":{"content":"llo!"},"finish_reason":"length"}]}`,
			`{"id":"a","choices":[{"index":1,"delta":{"content":"llo!"}}]}`,
		}, Usage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in []Chunk
			for _, c := range tc.chunks {
				in = append(in, chunkOf(c))
			}
			s := finishing(&scripted{chunks: in, usage: tc.usage}, &ChatRequest{Messages: []Message{{Role: "user", Content: vtText("hi")}}})
			var out []Chunk
			for {
				c, err := s.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, c)
			}
			text, finish := map[int64]string{}, map[int64]string{}
			for i, c := range out[:len(out)-1] {
				gjson.GetBytes(c.Data, "choices").ForEach(func(_, ch gjson.Result) bool {
					idx := ch.Get("index").Int()
					if _, done := finish[idx]; done {
						t.Fatalf("chunk %d: choice %d continues after its finish: %s", i, idx, c.Data)
					}
					text[idx] += ch.Get("delta.content").Str
					if f := ch.Get("finish_reason"); f.Type == gjson.String {
						finish[idx] = f.Str
						if c.FinishReason == "" {
							t.Errorf("chunk %d carries a finish but its Chunk does not say so", i)
						}
					}
					return true
				})
			}
			for idx, s := range text {
				if s != "Hello!" || finish[idx] == "" {
					t.Errorf("choice %d: %q, finish %q", idx, s, finish[idx])
				}
			}
			if finish[0] != "length" {
				t.Errorf("choice 0 ended with %q: the last reason the vendor gave wins", finish[0])
			}
			last := out[len(out)-1]
			if !last.UsageOnly || gjson.GetBytes(last.Data, "usage.prompt_tokens").Int() == 0 {
				t.Fatalf("last chunk %s", last.Data)
			}
			if u := s.Usage(); !u.Known || u.Estimated != !tc.usage.Known {
				t.Errorf("usage %+v", u)
			}
		})
	}
}
