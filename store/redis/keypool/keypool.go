// Package keypool picks the provider key for each attempt and keeps key state
// (protection: "Key pool"):
//
//   - least-recently-used rotation per provider, where a key never used comes
//     first — a key added to a pool with history is the very next one chosen
//     (ordering by last-used with NULLs last starves new keys);
//   - a 429 cools only that key (until its Retry-After, DefaultCool when
//     unknown); 401/403/402 quarantine it until an operator re-enables it.
//
// LRU order is per instance, in memory, with a lock per provider. Cooling and
// quarantine are shared by every instance through one Redis hash: written
// through on the event and pulled by a background sync into a local map the
// hot path reads without touching Redis. If Redis is unreachable the state
// stays local to the instance (logged once) and is written when Redis returns.
package keypool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"switchyard/routing"
	"switchyard/routing/reason"

	"github.com/redis/go-redis/v9"
)

// Status of a key.
type Status string

// Key statuses.
const (
	StatusActive      Status = "active"
	StatusCooling     Status = "cooling"
	StatusQuarantined Status = "quarantined"
)

// Skip reasons Pick returns when no key is usable.
var (
	SkipNoKeys         = reason.Of(reason.NoKeys)
	SkipAllCooling     = reason.Of(reason.KeysCooling)
	SkipAllQuarantined = reason.Of(reason.KeysQuarantined)
	SkipAllTried       = reason.Of(reason.KeysTried)
)

// KeyState is one key as the console shows it.
type KeyState struct {
	Status Status `json:"status"`
	// Fault is why the vendor refused a quarantined key.
	Fault *routing.KeyFault `json:"fault,omitempty"`
	// Reason is the text of states recorded before faults were typed.
	Reason string `json:"reason,omitempty"`
	// Since is when the key was cooled or quarantined.
	Since time.Time `json:"since,omitzero"`
	// Until is when cooling ends.
	Until time.Time `json:"until,omitzero"`
	// LastUsed is when this instance last picked the key.
	LastUsed time.Time `json:"last_used,omitzero"`
}

// Options configure a Pool.
type Options struct {
	// Prefix of the Redis keys.
	Prefix string
	// SyncInterval between pulls of the shared state. Default 1 s.
	SyncInterval time.Duration
	// DefaultCool is the cooling period when a 429 carries no Retry-After.
	// Default 5 s.
	DefaultCool time.Duration
	// Timeout bounds one Redis operation of the background sync. Default 250 ms.
	Timeout time.Duration
	// Clock returns the current time; tests pass a fake. Default time.Now.
	Clock  func() time.Time
	Logger *slog.Logger
}

// record is a key's shared state, stored as JSON in the Redis hash.
type record struct {
	Status Status            `json:"status"`
	Fault  *routing.KeyFault `json:"fault,omitempty"`
	Reason string            `json:"reason,omitempty"` // before faults were typed
	Since  time.Time         `json:"since"`
	Until  time.Time         `json:"until,omitzero"`
}

// blocks reports whether the record makes the key unusable at now.
func (r record) blocks(now time.Time) bool {
	return r.Status == StatusQuarantined || (r.Status == StatusCooling && now.Before(r.Until))
}

// local is a record plus whether it still has to be written to Redis.
type local struct {
	record
	dirty bool
	rev   uint64 // bumped on every local change, so a flush only clears its own
}

type usage struct {
	seq uint64 // global pick order; 0 = never used
	at  time.Time
}

type provider struct {
	mu       sync.Mutex
	lastUsed map[int64]usage
}

// Pool is the key pool of every provider. It is safe for concurrent use.
type Pool struct {
	rdb      redis.UniversalClient
	opts     Options
	stateKey string
	verKey   string

	mu     sync.RWMutex
	shared map[int64]*local
	rev    uint64

	pmu       sync.RWMutex
	providers map[int64]*provider
	seq       atomic.Uint64

	degraded atomic.Bool
	lastVer  atomic.Int64 // version of the last pulled state

	// writeMu serialises writes to and pulls from Redis, so two flushes
	// never send the same change twice and neither a slow flush nor a slow
	// pull can resurrect a state that Reenable deleted meanwhile.
	writeMu sync.Mutex

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// New returns a Pool and starts its background sync; Close stops it.
func New(rdb redis.UniversalClient, opts Options) *Pool {
	if opts.SyncInterval <= 0 {
		opts.SyncInterval = time.Second
	}
	if opts.DefaultCool <= 0 {
		opts.DefaultCool = 5 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 250 * time.Millisecond
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	p := &Pool{
		rdb:       rdb,
		opts:      opts,
		stateKey:  opts.Prefix + ":{keypool}:state",
		verKey:    opts.Prefix + ":{keypool}:ver",
		shared:    make(map[int64]*local),
		providers: make(map[int64]*provider),
		wake:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	p.lastVer.Store(-1)
	go p.loop()
	return p
}

// Close stops the background sync, writing pending state once more.
func (p *Pool) Close() {
	p.once.Do(func() {
		close(p.stop)
		<-p.done
	})
}

// Degraded reports whether the last Redis operation failed, i.e. key state
// is currently local to this instance.
func (p *Pool) Degraded() bool { return p.degraded.Load() }

// Pick returns the least-recently-used usable key of keyIDs (a provider's
// enabled keys, in configured order) that tried does not report as already
// tried in this request, and marks it used now. Keys never used come first,
// in configured order. When no key is usable ok is false and skip says why.
func (p *Pool) Pick(providerID int64, keyIDs []int64, tried []int64) (keyID int64, skip reason.Reason, ok bool) {
	if len(keyIDs) == 0 {
		return 0, SkipNoKeys, false
	}
	pr := p.provider(providerID)
	now := p.opts.Clock()

	pr.mu.Lock()
	defer pr.mu.Unlock()
	best, bestSeq := -1, uint64(0)
	var nTried, nCooling, nQuarantined int
	var cooledUntil time.Time // the earliest end of a cooling key
	p.mu.RLock()
	for i, id := range keyIDs {
		if slices.Contains(tried, id) {
			nTried++
			continue
		}
		if l := p.shared[id]; l != nil && l.blocks(now) {
			if l.Status == StatusQuarantined {
				nQuarantined++
			} else {
				nCooling++
				cooledUntil = earliest(cooledUntil, l.Until)
			}
			continue
		}
		if seq := pr.lastUsed[id].seq; best < 0 || seq < bestSeq {
			best, bestSeq = i, seq
		}
	}
	p.mu.RUnlock()

	if best < 0 {
		switch {
		case nTried == len(keyIDs):
			return 0, SkipAllTried, false
		case nCooling > 0:
			return 0, cooling(cooledUntil), false
		case nQuarantined > 0:
			return 0, SkipAllQuarantined, false
		}
		return 0, SkipAllTried, false
	}
	keyID = keyIDs[best]
	pr.lastUsed[keyID] = usage{seq: p.seq.Add(1), at: now}
	return keyID, reason.Reason{}, true
}

// Usable reports whether any of keyIDs could serve now, without marking one
// used: the router's plan skips a deployment whose keys are all cooling or
// quarantined, naming why.
func (p *Pool) Usable(keyIDs []int64) (skip reason.Reason, ok bool) {
	if len(keyIDs) == 0 {
		return SkipNoKeys, false
	}
	now := p.opts.Clock()
	var nCooling int
	var cooledUntil time.Time
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, id := range keyIDs {
		l := p.shared[id]
		if l == nil || !l.blocks(now) {
			return reason.Reason{}, true
		}
		if l.Status != StatusQuarantined {
			nCooling++
			cooledUntil = earliest(cooledUntil, l.Until)
		}
	}
	if nCooling > 0 {
		return cooling(cooledUntil), false
	}
	return SkipAllQuarantined, false
}

// cooling is the skip of a pool whose usable keys all cool, with when the
// first of them is usable again (what Retry-After tells the caller).
func cooling(until time.Time) reason.Reason {
	r := SkipAllCooling
	r.Until = reason.UntilOf(until)
	return r
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func (p *Pool) provider(id int64) *provider {
	p.pmu.RLock()
	pr := p.providers[id]
	p.pmu.RUnlock()
	if pr != nil {
		return pr
	}
	p.pmu.Lock()
	defer p.pmu.Unlock()
	if pr = p.providers[id]; pr == nil {
		pr = &provider{lastUsed: make(map[int64]usage)}
		p.providers[id] = pr
	}
	return pr
}

// Cool takes keyID out of rotation for d (its Retry-After; DefaultCool when
// d <= 0) on every instance. A quarantined key stays quarantined; a longer
// cooling already in force is kept.
func (p *Pool) Cool(keyID int64, d time.Duration) {
	if d <= 0 {
		d = p.opts.DefaultCool
	}
	now := p.opts.Clock()
	until := now.Add(d)
	p.mu.Lock()
	cur := p.shared[keyID]
	if cur != nil && (cur.Status == StatusQuarantined || (cur.Status == StatusCooling && !cur.Until.Before(until))) {
		p.mu.Unlock()
		return
	}
	p.set(keyID, record{Status: StatusCooling, Since: now, Until: until})
	p.mu.Unlock()
	p.poke()
}

// Quarantine takes keyID out of rotation on every instance until an operator
// re-enables it.
func (p *Pool) Quarantine(keyID int64, f routing.KeyFault) {
	now := p.opts.Clock()
	p.mu.Lock()
	if cur := p.shared[keyID]; cur != nil && cur.Status == StatusQuarantined {
		p.mu.Unlock()
		return
	}
	p.set(keyID, record{Status: StatusQuarantined, Fault: &f, Since: now})
	p.mu.Unlock()
	p.poke()
}

// set records a local change to be written to Redis. p.mu must be held.
func (p *Pool) set(keyID int64, r record) {
	p.rev++
	p.shared[keyID] = &local{record: r, dirty: true, rev: p.rev}
}

func (p *Pool) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Reenable is the operator's action: it clears keyID's quarantine and
// cooling on every instance (the others within one sync interval).
func (p *Pool) Reenable(ctx context.Context, keyID int64) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	_, err := writeScript.Run(ctx, p.rdb, []string{p.stateKey, p.verKey}, strconv.FormatInt(keyID, 10), "").Result()
	p.mu.Lock()
	delete(p.shared, keyID)
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("keypool: re-enable key %d: %w", keyID, err)
	}
	return nil
}

// States returns every key with a known state (cooled, quarantined or used by
// this instance), read fresh from Redis. If Redis fails it returns this
// instance's view together with the error.
func (p *Pool) States(ctx context.Context) (map[int64]KeyState, error) {
	now := p.opts.Clock()
	out := make(map[int64]KeyState)
	p.pmu.RLock()
	provs := make([]*provider, 0, len(p.providers))
	for _, pr := range p.providers {
		provs = append(provs, pr)
	}
	p.pmu.RUnlock()
	for _, pr := range provs {
		pr.mu.Lock()
		for id, u := range pr.lastUsed {
			out[id] = KeyState{Status: StatusActive, LastUsed: u.at}
		}
		pr.mu.Unlock()
	}

	recs, err := p.readRedis(ctx)
	p.mu.RLock()
	for id, l := range p.shared {
		if l.dirty || err != nil {
			if recs == nil {
				recs = make(map[int64]record)
			}
			recs[id] = l.record
		}
	}
	p.mu.RUnlock()
	for id, r := range recs {
		ks := out[id]
		if r.blocks(now) {
			ks.Status, ks.Fault, ks.Reason, ks.Since, ks.Until = r.Status, r.Fault, r.Reason, r.Since, r.Until
		} else {
			ks.Status = StatusActive
		}
		out[id] = ks
	}
	if err != nil {
		return out, fmt.Errorf("keypool: read key states: %w", err)
	}
	return out, nil
}

// Sync writes pending local changes to Redis and pulls the shared state
// now, as the background sync does every SyncInterval.
func (p *Pool) Sync(ctx context.Context) error {
	err := p.flush(ctx)
	if err == nil {
		err = p.pull(ctx, true)
	}
	p.noteRedis(err)
	return err
}

func (p *Pool) loop() {
	defer close(p.done)
	t := time.NewTicker(p.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			ctx, cancel := context.WithTimeout(context.Background(), p.opts.Timeout)
			_ = p.flush(ctx)
			cancel()
			return
		case <-t.C:
		case <-p.wake:
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.Timeout)
		err := p.flush(ctx)
		if err == nil {
			err = p.pull(ctx, false)
		}
		cancel()
		p.noteRedis(err)
	}
}

// noteRedis logs transitions between reachable and unreachable Redis.
func (p *Pool) noteRedis(err error) {
	if err != nil {
		if !p.degraded.Swap(true) {
			p.opts.Logger.Warn("keypool: redis unavailable, key state is local to this instance", slog.Any("err", err))
		}
		return
	}
	if p.degraded.Swap(false) {
		p.opts.Logger.Info("keypool: redis available again, key state is shared")
	}
}

// writeScript applies field/value pairs to the state hash (an empty value
// deletes the field) and bumps the version so other instances pull. A
// cooling record never replaces a quarantine, nor a longer cooling.
var writeScript = redis.NewScript(`
for i = 1, #ARGV, 2 do
  local f, v = ARGV[i], ARGV[i+1]
  if v == '' then
    redis.call('HDEL', KEYS[1], f)
  else
    local new = cjson.decode(v)
    local keep = false
    if new.status == 'cooling' then
      local cur = redis.call('HGET', KEYS[1], f)
      if cur then
        local old = cjson.decode(cur)
        if old.status == 'quarantined' or (old.status == 'cooling' and (old.until_ms or 0) >= (new.until_ms or 0)) then
          keep = true
        end
      end
    end
    if not keep then redis.call('HSET', KEYS[1], f, v) end
  end
end
return redis.call('INCR', KEYS[2])`)

// wire is a record as stored: until_ms lets the script compare coolings.
type wire struct {
	record
	UntilMS int64 `json:"until_ms,omitempty"`
}

func (p *Pool) flush(ctx context.Context) error {
	type pending struct {
		id  int64
		rev uint64
	}
	var args []any
	var sent []pending
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.mu.RLock()
	for id, l := range p.shared {
		if !l.dirty {
			continue
		}
		w := wire{record: l.record}
		if !l.Until.IsZero() {
			w.UntilMS = l.Until.UnixMilli()
		}
		b, err := json.Marshal(w)
		if err != nil {
			p.mu.RUnlock()
			return fmt.Errorf("keypool: encode key %d: %w", id, err)
		}
		args = append(args, strconv.FormatInt(id, 10), string(b))
		sent = append(sent, pending{id, l.rev})
	}
	p.mu.RUnlock()
	if len(sent) == 0 {
		return nil
	}
	if err := writeScript.Run(ctx, p.rdb, []string{p.stateKey, p.verKey}, args...).Err(); err != nil {
		return fmt.Errorf("keypool: write key states: %w", err)
	}
	p.mu.Lock()
	for _, s := range sent {
		if l := p.shared[s.id]; l != nil && l.rev == s.rev {
			l.dirty = false
		}
	}
	p.mu.Unlock()
	return nil
}

// pull replaces the local state with Redis's, keeping local changes not yet
// written. Without force it skips the read when the version is unchanged.
func (p *Pool) pull(ctx context.Context, force bool) error {
	p.writeMu.Lock() // a Reenable is either wholly before or after this pull
	defer p.writeMu.Unlock()
	ver, err := p.rdb.Get(ctx, p.verKey).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("keypool: read version: %w", err)
	}
	if !force && ver == p.lastVer.Load() {
		return nil
	}
	recs, err := p.readRedis(ctx)
	if err != nil {
		return err
	}
	now := p.opts.Clock()
	p.mu.Lock()
	next := make(map[int64]*local, len(recs))
	for id, r := range recs {
		if r.blocks(now) {
			next[id] = &local{record: r}
		}
	}
	for id, l := range p.shared {
		if l.dirty {
			next[id] = l
		}
	}
	p.shared = next
	p.mu.Unlock()
	p.lastVer.Store(ver)
	return nil
}

func (p *Pool) readRedis(ctx context.Context) (map[int64]record, error) {
	raw, err := p.rdb.HGetAll(ctx, p.stateKey).Result()
	if err != nil {
		return nil, fmt.Errorf("keypool: read key states: %w", err)
	}
	recs := make(map[int64]record, len(raw))
	for f, v := range raw {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			continue
		}
		var w wire
		if err := json.Unmarshal([]byte(v), &w); err != nil {
			p.opts.Logger.Warn("keypool: undecodable key state", slog.Int64("key_id", id), slog.Any("err", err))
			continue
		}
		recs[id] = w.record
	}
	return recs, nil
}
