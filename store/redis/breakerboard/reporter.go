package breakerboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"switchyard/routing/breaker"

	"github.com/redis/go-redis/v9"
)

// ReporterOptions configure a Reporter.
type ReporterOptions struct {
	// Prefix of the Redis key; the hash is "<Prefix>:breakers".
	Prefix string
	// InstanceID names this instance in the hash. Default "<hostname>-<pid>".
	InstanceID string
	// Interval between reports when nothing changes. Default 2 s.
	Interval time.Duration
	// TTL is how long a report stays valid: ReadAll drops (and deletes)
	// reports of instances that stopped reporting for longer. Default
	// 3 × Interval.
	TTL time.Duration
	// Timeout bounds one Redis write. Default 1 s.
	Timeout time.Duration
	Logger  *slog.Logger
}

// Reporter periodically, and on every state change, writes this instance's
// breaker snapshot to Redis so the console can show every instance's view.
type Reporter struct {
	set  *breaker.Set
	rdb  redis.UniversalClient
	key  string
	opts ReporterOptions
}

// report is the JSON stored per instance.
type report struct {
	ExpiresAt int64                    `json:"expires_at"` // unix milliseconds
	Breakers  map[int64]breaker.Status `json:"breakers"`
}

// NewReporter returns a Reporter for set; call Run to start it.
func NewReporter(set *breaker.Set, rdb redis.UniversalClient, opts ReporterOptions) *Reporter {
	if opts.InstanceID == "" {
		host, _ := os.Hostname()
		opts.InstanceID = host + "-" + strconv.Itoa(os.Getpid())
	}
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	if opts.TTL <= 0 {
		opts.TTL = 3 * opts.Interval
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Reporter{set: set, rdb: rdb, key: breakersKey(opts.Prefix), opts: opts}
}

func breakersKey(prefix string) string { return prefix + ":breakers" }

// InstanceID is the field this reporter writes.
func (r *Reporter) InstanceID() string { return r.opts.InstanceID }

// Run publishes every Interval and on every state change until ctx is done,
// then removes this instance's report. Write failures are logged (once per
// outage) and retried at the next tick. It returns nil when ctx ends.
func (r *Reporter) Run(ctx context.Context) error {
	t := time.NewTicker(r.opts.Interval)
	defer t.Stop()
	failing := false
	for {
		err := r.Publish(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			failing = true
			r.opts.Logger.Warn("breaker reporter cannot write to redis", slog.Any("err", err))
		case err == nil && failing:
			failing = false
			r.opts.Logger.Info("breaker reporter writes to redis again")
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.Timeout)
			defer cancel()
			_ = r.rdb.HDel(dctx, r.key, r.opts.InstanceID).Err()
			return nil
		case <-t.C:
		case <-r.set.Changed():
		}
	}
}

// Publish writes this instance's snapshot once.
func (r *Reporter) Publish(ctx context.Context) error {
	rep := report{
		ExpiresAt: time.Now().Add(r.opts.TTL).UnixMilli(),
		Breakers:  r.set.Snapshot(),
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("breaker: encode report: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	_, err = r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, r.key, r.opts.InstanceID, b)
		// If every instance stops, the whole hash goes away.
		p.PExpire(ctx, r.key, r.opts.TTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("breaker: publish report: %w", err)
	}
	return nil
}

// deleteIfSame removes a stale report unless its instance rewrote it meanwhile.
var deleteIfSame = redis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0`)

// ReadAll returns every live instance's breaker view, keyed by instance id
// then deployment id. Reports past their TTL are dropped and deleted.
func ReadAll(ctx context.Context, rdb redis.UniversalClient, prefix string) (map[string]map[int64]breaker.Status, error) {
	key := breakersKey(prefix)
	raw, err := rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("breaker: read reports: %w", err)
	}
	now := time.Now().UnixMilli()
	out := make(map[string]map[int64]breaker.Status, len(raw))
	var errs []error
	for inst, v := range raw {
		var rep report
		if err := json.Unmarshal([]byte(v), &rep); err != nil {
			errs = append(errs, fmt.Errorf("breaker: decode report of %s: %w", inst, err))
			continue
		}
		if rep.ExpiresAt < now {
			if err := deleteIfSame.Run(ctx, rdb, []string{key}, inst, v).Err(); err != nil {
				errs = append(errs, fmt.Errorf("breaker: delete stale report of %s: %w", inst, err))
			}
			continue
		}
		if rep.Breakers == nil {
			rep.Breakers = map[int64]breaker.Status{}
		}
		out[inst] = rep.Breakers
	}
	return out, errors.Join(errs...)
}
