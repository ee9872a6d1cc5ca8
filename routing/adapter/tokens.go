package adapter

import (
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// When a vendor reports no usage, the gateway counts the tokens itself with
// a real BPE tokenizer: o200k_base, the encoding of OpenAI's current models,
// whose merge table is embedded in the binary (tiktoken-go-loader), so
// counting never downloads anything. Other vendors' tokenizers differ from it
// by some percent, which is why such usage is marked estimated.

// tokenEncoding loads o200k_base on first use, once: the first count
// waits for it (~0.2 s of CPU; concurrent first counts wait for the same
// load), and the ~27 MB of the table stay out of the heap of an instance
// whose vendors all report usage. Only answers without usage and
// count_tokens without Anthropic's own count use it; limits and
// in-flight caps estimate from the body's length.
var tokenEncoding = sync.OnceValues(func() (*tiktoken.Tiktoken, error) {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	return tiktoken.GetEncoding(tiktoken.MODEL_O200K_BASE)
})

// CountTokens is the number of o200k_base tokens in s. Special-token text
// ("<|endoftext|>") counts as ordinary text. Should the embedded table fail
// to load it falls back to four bytes a token.
func CountTokens(s string) int64 {
	if s == "" {
		return 0
	}
	enc, err := tokenEncoding()
	if err != nil {
		return int64(len(s)+3) / 4
	}
	return int64(len(enc.EncodeOrdinary(s)))
}

// Per OpenAI's published recipe for chat prompts: every message costs three
// tokens of framing beyond its text, a name one more, and the reply is
// primed with three. An image is counted as a low-detail tile.
const (
	tokensPerMessage = 3
	tokensPerName    = 1
	tokensReply      = 3
	tokensPerImage   = 85
)

// EstimatePromptTokens counts the prompt of r as an OpenAI model would see
// it: the messages with their framing, tool calls and tool definitions.
func EstimatePromptTokens(r *ChatRequest) int64 {
	if r == nil {
		return 0
	}
	n := int64(tokensReply)
	for _, m := range r.Conversation() {
		n += tokensPerMessage + CountTokens(m.Role)
		if m.Name != "" {
			n += tokensPerName + CountTokens(m.Name)
		}
		for _, p := range m.Content {
			switch p.Type {
			case "text":
				n += CountTokens(p.Text)
			case "image_url":
				n += tokensPerImage
			}
		}
		for _, tc := range m.ToolCalls {
			n += CountTokens(tc.Name) + CountTokens(tc.Arguments)
		}
	}
	for _, t := range r.Tools {
		n += CountTokens(t.Name) + CountTokens(t.Description) + CountTokens(string(t.Parameters))
	}
	return n + CountTokens(string(r.Format.Schema))
}

// estimatedUsage is the usage of a request whose vendor reported none: the
// prompt counted from r, the completion from the answer's text.
func estimatedUsage(r *ChatRequest, completion string) Usage {
	return Usage{Prompt: EstimatePromptTokens(r), Completion: CountTokens(completion), Known: true, Estimated: true}
}
