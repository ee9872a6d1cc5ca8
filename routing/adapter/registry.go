package adapter

import "switchyard/routing/config"

// All returns an adapter for every protocol this build speaks. It is the one
// place that lists them; Support derives the dry-run's view from it.
func All() map[config.Protocol]Adapter {
	return map[config.Protocol]Adapter{
		config.ProtocolOpenAI:    OpenAI{},
		config.ProtocolAnthropic: Anthropic{},
		config.ProtocolGemini:    Gemini{},
		config.ProtocolAzure:     NewAzure(),
		config.ProtocolBedrock:   NewBedrock(),
		config.ProtocolVertex:    NewVertex(),
	}
}

// Support tells the dry-run what this build implements: every protocol
// serves chat; Anthropic has no embeddings API, and this build sends none
// to Bedrock or Vertex AI.
func Support() config.Env {
	env := config.Env{Implemented: map[config.Protocol]config.ProtocolSupport{}}
	for p := range All() {
		env.Implemented[p] = config.ProtocolSupport{Chat: true, Embeddings: p != config.ProtocolAnthropic && p != config.ProtocolBedrock && p != config.ProtocolVertex}
	}
	return env
}
