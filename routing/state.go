package routing

import (
	"context"
	"errors"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/reason"
)

// Outcome is how a call ended for a deployment's circuit breaker.
type Outcome int

const (
	OutcomeIgnored Outcome = iota // neither success nor failure (429, auth, filter, cancel)
	OutcomeSuccess
	OutcomeFailure // server, timeout or network
)

// Breakers guard deployments (per instance).
type Breakers interface {
	// Allow returns done (to call exactly once with the outcome) when the
	// deployment may be called now.
	Allow(deploymentID int64, s config.BreakerSettings) (done func(Outcome), ok bool)
	// Open reports a breaker that refuses calls now (the plan's skip) and
	// when it admits a probe again (zero when unknown).
	Open(deploymentID int64) (until time.Time, open bool)
}

// Keys choose a provider key and apply the key actions of the failure table.
type Keys interface {
	// Pick returns the least-recently-used usable key not in tried, or a
	// skip reason when there is none.
	Pick(providerID int64, keyIDs []int64, tried []int64) (keyID int64, skip reason.Reason, ok bool)
	// Usable reports, without using one, whether any key could serve now.
	Usable(keyIDs []int64) (skip reason.Reason, ok bool)
	Cool(keyID int64, d time.Duration)
	Quarantine(keyID int64, f KeyFault)
}

// KeyFault is why a vendor refused a key for good: the failure class (auth
// or billing), the HTTP status and the vendor's own words.
type KeyFault struct {
	Class  adapter.Class `json:"class"`
	Status int           `json:"status,omitempty"`
	Detail string        `json:"detail,omitempty"`
}

// ErrFull means a deployment is at its max concurrency for this class.
var ErrFull = errors.New("at max concurrency")

// ErrTokensFull means a request's estimated tokens do not fit under a
// deployment's max in-flight tokens.
var ErrTokensFull = errors.New("at max in-flight tokens")

// LoadRequest is what one request asks of a deployment's shared counters.
type LoadRequest struct {
	Deployment *config.RDeployment // its MaxConcurrency and MaxInflightTokens are the caps
	// Tokens is the request's estimate (prompt + expected output), held
	// against MaxInflightTokens while the slot is.
	Tokens int64
}

// Load enforces max concurrency and max in-flight tokens with shared
// in-flight counters (slots and estimated tokens, one round trip).
type Load interface {
	// Acquire takes a slot and the request's tokens without waiting, or
	// returns ErrFull / ErrTokensFull; release must be called exactly once.
	Acquire(ctx context.Context, r LoadRequest) (release func(), err error)
	// Load is the cached in-flight slots and estimated tokens used for
	// weighting (tokens are counted for deployments with a token cap).
	Load(deploymentID int64) (slots int, tokens int64)
}

// Health reports deployments the worker found down (the health checker).
type Health interface {
	Down(deploymentID int64) bool
}

// State bundles the runtime state the router consults. Nil members mean
// "nothing to consult" (every deployment healthy, no caps, ...).
type State struct {
	Breakers Breakers
	Keys     Keys
	Load     Load
	Health   Health
	// Budget is the retry budget (nil: every request may walk its chain).
	Budget RetryBudget
}

type noBreakers struct{}

func (noBreakers) Allow(int64, config.BreakerSettings) (func(Outcome), bool) {
	return func(Outcome) {}, true
}

func (noBreakers) Open(int64) (time.Time, bool) { return time.Time{}, false }

type noLoad struct{}

func (noLoad) Acquire(context.Context, LoadRequest) (func(), error) { return func() {}, nil }
func (noLoad) Load(int64) (int, int64)                              { return 0, 0 }
