// Package lease gives the worker singleton jobs: a job runs on at most one
// instance at a time because it holds a Redis lease (SET NX PX with a random
// owner token). The lease is renewed while the job runs and released when it
// ends; only the owner can renew or release it (compare-and-pexpire,
// compare-and-delete in Lua). If the lease is lost — Redis expired it, or
// another worker took it over — the job's context is cancelled.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotHeld is returned by Renew and Release when the lease no longer
// belongs to this owner (it expired, or another owner holds it).
var ErrNotHeld = errors.New("lease: not held")

// ErrLost is the cause of a Run job's context cancellation when the lease
// could not be kept, and is wrapped into Run's error in that case.
var ErrLost = errors.New("lease: lost")

// releaseTimeout bounds the release after a job ends, whose own context may
// already be cancelled.
const releaseTimeout = 2 * time.Second

var (
	// renewScript extends the lease only if the caller still owns it.
	renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)
	// releaseScript deletes the lease only if the caller still owns it.
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)
)

// Lease is one held lease. Its methods are safe for concurrent use.
type Lease struct {
	rdb   redis.UniversalClient
	name  string
	token string
	ttl   time.Duration
}

// Acquire tries to take the lease called name (used verbatim as the Redis key,
// so callers put their prefix in it) for ttl. held is false, with a nil error,
// when another owner holds it.
func Acquire(ctx context.Context, rdb redis.UniversalClient, name string, ttl time.Duration) (l *Lease, held bool, err error) {
	if ttl <= 0 {
		return nil, false, fmt.Errorf("lease: acquire %s: ttl must be positive, got %s", name, ttl)
	}
	token, err := newToken()
	if err != nil {
		return nil, false, fmt.Errorf("lease: acquire %s: %w", name, err)
	}
	err = rdb.SetArgs(ctx, name, token, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("lease: acquire %s: %w", name, err)
	}
	return &Lease{rdb: rdb, name: name, token: token, ttl: ttl}, true, nil
}

// Name is the lease's Redis key.
func (l *Lease) Name() string { return l.name }

// Renew extends the lease to a full ttl from now. It returns ErrNotHeld when
// this owner no longer holds it.
func (l *Lease) Renew(ctx context.Context) error {
	n, err := renewScript.Run(ctx, l.rdb, []string{l.name}, l.token, l.ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("lease: renew %s: %w", l.name, err)
	}
	if n == 0 {
		return fmt.Errorf("lease: renew %s: %w", l.name, ErrNotHeld)
	}
	return nil
}

// Release gives the lease up. It returns ErrNotHeld when this owner no
// longer held it (nothing is deleted then).
func (l *Lease) Release(ctx context.Context) error {
	n, err := releaseScript.Run(ctx, l.rdb, []string{l.name}, l.token).Int()
	if err != nil {
		return fmt.Errorf("lease: release %s: %w", l.name, err)
	}
	if n == 0 {
		return fmt.Errorf("lease: release %s: %w", l.name, ErrNotHeld)
	}
	return nil
}

// Run runs fn under the lease called name. When another owner holds the lease
// it returns ran=false and a nil error without calling fn. Otherwise it renews
// the lease every ttl/3 while fn runs, cancels fn's context (with cause
// ErrLost) if the lease is lost or cannot be renewed before it would expire,
// and releases the lease when fn returns. err is fn's error, joined with
// ErrLost when the lease was lost.
func Run(ctx context.Context, rdb redis.UniversalClient, name string, ttl time.Duration, fn func(ctx context.Context) error) (ran bool, err error) {
	l, held, err := Acquire(ctx, rdb, name, ttl)
	if err != nil || !held {
		return false, err
	}
	acquired := time.Now()

	jobCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	renewDone := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(renewDone)
		l.keep(jobCtx, stop, acquired, cancel)
	}()

	fnErr := fn(jobCtx)
	close(stop)
	<-renewDone

	lost := errors.Is(context.Cause(jobCtx), ErrLost)
	relCtx, relCancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer relCancel()
	relErr := l.Release(relCtx)
	if errors.Is(relErr, ErrNotHeld) {
		lost, relErr = true, nil
	}
	switch {
	case lost:
		return true, errors.Join(fnErr, ErrLost)
	case relErr != nil:
		return true, errors.Join(fnErr, relErr)
	}
	return true, fnErr
}

// keep renews the lease every ttl/3 until stop is closed. A lost lease, or
// renewals failing until the lease's last confirmed expiry has passed,
// cancels the job with ErrLost.
func (l *Lease) keep(ctx context.Context, stop <-chan struct{}, lastRenewed time.Time, cancel context.CancelCauseFunc) {
	every := l.ttl / 3
	if every <= 0 {
		every = time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Bound each renewal so a hung Redis cannot outlive the lease.
		rctx, rcancel := context.WithTimeout(ctx, every)
		started := time.Now()
		err := l.Renew(rctx)
		rcancel()
		switch {
		case err == nil:
			lastRenewed = started
		case errors.Is(err, ErrNotHeld):
			cancel(ErrLost)
			return
		case time.Since(lastRenewed) >= l.ttl:
			// Redis unreachable for a whole ttl: assume another worker may
			// have taken over.
			cancel(fmt.Errorf("%w: %w", ErrLost, err))
			return
		}
	}
}

func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
