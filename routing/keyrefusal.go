package routing

import (
	"strconv"
	"strings"
	"time"

	"switchyard/routing/config"
)

// KeyRefusal is why a request's caller key was refused after it was
// found: its state (expired, rotated out) or its scope. Text turns it into
// words once.
type KeyRefusal struct {
	Code ErrorCode
	// At is when the key expired or its rotation grace ended
	// (CodeAPIKeyExpired, CodeAPIKeyRotated).
	At time.Time
	// Asked is what the request asked for that the scope does not allow,
	// of kind Kind (CodeKeyScopeDenied).
	Kind  ScopeKind
	Asked string
	Scope config.KeyScope
}

// ScopeKind is what part of a key's scope refused a request.
type ScopeKind string

// The parts of a key's scope.
const (
	ScopeTier       ScopeKind = "tier"
	ScopeLogicModel ScopeKind = "logic model"
	ScopeFrontDoor  ScopeKind = "front door"
)

// keyStateRefusal is the refusal of the key at now, or nil when it is
// valid.
func keyStateRefusal(k config.LiveKey, now time.Time) *KeyRefusal {
	switch k.State(now) {
	case config.KeyExpired:
		return &KeyRefusal{Code: CodeAPIKeyExpired, At: k.ExpiresAt}
	case config.KeyRotatedOut:
		return &KeyRefusal{Code: CodeAPIKeyRotated, At: k.RevokeAt}
	}
	return nil
}

// Text is the refusal in words, for the caller.
func (r KeyRefusal) Text() string {
	at := r.At.UTC().Format(time.RFC3339)
	switch r.Code {
	case CodeAPIKeyExpired:
		return "API key expired at " + at + "; ask the gateway's operator for a new key"
	case CodeAPIKeyRotated:
		return "API key was rotated and its grace period ended at " + at + "; use the key that replaced it"
	}
	return "this API key's scope does not allow the " + string(r.Kind) + " " + strconv.Quote(r.Asked) + "; it allows " + scopeText(r.Kind, r.Scope)
}

func scopeText(kind ScopeKind, s config.KeyScope) string {
	if kind == ScopeFrontDoor {
		return "front doors " + list(s.Doors)
	}
	return "tiers " + list(s.Tiers) + " and logic models " + list(s.Models)
}

func list[T ~string](xs []T) string {
	if len(xs) == 0 {
		return "(none)"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = string(x)
	}
	return strings.Join(parts, ", ")
}

// doorName is the scope name of an endpoint's front door; "" for the
// model listings, which every key may read.
func doorName(ep Endpoint) config.Door {
	switch ep {
	case EndpointChat:
		return config.DoorChat
	case EndpointMessages, EndpointCountTokens:
		return config.DoorMessages
	case EndpointResponses:
		return config.DoorResponses
	case EndpointEmbeddings:
		return config.DoorEmbeddings
	}
	return ""
}
