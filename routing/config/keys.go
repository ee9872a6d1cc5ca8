package config

import (
	"slices"
	"strings"
	"time"
)

// Door names a front door a caller key's scope may allow: the endpoint
// names of call logs (count_tokens belongs to messages; listing models is
// always allowed).
type Door string

// The front doors a scope can name.
const (
	DoorChat       Door = "chat_completions"
	DoorMessages   Door = "messages"
	DoorResponses  Door = "responses"
	DoorEmbeddings Door = "embeddings"
)

// Doors lists the front doors a scope can name, in display order.
var Doors = []Door{DoorChat, DoorMessages, DoorResponses, DoorEmbeddings}

// KeyScope limits what a caller key may use. An empty list limits
// nothing. When Tiers or Models lists anything, a request for a tier must
// name one of Tiers and a request for a logic model one of Models.
type KeyScope struct {
	Tiers  []TierName `json:"tiers,omitempty"`
	Models []string   `json:"models,omitempty"`
	Doors  []Door     `json:"doors,omitempty"`
}

// Empty reports whether the scope limits nothing.
func (s KeyScope) Empty() bool { return len(s.Tiers)+len(s.Models)+len(s.Doors) == 0 }

// LimitsModels reports whether the scope names tiers or logic models.
func (s KeyScope) LimitsModels() bool { return len(s.Tiers)+len(s.Models) > 0 }

// AllowsTier reports whether a request for tier t is in scope.
func (s KeyScope) AllowsTier(t TierName) bool {
	return !s.LimitsModels() || slices.Contains(s.Tiers, t)
}

// AllowsModel reports whether a request for the logic model code is in
// scope.
func (s KeyScope) AllowsModel(code string) bool {
	return !s.LimitsModels() || slices.Contains(s.Models, code)
}

// AllowsDoor reports whether the front door d is in scope.
func (s KeyScope) AllowsDoor(d Door) bool { return len(s.Doors) == 0 || slices.Contains(s.Doors, d) }

// ValidateKeyScope checks a scope's names, into f under scope_tiers,
// scope_models and scope_doors.
func ValidateKeyScope(s KeyScope, f FieldErrors) {
	for _, t := range s.Tiers {
		if !slices.Contains(TierNames, t) {
			f.Add("scope_tiers", "unknown tier "+string(t)+": use fast, standard or deep")
		}
	}
	for _, m := range s.Models {
		if m == "" || len(m) > 100 || strings.ContainsAny(m, " \t\n,") {
			f.Add("scope_models", "logic model codes are single words of at most 100 characters")
		}
	}
	for _, d := range s.Doors {
		if !slices.Contains(Doors, d) {
			f.Add("scope_doors", "unknown front door "+string(d)+": use chat_completions, messages, responses or embeddings")
		}
	}
}

// LiveKey is an unrevoked caller key as the data plane holds it: whose it
// is and the terms it works under, all checked in memory.
type LiveKey struct {
	ID     int64  `json:"id"`
	Caller string `json:"caller"`
	// ExpiresAt is when the key stops working; zero never.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// RevokeAt is the end of a rotated key's grace period; zero when the
	// key was not rotated.
	RevokeAt time.Time `json:"revoke_at,omitzero"`
	Scope    KeyScope  `json:"scope,omitzero"`
}

// KeyState is why a known key does or does not authenticate at an instant.
type KeyState int

// Key states.
const (
	KeyValid KeyState = iota
	// KeyExpired: past its expiry (LiveKey.ExpiresAt).
	KeyExpired
	// KeyRotatedOut: rotated, and past the end of its grace period
	// (LiveKey.RevokeAt).
	KeyRotatedOut
)

// State is the key's state at now. A key both expired and rotated out is
// told by whichever came first.
func (k LiveKey) State(now time.Time) KeyState {
	expired := !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt)
	rotated := !k.RevokeAt.IsZero() && !now.Before(k.RevokeAt)
	switch {
	case rotated && (!expired || k.RevokeAt.Before(k.ExpiresAt)):
		return KeyRotatedOut
	case expired:
		return KeyExpired
	}
	return KeyValid
}

// LiveKeys maps SHA-256 hashes of unrevoked caller API keys to the keys.
type LiveKeys map[[32]byte]LiveKey
