// Package idempotency implements the Idempotency-Key header (IETF
// draft-ietf-httpapi-idempotency-key-header, Stripe's semantics) on Redis,
// scoped per caller: the first request with a key claims it and runs; a
// repeat with the same body gets the stored result replayed; a repeat with a
// different body is a conflict; concurrent repeats wait for the original's
// result, bounded by their own deadline.
package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"switchyard/routing/idem"

	"github.com/redis/go-redis/v9"
)

var (
	// ErrInvalidKey reports an Idempotency-Key that is empty, longer than
	// 255 characters or not printable ASCII.
	ErrInvalidKey = idem.ErrInvalidKey
	// ErrNotOwner reports a Complete or Abandon by a claim that no longer
	// owns the key (its lease expired and the key was claimed again, or it
	// already completed).
	ErrNotOwner = errors.New("idempotency: claim no longer owns the key")
)

// MaxKeyLen is the longest accepted Idempotency-Key.
const MaxKeyLen = idem.MaxKeyLen

// The journey's vocabulary of idempotency (see routing/idem).
type (
	Result  = idem.Result
	Claim   = idem.Claim
	Outcome = idem.Outcome
)

// ValidKey checks an Idempotency-Key: 1 to 255 printable ASCII characters.
func ValidKey(key string) error { return idem.ValidKey(key) }

// Fingerprint identifies a request's content (see idem.Fingerprint).
func Fingerprint(parts ...[]byte) [32]byte { return idem.Fingerprint(parts...) }

// Options configure a Store.
type Options struct {
	// Prefix of every Redis key; default "switchyard:idem".
	Prefix string
	// TTL keeps a completed result; default 24h.
	TTL time.Duration
	// ClaimLease bounds a claim whose owner vanished; default 2m. A claim
	// lasts at least until its owner's context deadline (plus a second), so
	// a slow request does not lose its key while still running.
	ClaimLease time.Duration
	// PollInterval is how often a waiting request looks again; default 20ms.
	PollInterval time.Duration
}

// Store keeps idempotency keys in Redis. It is safe for concurrent use.
type Store struct {
	rdb          redis.UniversalClient
	prefix       string
	ttl          time.Duration
	lease        time.Duration
	pollInterval time.Duration
}

// New returns a Store on rdb.
func New(rdb redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = "switchyard:idem"
	}
	if opts.TTL <= 0 {
		opts.TTL = 24 * time.Hour
	}
	if opts.ClaimLease <= 0 {
		opts.ClaimLease = 2 * time.Minute
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 20 * time.Millisecond
	}
	return &Store{rdb: rdb, prefix: opts.Prefix, ttl: opts.TTL, lease: opts.ClaimLease, pollInterval: opts.PollInterval}
}

// redisKey is <prefix>:{i<caller>:<sha256(key) hex>}: one hash per key, its
// hash tag per caller and key. Hashing keeps braces in a client's key from
// bending the tag and bounds the name's length.
func (s *Store) redisKey(callerID int64, key string) string {
	sum := sha256.Sum256([]byte(key))
	return s.prefix + ":{i" + strconv.FormatInt(callerID, 10) + ":" + hex.EncodeToString(sum[:]) + "}"
}

// The state of a key is one Redis hash: state ("running" | "done"), fp (the
// fingerprint), owner (the claim's token while running) and, once done,
// status, header (JSON), body, stream.

// beginScript claims the key, or reports what holds it.
// ARGV: 1 fingerprint, 2 owner token, 3 claim lease in ms.
// Returns {"owned"} | {"conflict"} | {"running"} |
// {"done", status, header, body, stream}.
var beginScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'state', 'fp')
if not cur[1] then
  redis.call('HSET', KEYS[1], 'state', 'running', 'fp', ARGV[1], 'owner', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {'owned'}
end
if cur[2] ~= ARGV[1] then
  return {'conflict'}
end
if cur[1] == 'running' then
  return {'running'}
end
local r = redis.call('HMGET', KEYS[1], 'status', 'header', 'body', 'stream')
return {'done', r[1], r[2], r[3], r[4]}
`)

// completeScript stores the result if the claim still owns the key.
// ARGV: 1 owner token, 2 status, 3 header JSON, 4 body, 5 stream, 6 TTL ms.
var completeScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'state', 'owner')
if cur[1] ~= 'running' or cur[2] ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'done', 'status', ARGV[2], 'header', ARGV[3], 'body', ARGV[4], 'stream', ARGV[5])
redis.call('HDEL', KEYS[1], 'owner')
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return 1
`)

// abandonScript releases the claim if it still owns the key.
// ARGV: 1 owner token.
var abandonScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'state', 'owner')
if cur[1] ~= 'running' or cur[2] ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
`)

// Begin looks up key for the caller and, atomically, claims it (Owned),
// replays its completed result (Replay), or reports a different request
// under the same key (Conflict). While a request with the same fingerprint
// is running, Begin waits for it, polling, until it completes (Replay), is
// abandoned or its lease expires (Begin then claims the key), or ctx ends
// (the ctx error is returned, wrapped).
func (s *Store) Begin(ctx context.Context, callerID int64, key string, fingerprint [32]byte) (Outcome, error) {
	if err := ValidKey(key); err != nil {
		return Outcome{}, err
	}
	rk := s.redisKey(callerID, key)
	token, err := newToken()
	if err != nil {
		return Outcome{}, err
	}
	start := time.Now()
	var timer *time.Timer
	for {
		v, err := beginScript.Run(ctx, s.rdb, []string{rk}, fingerprint[:], token, s.leaseFor(ctx).Milliseconds()).Slice()
		if err != nil {
			return Outcome{}, fmt.Errorf("idempotency: begin caller %d: %w", callerID, err)
		}
		state, _ := v[0].(string)
		switch state {
		case "owned":
			return Outcome{Owned: true, Claim: Claim{CallerID: callerID, Key: key, Token: token}, Waited: time.Since(start)}, nil
		case "conflict":
			return Outcome{Conflict: true, Waited: time.Since(start)}, nil
		case "done":
			r, err := decodeResult(v[1:])
			if err != nil {
				return Outcome{}, fmt.Errorf("idempotency: stored result of caller %d: %w", callerID, err)
			}
			return Outcome{Replay: r, Waited: time.Since(start)}, nil
		case "running":
		default:
			return Outcome{}, fmt.Errorf("idempotency: begin script returned %q", state)
		}
		if timer == nil {
			timer = time.NewTimer(s.pollInterval)
			defer timer.Stop()
		} else {
			timer.Reset(s.pollInterval)
		}
		select {
		case <-ctx.Done():
			return Outcome{}, fmt.Errorf("idempotency: waiting for the original request of caller %d: %w", callerID, ctx.Err())
		case <-timer.C:
		}
	}
}

// leaseFor is the claim lease for a request with ctx: ClaimLease, or until
// the request's deadline plus a second if that is later.
func (s *Store) leaseFor(ctx context.Context) time.Duration {
	lease := s.lease
	if d, ok := ctx.Deadline(); ok {
		lease = max(lease, time.Until(d)+time.Second)
	}
	return lease
}

// sensitive headers are never stored for replay.
var sensitive = map[string]bool{
	"authorization":       true,
	"proxy-authorization": true,
	"cookie":              true,
	"set-cookie":          true,
	"x-api-key":           true,
	"api-key":             true,
}

// Complete stores the claim's result for TTL, so repeats replay it, and ends
// the claim. It fails with ErrNotOwner if the claim lost the key meanwhile.
func (s *Store) Complete(ctx context.Context, c Claim, r Result) error {
	if c.Token == "" {
		return fmt.Errorf("%w: not a claim from Begin", ErrNotOwner)
	}
	header := make(map[string]string, len(r.Header))
	for k, v := range r.Header {
		if !sensitive[strings.ToLower(k)] {
			header[http.CanonicalHeaderKey(k)] = v
		}
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("idempotency: encode headers: %w", err)
	}
	stream := "0"
	if r.Stream {
		stream = "1"
	}
	n, err := completeScript.Run(ctx, s.rdb, []string{s.redisKey(c.CallerID, c.Key)},
		c.Token, r.Status, hj, r.Body, stream, s.ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("idempotency: complete caller %d: %w", c.CallerID, err)
	}
	if n != 1 {
		return ErrNotOwner
	}
	return nil
}

// Abandon releases the claim without storing a result (a request that
// failed validation, or one that cannot be answered meaningfully again), so a
// waiting repeat takes the key over. It fails with ErrNotOwner if the claim
// lost the key meanwhile.
func (s *Store) Abandon(ctx context.Context, c Claim) error {
	if c.Token == "" {
		return fmt.Errorf("%w: not a claim from Begin", ErrNotOwner)
	}
	n, err := abandonScript.Run(ctx, s.rdb, []string{s.redisKey(c.CallerID, c.Key)}, c.Token).Int()
	if err != nil {
		return fmt.Errorf("idempotency: abandon caller %d: %w", c.CallerID, err)
	}
	if n != 1 {
		return ErrNotOwner
	}
	return nil
}

func decodeResult(v []any) (*Result, error) {
	if len(v) != 4 {
		return nil, fmt.Errorf("%d fields, want 4", len(v))
	}
	str := func(x any) string { s, _ := x.(string); return s }
	status, err := strconv.Atoi(str(v[0]))
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	r := &Result{Status: status, Body: []byte(str(v[2])), Stream: str(v[3]) == "1"}
	if err := json.Unmarshal([]byte(str(v[1])), &r.Header); err != nil {
		return nil, fmt.Errorf("headers: %w", err)
	}
	return r, nil
}

func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("idempotency: owner token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
