package healthboard

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/routing/health"
)

// The probe ledger: what the prober sent, skipped and spent, for the
// Health page. Keys (prefix p): p:{health}:live is a hash from deployment id
// to the Unix milliseconds of its latest live success (written by Add with
// the live samples, in the same round trip); p:health:ledger:<hour> is a
// hash with fields <id>:n (probes sent), <id>:c (their cost in micros) and
// <id>:s (probes skipped), expiring after a day; p:{health}:skipped maps a
// deployment id to the Unix milliseconds of its latest skipped probe, and
// loses the entry when a probe is sent.

// ledgerHours is how many hourly buckets the ledger sums (the last 24 h).
const ledgerHours = 24

func (b *Board) liveKey() string    { return b.prefix + ":{health}:live" }
func (b *Board) skippedKey() string { return b.prefix + ":{health}:skipped" }
func (b *Board) ledgerKey(hour int64) string {
	return b.prefix + ":health:ledger:" + strconv.FormatInt(hour, 10)
}

func hourOf(t time.Time) int64 { return t.Unix() / 3600 }

// LastLiveOK is when the deployment last served a successful live request
// (as flushed by the trackers, so up to a flush interval late); zero when
// none is known.
func (b *Board) LastLiveOK(ctx context.Context, id int64) (time.Time, error) {
	v, err := b.rdb.HGet(ctx, b.liveKey(), strconv.FormatInt(id, 10)).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("health: read last live success: %w", err)
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, nil
	}
	return time.UnixMilli(ms), nil
}

// NoteProbe records a probe sent to a deployment and its cost in micros.
func (b *Board) NoteProbe(ctx context.Context, id int64, costMicros int64) error {
	key, f := b.ledgerKey(hourOf(b.now())), strconv.FormatInt(id, 10)
	pipe := b.rdb.Pipeline()
	pipe.HIncrBy(ctx, key, f+":n", 1)
	if costMicros > 0 {
		pipe.HIncrBy(ctx, key, f+":c", costMicros)
	}
	pipe.Expire(ctx, key, (ledgerHours+1)*time.Hour)
	pipe.HDel(ctx, b.skippedKey(), f)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("health: note probe: %w", err)
	}
	return nil
}

// NoteSkip records a probe left out for a reason (health.SkipLiveTraffic,
// the only one).
func (b *Board) NoteSkip(ctx context.Context, id int64, _ health.ProbeSkip) error {
	now := b.now()
	key, f := b.ledgerKey(hourOf(now)), strconv.FormatInt(id, 10)
	pipe := b.rdb.Pipeline()
	pipe.HIncrBy(ctx, key, f+":s", 1)
	pipe.Expire(ctx, key, (ledgerHours+1)*time.Hour)
	pipe.HSet(ctx, b.skippedKey(), f, now.UnixMilli())
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("health: note skipped probe: %w", err)
	}
	return nil
}

// Ledger is every deployment's probing over the last 24 hours, in one
// round trip.
func (b *Board) Ledger(ctx context.Context) (map[int64]health.ProbeLedger, error) {
	cur := hourOf(b.now())
	pipe := b.rdb.Pipeline()
	hours := make([]*redis.MapStringStringCmd, 0, ledgerHours)
	for h := cur - ledgerHours + 1; h <= cur; h++ {
		hours = append(hours, pipe.HGetAll(ctx, b.ledgerKey(h)))
	}
	skipped := pipe.HGetAll(ctx, b.skippedKey())
	live := pipe.HGetAll(ctx, b.liveKey())
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("health: read probe ledger: %w", err)
	}
	out := map[int64]health.ProbeLedger{}
	for _, cmd := range hours {
		for field, v := range cmd.Val() {
			idStr, kind, ok := strings.Cut(field, ":")
			id, err1 := strconv.ParseInt(idStr, 10, 64)
			n, err2 := strconv.ParseInt(v, 10, 64)
			if !ok || err1 != nil || err2 != nil {
				continue
			}
			l := out[id]
			switch kind {
			case "n":
				l.Sent += n
			case "c":
				l.CostMicros += n
			case "s":
				l.Skipped += n
			}
			out[id] = l
		}
	}
	for _, m := range [...]struct {
		vals map[string]string
		set  func(*health.ProbeLedger, time.Time)
	}{
		{skipped.Val(), func(l *health.ProbeLedger, t time.Time) { l.LastSkip = t }},
		{live.Val(), func(l *health.ProbeLedger, t time.Time) { l.LastLiveOK = t }},
	} {
		for k, v := range m.vals {
			id, err1 := strconv.ParseInt(k, 10, 64)
			ms, err2 := strconv.ParseInt(v, 10, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			l := out[id]
			m.set(&l, time.UnixMilli(ms))
			out[id] = l
		}
	}
	return out, nil
}
