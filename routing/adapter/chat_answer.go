package adapter

// The OpenAI shapes the translating adapters (Anthropic and Gemini) produce:
// a chat.completion for a complete answer and chat.completion.chunk events
// for a stream. Reasoning text travels as reasoning_content, the convention
// of OpenAI-compatible reasoning vendors such as DeepSeek.

import (
	"encoding/json"
	"time"
)

type translatedCompletion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []translatedChoice `json:"choices"`
	Usage   *translatedUsage   `json:"usage,omitempty"`
}

type translatedChoice struct {
	Index        int               `json:"index"`
	Message      translatedMessage `json:"message"`
	Logprobs     json.RawMessage   `json:"logprobs"` // always null
	FinishReason string            `json:"finish_reason"`
}

type translatedMessage struct {
	Role             string               `json:"role"`
	Content          *string              `json:"content"`
	ReasoningContent string               `json:"reasoning_content,omitempty"`
	ToolCalls        []translatedToolCall `json:"tool_calls,omitempty"`
}

type translatedToolCall struct {
	Index    *int               `json:"index,omitempty"` // streams only
	ID       string             `json:"id,omitempty"`
	Type     string             `json:"type,omitempty"`
	Function translatedFunction `json:"function"`
}

type translatedFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type translatedUsage struct {
	PromptTokens            int64                      `json:"prompt_tokens"`
	CompletionTokens        int64                      `json:"completion_tokens"`
	TotalTokens             int64                      `json:"total_tokens"`
	PromptTokensDetails     *translatedPromptDetails   `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *translatedCompleteDetails `json:"completion_tokens_details,omitempty"`
}

type translatedPromptDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

type translatedCompleteDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// newTranslatedUsage renders u in OpenAI's usage shape, or nil when unknown.
func newTranslatedUsage(u Usage) *translatedUsage {
	if !u.Known {
		return nil
	}
	out := &translatedUsage{
		PromptTokens:     u.Prompt,
		CompletionTokens: u.Completion,
		TotalTokens:      u.Prompt + u.Completion,
	}
	if u.CachedKnown {
		out.PromptTokensDetails = &translatedPromptDetails{CachedTokens: u.Cached}
	}
	if u.ReasoningKnown {
		out.CompletionTokensDetails = &translatedCompleteDetails{ReasoningTokens: u.Reasoning}
	}
	return out
}

type translatedChunk struct {
	ID      string                  `json:"id"`
	Object  string                  `json:"object"`
	Created int64                   `json:"created"`
	Model   string                  `json:"model"`
	Choices []translatedChunkChoice `json:"choices"`
	Usage   *translatedUsage        `json:"usage,omitempty"`
}

type translatedChunkChoice struct {
	Index        int             `json:"index"`
	Delta        translatedDelta `json:"delta"`
	FinishReason *string         `json:"finish_reason"`
}

type translatedDelta struct {
	Role             string               `json:"role,omitempty"`
	Content          *string              `json:"content,omitempty"`
	ReasoningContent string               `json:"reasoning_content,omitempty"`
	ToolCalls        []translatedToolCall `json:"tool_calls,omitempty"`
}

// translatedChunker renders the chat.completion.chunk events of one stream.
type translatedChunker struct {
	id      string
	model   string
	created int64
	index   int // the choice the chunks belong to
}

func newTranslatedChunker(id, model string, now time.Time) translatedChunker {
	return translatedChunker{id: id, model: model, created: now.Unix()}
}

func (m translatedChunker) render(choices []translatedChunkChoice, u *translatedUsage) []byte {
	b, _ := json.Marshal(translatedChunk{
		ID: m.id, Object: "chat.completion.chunk", Created: m.created, Model: m.model,
		Choices: choices, Usage: u,
	})
	return b
}

func (m translatedChunker) delta(d translatedDelta) []byte {
	return m.render([]translatedChunkChoice{{Index: m.index, Delta: d}}, nil)
}

// at is the chunker of choice index.
func (m translatedChunker) at(index int) translatedChunker {
	m.index = index
	return m
}

// role is the first chunk of every stream; it carries no content.
func (m translatedChunker) role() Chunk {
	empty := ""
	return Chunk{Data: m.delta(translatedDelta{Role: "assistant", Content: &empty})}
}

func (m translatedChunker) text(s string) Chunk {
	return Chunk{Data: m.delta(translatedDelta{Content: &s}), Content: true}
}

func (m translatedChunker) reasoning(s string) Chunk {
	return Chunk{Data: m.delta(translatedDelta{ReasoningContent: s}), Content: true}
}

// toolStart opens tool call number index with its id and name; args may
// already hold the complete arguments (Gemini sends them whole).
func (m translatedChunker) toolStart(index int, id, name, args string) Chunk {
	return Chunk{Data: m.delta(translatedDelta{ToolCalls: []translatedToolCall{{
		Index: &index, ID: id, Type: "function",
		Function: translatedFunction{Name: name, Arguments: args},
	}}}), Content: true}
}

func (m translatedChunker) toolArgs(index int, args string) Chunk {
	return Chunk{Data: m.delta(translatedDelta{ToolCalls: []translatedToolCall{{
		Index: &index, Function: translatedFunction{Arguments: args},
	}}}), Content: true}
}

func (m translatedChunker) finish(reason string) Chunk {
	return Chunk{
		Data:         m.render([]translatedChunkChoice{{Index: m.index, FinishReason: &reason}}, nil),
		FinishReason: reason,
	}
}

// usage is the final usage-only chunk ("choices": []). Streams send it only
// when the vendor reported usage: unknown is never rendered as zero.
func (m translatedChunker) usage(u Usage) Chunk {
	return Chunk{Data: m.render([]translatedChunkChoice{}, newTranslatedUsage(u)), UsageOnly: true}
}

// translatedCompletionBody renders a complete answer as a chat.completion.
func translatedCompletionBody(id, model string, now time.Time, msg translatedMessage, finish string, u Usage) []byte {
	return translatedCompletionChoices(id, model, now, []translatedChoice{{Message: msg, FinishReason: finish}}, u)
}

// translatedCompletionChoices renders a complete answer of several choices.
func translatedCompletionChoices(id, model string, now time.Time, choices []translatedChoice, u Usage) []byte {
	b, _ := json.Marshal(translatedCompletion{
		ID: id, Object: "chat.completion", Created: now.Unix(), Model: model,
		Choices: choices, Usage: newTranslatedUsage(u),
	})
	return b
}
