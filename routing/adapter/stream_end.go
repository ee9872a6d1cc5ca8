package adapter

import (
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// endStream makes every chat stream end the same way, whatever the vendor
// does:
//
//   - exactly one finish_reason per choice, on that choice's last chunk.
//     Some vendors (Gemini and Vertex, some OpenAI-compatible servers) put a
//     finish reason on every chunk; passed on, an SDK would see "stop" after
//     the first chunk and more content after it. A chunk that carries
//     content and a finish reason goes out at once with the reason taken
//     out; a chunk that carries only finish reasons is held back until the
//     next event shows whether more content follows. At the end the held
//     chunks go out unchanged, and a finish chunk is made for every choice
//     whose reason was taken out of an earlier chunk.
//   - a usage-only chunk ("choices": []) last, before the clean end: the
//     vendor's own when it sent one, else one made from Usage(), which is
//     the vendor's usage or, when the vendor reported none, a count of the
//     prompt and of the answer's text (Usage.Estimated). The relay passes
//     it on only to callers who asked for stream_options.include_usage.
//
// Errors pass through untouched; a stream that fails is not finished.
type endStream struct {
	s Stream
	r *ChatRequest

	held    []heldFinish   // finish-only chunks not yet passed on
	pending map[int]string // reasons taken out of chunks passed on, by choice
	out     []Chunk        // chunks ready to go out
	meta    chunkMeta      // envelope of the latest chunk, for made-up chunks
	text    strings.Builder
	ended   bool // the finish chunks (and the usage chunk) were queued
	usage   bool // a usage-only chunk went out
	est     *Usage
	err     error
}

type heldFinish struct {
	c       Chunk
	choices []int
	reasons []string
}

// chunkMeta is the envelope every chunk of a stream repeats.
type chunkMeta struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Created           int64  `json:"created"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
}

// finishing wraps s, the stream of r.
func finishing(s Stream, r *ChatRequest) Stream {
	return &endStream{s: s, r: r, pending: map[int]string{}}
}

func (e *endStream) Close() error { return e.s.Close() }

// FlushBeforeWait passes the wait hook to the vendor's stream: the chunks
// endStream holds back wait for its next read (WaitNotifier).
func (e *endStream) FlushBeforeWait(flush func()) bool {
	w, ok := e.s.(WaitNotifier)
	return ok && w.FlushBeforeWait(flush)
}

// Usage is the vendor's usage, else (once the stream ended cleanly) an
// estimate; unknown for a stream that failed or is still running.
func (e *endStream) Usage() Usage {
	u := e.s.Usage()
	if u.Known || !e.ended {
		return u
	}
	if e.est == nil {
		est := estimatedUsage(e.r, e.text.String())
		e.est = &est
	}
	return *e.est
}

func (e *endStream) Next() (Chunk, error) {
	for {
		if len(e.out) > 0 {
			c := e.out[0]
			e.out = e.out[1:]
			return c, nil
		}
		if e.err != nil {
			return Chunk{}, e.err
		}
		c, err := e.s.Next()
		if errors.Is(err, io.EOF) {
			e.end()
			e.err = io.EOF
			continue
		}
		if err != nil {
			return c, err
		}
		e.observe(c)
		if c.UsageOnly {
			if !e.ended {
				e.finish()
			}
			e.usage = true
			e.out = append(e.out, c)
			continue
		}
		choices, reasons := chunkFinishes(c.Data)
		if len(choices) == 0 {
			e.release()
			e.out = append(e.out, c)
			continue
		}
		if c.Content || chunkHasDelta(c.Data) {
			// Content with a finish reason: more may follow.
			e.release()
			for i, ch := range choices {
				e.pending[ch] = reasons[i]
			}
			c.Data, c.FinishReason = withoutFinish(c.Data), ""
			e.out = append(e.out, c)
			continue
		}
		// A finish-only chunk: a later one for the same choice replaces it.
		e.held = slices.DeleteFunc(e.held, func(h heldFinish) bool {
			for _, ch := range h.choices {
				if slices.Contains(choices, ch) {
					return true
				}
			}
			return false
		})
		e.held = append(e.held, heldFinish{c: c, choices: choices, reasons: reasons})
	}
}

// release is called when more content arrives: the held finish-only chunks
// were not the end after all; their reasons wait for the end.
func (e *endStream) release() {
	for _, h := range e.held {
		for i, ch := range h.choices {
			e.pending[ch] = h.reasons[i]
		}
	}
	e.held = e.held[:0]
}

// finish queues the end of every choice: a made-up finish chunk for each
// choice whose reason was taken out (and that no held chunk ends), then the
// held chunks unchanged.
func (e *endStream) finish() {
	e.ended = true
	for _, h := range e.held {
		for _, ch := range h.choices {
			delete(e.pending, ch)
		}
	}
	idx := make([]int, 0, len(e.pending))
	for ch := range e.pending {
		idx = append(idx, ch)
	}
	slices.Sort(idx)
	for _, ch := range idx {
		e.out = append(e.out, e.meta.finish(ch, e.pending[ch]))
	}
	clear(e.pending)
	for _, h := range e.held {
		e.out = append(e.out, h.c)
	}
	e.held = e.held[:0]
}

// end is the clean end of the vendor's stream.
func (e *endStream) end() {
	if !e.ended {
		e.finish()
	}
	if !e.usage {
		e.usage = true
		e.out = append(e.out, e.meta.usage(e.Usage()))
	}
}

// observe keeps the chunk's envelope and, while the vendor has reported no
// usage, the answer's text for an estimate.
func (e *endStream) observe(c Chunk) {
	v := gjson.ParseBytes(c.Data)
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "id":
			e.meta.ID = f.String()
		case "object":
			e.meta.Object = f.String()
		case "created":
			e.meta.Created = f.Int()
		case "model":
			e.meta.Model = f.String()
		case "system_fingerprint":
			e.meta.SystemFingerprint = f.String()
		case "choices":
			if c.Content && !e.s.Usage().Known {
				f.ForEach(func(_, ch gjson.Result) bool {
					chunkText(&e.text, ch.Get("delta"))
					return true
				})
			}
		}
		return true
	})
}

// chunkText appends the countable text of a delta: content, reasoning,
// refusal and tool calls.
func chunkText(b *strings.Builder, d gjson.Result) {
	d.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "content", "reasoning_content", "reasoning", "refusal":
			if f.Type == gjson.String {
				b.WriteString(f.Str)
			}
		case "tool_calls":
			f.ForEach(func(_, tc gjson.Result) bool {
				fn := tc.Get("function")
				b.WriteString(fn.Get("name").String())
				b.WriteString(fn.Get("arguments").String())
				return true
			})
		}
		return true
	})
}

// chunkFinishes lists the choices of a chunk that carry a finish reason.
func chunkFinishes(data []byte) (choices []int, reasons []string) {
	gjson.GetBytes(data, "choices").ForEach(func(i, ch gjson.Result) bool {
		if f := ch.Get("finish_reason"); f.Type == gjson.String && f.Str != "" {
			idx := int(i.Int())
			if x := ch.Get("index"); x.Exists() {
				idx = int(x.Int())
			}
			choices = append(choices, idx)
			reasons = append(reasons, openaiFinish(f.Str))
		}
		return true
	})
	return choices, reasons
}

// chunkHasDelta reports whether any choice of the chunk carries something
// besides its finish reason (a role, content, tool calls, logprobs).
func chunkHasDelta(data []byte) bool {
	has := false
	gjson.GetBytes(data, "choices").ForEach(func(_, ch gjson.Result) bool {
		if d := ch.Get("delta"); d.IsObject() && openaiDeltaHasContent(d) {
			has = true
		}
		return !has
	})
	return has
}

// withoutFinish is the chunk with every finish_reason set to null.
func withoutFinish(data []byte) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return data
	}
	var choices []map[string]json.RawMessage
	if json.Unmarshal(top["choices"], &choices) != nil {
		return data
	}
	for _, ch := range choices {
		if _, ok := ch["finish_reason"]; ok {
			ch["finish_reason"] = json.RawMessage("null")
		}
	}
	b, err := json.Marshal(choices)
	if err != nil {
		return data
	}
	top["choices"] = b
	out, err := json.Marshal(top)
	if err != nil {
		return data
	}
	return out
}

func (m chunkMeta) envelope() chunkMeta {
	if m.Object == "" {
		m.Object = "chat.completion.chunk"
	}
	return m
}

// finish is a made-up chunk that ends choice index with reason.
func (m chunkMeta) finish(index int, reason string) Chunk {
	b, _ := json.Marshal(struct {
		chunkMeta
		Choices []translatedChunkChoice `json:"choices"`
	}{m.envelope(), []translatedChunkChoice{{Index: index, FinishReason: &reason}}})
	return Chunk{Data: b, FinishReason: reason}
}

// usage is a made-up usage-only chunk.
func (m chunkMeta) usage(u Usage) Chunk {
	b, _ := json.Marshal(struct {
		chunkMeta
		Choices []translatedChunkChoice `json:"choices"`
		Usage   *translatedUsage        `json:"usage"`
	}{m.envelope(), []translatedChunkChoice{}, newTranslatedUsage(u)})
	return Chunk{Data: b, UsageOnly: true}
}

// estimateResult gives a complete answer whose vendor reported no usage the
// gateway's own count (Usage.Estimated), also written into the body's usage
// so the caller sees it too.
func estimateResult(res *ChatResult, r *ChatRequest) *ChatResult {
	if res == nil || res.Usage.Known {
		return res
	}
	var text strings.Builder
	gjson.GetBytes(res.Body, "choices").ForEach(func(_, ch gjson.Result) bool {
		chunkText(&text, ch.Get("message"))
		return true
	})
	res.Usage = estimatedUsage(r, text.String())
	var top map[string]json.RawMessage
	if json.Unmarshal(res.Body, &top) == nil {
		if u, err := json.Marshal(newTranslatedUsage(res.Usage)); err == nil {
			top["usage"] = u
			if b, err := json.Marshal(top); err == nil {
				res.Body, res.ModelAt, res.ModelLen = b, 0, 0 // a new body: its model is found again
			}
		}
	}
	return res
}
