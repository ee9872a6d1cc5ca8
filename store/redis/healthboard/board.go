package healthboard

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"switchyard/routing/health"

	"github.com/redis/go-redis/v9"
)

// Board is the health data in Redis: the sample buckets and the evaluated
// states. Every instance shares it.
//
// Keys (prefix p): p:health:b:<bucket> is a hash with fields <id>:o, <id>:f
// (live ok / failed) and <id>:po, <id>:pf (probes), expiring after the
// window; p:{health}:state is a hash from deployment id to its Status JSON;
// p:{health}:down is the set of down deployment ids, all the router reads.
// state and down share the hash tag {health}: they are rewritten in one
// MULTI/EXEC, which Redis Cluster can only run within one hash slot.
// The probe ledger (last live success, probes sent, skipped and their cost)
// is described in ledger.go.
type Board struct {
	rdb    redis.UniversalClient
	prefix string
	s      health.Settings
	now    func() time.Time
}

// NewBoard returns the board under prefix (the instance's Redis prefix).
func NewBoard(rdb redis.UniversalClient, prefix string, s health.Settings) *Board {
	return &Board{rdb: rdb, prefix: prefix, s: s.WithDefaults(), now: time.Now}
}

// Settings are the board's window and thresholds.
func (b *Board) Settings() health.Settings { return b.s }

func (b *Board) bucketKey(i int64) string {
	return b.prefix + ":health:b:" + strconv.FormatInt(i, 10)
}

func (b *Board) stateKey() string { return b.prefix + ":{health}:state" }

func (b *Board) downKey() string { return b.prefix + ":{health}:down" }

// Down returns the ids of the deployments found down.
func (b *Board) Down(ctx context.Context) (map[int64]struct{}, error) {
	ids, err := b.rdb.SMembers(ctx, b.downKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("health: read down set: %w", err)
	}
	out := make(map[int64]struct{}, len(ids))
	for _, v := range ids {
		if id, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[id] = struct{}{}
		}
	}
	return out, nil
}

// Add adds counts to the current bucket, in one round trip. A deployment
// with live successes also gets its latest live success time (LastLiveOK),
// which lets the prober skip deployments live traffic already vouches for.
func (b *Board) Add(ctx context.Context, counts map[int64]health.Counts) error {
	if len(counts) == 0 {
		return nil
	}
	now := b.now()
	key := b.bucketKey(b.s.BucketOf(now))
	pipe := b.rdb.Pipeline()
	var live []any
	for id, c := range counts {
		f := strconv.FormatInt(id, 10)
		if c.OK > 0 {
			live = append(live, f, now.UnixMilli())
		}
		for _, kv := range [...]struct {
			suffix string
			n      int64
		}{{":o", c.OK}, {":f", c.Failed}, {":po", c.ProbeOK}, {":pf", c.ProbeFailed}} {
			if kv.n != 0 {
				pipe.HIncrBy(ctx, key, f+kv.suffix, kv.n)
			}
		}
	}
	pipe.PExpire(ctx, key, b.s.Window+2*b.s.Bucket)
	if len(live) > 0 {
		pipe.HSet(ctx, b.liveKey(), live...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("health: add samples: %w", err)
	}
	return nil
}

// Window returns the counts of every deployment in the sliding window,
// counting for each only the buckets from from[id] on.
func (b *Board) Window(ctx context.Context, from map[int64]int64) (map[int64]health.Counts, error) {
	cur := b.s.BucketOf(b.now())
	first := cur - b.s.Buckets() + 1
	pipe := b.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, 0, b.s.Buckets())
	for i := first; i <= cur; i++ {
		cmds = append(cmds, pipe.HGetAll(ctx, b.bucketKey(i)))
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("health: read window: %w", err)
	}
	out := map[int64]health.Counts{}
	for k, cmd := range cmds {
		bucket := first + int64(k)
		for field, v := range cmd.Val() {
			idStr, kind, ok := strings.Cut(field, ":")
			if !ok {
				continue
			}
			id, err1 := strconv.ParseInt(idStr, 10, 64)
			n, err2 := strconv.ParseInt(v, 10, 64)
			if err1 != nil || err2 != nil || bucket < from[id] {
				continue
			}
			c := out[id]
			switch kind {
			case "o":
				c.OK += n
			case "f":
				c.Failed += n
			case "po":
				c.ProbeOK += n
			case "pf":
				c.ProbeFailed += n
			}
			out[id] = c
		}
	}
	return out, nil
}

// Statuses returns every evaluated deployment's status.
func (b *Board) Statuses(ctx context.Context) (map[int64]health.Status, error) {
	raw, err := b.rdb.HGetAll(ctx, b.stateKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("health: read states: %w", err)
	}
	out := make(map[int64]health.Status, len(raw))
	for k, v := range raw {
		id, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			continue
		}
		var s health.Status
		if json.Unmarshal([]byte(v), &s) == nil {
			out[id] = s
		}
	}
	return out, nil
}

// Evaluate runs the state machine for the deployments ids with this round's
// probes, stores the new states (dropping deployments no longer listed) and
// returns the transitions. Only one evaluator may run at a time: the worker
// calls it under its job lease.
func (b *Board) Evaluate(ctx context.Context, ids []int64, probes map[int64]health.Probe) ([]health.Transition, map[int64]health.Status, error) {
	cur, err := b.Statuses(ctx)
	if err != nil {
		return nil, nil, err
	}
	from := make(map[int64]int64, len(cur))
	for id, s := range cur {
		from[id] = s.From
	}
	counts, err := b.Window(ctx, from)
	if err != nil {
		return nil, nil, err
	}
	now := b.now()
	bucket := b.s.BucketOf(now)
	next := make(map[int64]health.Status, len(ids))
	var changes []health.Transition
	fields := make([]any, 0, 2*len(ids))
	var down []any
	for _, id := range ids {
		old := cur[id]
		s := b.s.Next(old, counts[id], probes[id], now, bucket)
		next[id] = s
		if old.State != "" && s.State != old.State || old.State == "" && s.State != health.Healthy {
			from := old.State
			if from == "" {
				from = health.Healthy
			}
			changes = append(changes, health.Transition{DeploymentID: id, From: from, To: s.State, At: now, Score: s.Score, Samples: s.Samples, Reason: s.Reason})
		}
		v, err := json.Marshal(s)
		if err != nil {
			return nil, nil, fmt.Errorf("health: encode state: %w", err)
		}
		fields = append(fields, strconv.FormatInt(id, 10), v)
		if s.State == health.Down {
			down = append(down, strconv.FormatInt(id, 10))
		}
	}
	var stale []string
	for id := range cur {
		if _, ok := next[id]; !ok {
			stale = append(stale, strconv.FormatInt(id, 10))
		}
	}
	pipe := b.rdb.TxPipeline()
	if len(fields) > 0 {
		pipe.HSet(ctx, b.stateKey(), fields...)
	}
	if len(stale) > 0 {
		pipe.HDel(ctx, b.stateKey(), stale...)
		pipe.HDel(ctx, b.liveKey(), stale...)
		pipe.HDel(ctx, b.skippedKey(), stale...)
	}
	pipe.Del(ctx, b.downKey())
	if len(down) > 0 {
		pipe.SAdd(ctx, b.downKey(), down...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, nil, fmt.Errorf("health: store states: %w", err)
	}
	slices.SortFunc(changes, func(a, b health.Transition) int { return cmp.Compare(a.DeploymentID, b.DeploymentID) })
	return changes, next, nil
}
