package handlers

import (
	"context"
	"net/http"

	"switchyard/routing"
	"switchyard/routing/breaker"
	"switchyard/routing/config"
	"switchyard/store/redis/keypool"
	"switchyard/store/redis/limits"
)

// Ops is what console pages read about the running data plane of this
// instance (and, through Redis, of every instance).
type Ops interface {
	// Runtime is the live configuration (nil before the first publish).
	Runtime() *config.Runtime
	// State is the runtime state the router consults, for Test route.
	State() *routing.State
	// Breakers is every instance's breaker view, keyed by instance id.
	Breakers(ctx context.Context) (map[string]map[int64]breaker.Status, error)
	// Loads is the shared in-flight count per deployment.
	Loads(ctx context.Context) (map[int64]int64, error)
	// KeyStates is every provider key's shared runtime state.
	KeyStates(ctx context.Context) (map[int64]keypool.KeyState, error)
	// PeekLimits evaluates a caller's limits without spending anything.
	PeekLimits(ctx context.Context, req limits.Request) (limits.Decision, error)
	// LimitUsage is a caller's daily tokens and monthly spend so far.
	LimitUsage(ctx context.Context, callerID int64, tier string) (limits.Usage, error)
	// TestRequest sends a real request through the data plane as the
	// caller (no API key needed: the console is trusted) and returns the
	// answer with its attempt trail. The call is logged like any other.
	TestRequest(ctx context.Context, callerID int64, path string, body []byte) TestResult
	// SLA is this instance's SLA windows of the degradation ladder (the
	// step-down the data plane would take now).
	SLA() routing.SLAWatch
	// Resilience reads a tier's retry budget (shared across instances), its
	// SLA window on this instance and the group's answer-cache size.
	Resilience(ctx context.Context, g *config.RGroup, tier config.TierName) ResilienceState
}

// TestResult is the outcome of a console test request.
type TestResult struct {
	Status    int
	Header    http.Header
	Body      []byte
	RequestID string
	Trail     routing.Trail
}
