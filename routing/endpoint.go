package routing

import "switchyard/routing/frontdoor"

// doorOf is the front door of an endpoint: the caller's wire shape around
// the journey (routing/frontdoor).
func doorOf(ep Endpoint) frontdoor.Door {
	switch ep {
	case EndpointMessages, EndpointCountTokens:
		return frontdoor.MessagesDoor{}
	case EndpointResponses:
		return frontdoor.ResponsesDoor{}
	}
	return frontdoor.ChatDoor{}
}

// String is the endpoint's name in call logs, metrics and Test route.
func (e Endpoint) String() string {
	if int(e) >= 0 && int(e) < len(endpointNames) && endpointNames[e] != "" {
		return endpointNames[e]
	}
	return "unknown"
}

var endpointNames = [...]string{
	EndpointChat:        "chat_completions",
	EndpointEmbeddings:  "embeddings",
	EndpointModels:      "models",
	EndpointModel:       "models",
	EndpointMessages:    "messages",
	EndpointCountTokens: "count_tokens",
	EndpointResponses:   "responses",
}

// EndpointNames lists the distinct endpoint names, in display order.
func EndpointNames() []string {
	return []string{"chat_completions", "messages", "responses", "count_tokens", "embeddings", "models"}
}
