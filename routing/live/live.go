// Package live keeps the published configuration this instance serves: the
// newest version compiled into a config.Runtime behind an atomic pointer,
// swapped on PostgreSQL NOTIFY and on a periodic check. The router reads it
// without locks; a request keeps the Runtime it started with.
package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"switchyard/routing/config"
)

// Source is what the loader reads from PostgreSQL.
type Source interface {
	// LiveSnapshot is the newest published version: its number and its
	// canonical snapshot.
	LiveSnapshot(ctx context.Context) (number int64, snapshot []byte, err error)
	LatestVersionNumber(ctx context.Context) (int64, error)
	ProviderKeySecrets(ctx context.Context, ids []int64) (map[int64]string, error)
	ProviderHeaderSecrets(ctx context.Context, ids []int64) (map[int64]config.HeaderSecret, error)
	LiveCallerKeys(ctx context.Context) (config.LiveKeys, error)
	CallerKeysState(ctx context.Context) (string, error)
	// ConfigEpoch grows with every publish and caller-key change.
	ConfigEpoch(ctx context.Context) (int64, error)
	Listen(ctx context.Context, log *slog.Logger) <-chan Notice
}

// Cached is everything a Runtime is compiled from: the version, its
// snapshot and the credentials it needs. The last one loaded is kept
// outside PostgreSQL (see Cache) so an instance can start and serve while
// PostgreSQL is unreachable.
type Cached struct {
	Version int64
	// Epoch is the configuration epoch read before the rest: the copy
	// holds at least everything published and revoked up to it.
	Epoch                 int64
	Snapshot              []byte
	ProviderKeySecrets    map[int64]string
	ProviderHeaderSecrets map[int64]config.HeaderSecret
	CallerKeys            config.LiveKeys // key hash → key
	SavedAt               time.Time
}

// Cache keeps the last-known-good version. Implementations must protect
// it at rest (it holds provider secrets) and detect corruption: Load
// returns an error rather than a damaged copy.
type Cache interface {
	Save(ctx context.Context, c Cached) error
	// Copies returns every copy found, opened or with why it does not
	// open, and the epochs the cache's witnesses (Redis) hold.
	Copies(ctx context.Context) ([]Copy, []Witness)
}

// ErrNoCache is returned by Cache.Load when no copy exists.
var ErrNoCache = errors.New("no last-known-good configuration is cached")

// Holder is the current Runtime. Current is nil before the first publish.
type Holder struct {
	p      atomic.Pointer[config.Runtime]
	loaded atomic.Bool
}

// Current returns the Runtime to serve a request with.
func (h *Holder) Current() *config.Runtime { return h.p.Load() }

// Set replaces the Runtime (used by tests and the loader).
func (h *Holder) Set(rt *config.Runtime) { h.p.Store(rt); h.loaded.Store(true) }

// Loaded reports whether the first load finished (even if nothing is published).
func (h *Holder) Loaded() bool { return h.loaded.Load() }

// Loader keeps a Holder up to date.
type Loader struct {
	Source   Source
	Holder   *Holder
	Log      *slog.Logger
	Interval time.Duration // the safety-net check; default 1s
	// OnSwap is called after a new version goes live.
	OnSwap func(rt *config.Runtime)
	// Cache, when set, receives every version (and caller-key change) that
	// goes live, and LoadCached starts from it.
	Cache Cache
	// Unwitnessed lets LoadCached serve a copy when no witness answers
	// (SWITCHYARD_CONFIG_CACHE_UNWITNESSED=serve); see Choose.
	Unwitnessed bool

	mu        sync.Mutex
	keysState string
	failed    int64  // a version number that failed to load, not retried until a newer one
	refused   string // why failed did not load, reported while it is the newest
	lastErr   atomic.Value
	last      Cached      // what the current Runtime was compiled from
	fromCache atomic.Bool // serving a cached copy; PostgreSQL not reached since
	cachedAt  atomic.Value
	picked    atomic.Pointer[Pick] // the copy LoadCached serves
}

// Picked is the cached copy served since a start without PostgreSQL, and
// the witness it was checked against; false once PostgreSQL answered.
func (l *Loader) Picked() (Pick, bool) {
	p := l.picked.Load()
	if p == nil || !l.fromCache.Load() {
		return Pick{}, false
	}
	return *p, true
}

// FromCache reports whether the served version came from the cache and
// PostgreSQL has not answered since, with when that copy was saved.
func (l *Loader) FromCache() (bool, time.Time) {
	t, _ := l.cachedAt.Load().(time.Time)
	return l.fromCache.Load(), t
}

// LoadCached serves the cached last-known-good version. It is for a start
// while PostgreSQL is unreachable; Reload replaces it as soon as
// PostgreSQL answers.
func (l *Loader) LoadCached(ctx context.Context) (int64, error) {
	if l.Cache == nil {
		return 0, ErrNoCache
	}
	copies, witnesses := l.Cache.Copies(ctx)
	ectx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if e, err := l.Source.ConfigEpoch(ectx); err == nil {
		witnesses = append(witnesses, Witness{Name: "postgres", Epoch: e})
	}
	cancel()
	pick, err := Choose(copies, witnesses, l.Unwitnessed)
	if err != nil {
		return 0, err
	}
	c := pick.Cached
	rt, err := compile(c)
	if err != nil {
		return 0, fmt.Errorf("the cached version %d does not load: %w", c.Version, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Holder.Loaded() {
		return l.Holder.Current().Version, nil // PostgreSQL answered meanwhile
	}
	l.last = c
	l.fromCache.Store(true)
	l.cachedAt.Store(c.SavedAt)
	pick.Cached = Cached{} // the Runtime holds what is needed
	l.picked.Store(&pick)
	l.Holder.Set(rt)
	l.lastErr.Store("")
	witness := pick.Witness.Name
	if witness == "" {
		witness = "none answered (SWITCHYARD_CONFIG_CACHE_UNWITNESSED=serve)"
	}
	l.Log.Warn("serving the last-known-good configuration from the cache: PostgreSQL is unreachable", "version", c.Version, "epoch", c.Epoch,
		"copy", pick.Where, "witness", witness, "witness_epoch", pick.Witness.Epoch, "saved_at", c.SavedAt)
	if l.OnSwap != nil {
		l.OnSwap(rt)
	}
	return c.Version, nil
}

func (l *Loader) save(ctx context.Context) {
	if l.Cache == nil {
		return
	}
	c := l.last
	c.SavedAt = time.Now().UTC()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := l.Cache.Save(ctx, c); err != nil {
		l.Log.Warn("the last-known-good configuration was not cached", "version", c.Version, "err", err)
	}
}

// LastError returns the last load failure message, "" when healthy.
func (l *Loader) LastError() string {
	s, _ := l.lastErr.Load().(string)
	return s
}

// Run loads now, then follows notifications until ctx ends.
func (l *Loader) Run(ctx context.Context) {
	interval := l.Interval
	if interval <= 0 {
		interval = time.Second
	}
	notes := l.Source.Listen(ctx, l.Log)
	l.Reload(ctx, true)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case n, ok := <-notes:
			if !ok {
				notes = nil
				continue
			}
			l.Reload(ctx, n.ReloadsKeys())
		case <-t.C:
			l.Reload(ctx, false)
		}
	}
}

// Reload brings the Holder to the newest version and caller keys.
// forceKeys reloads caller keys even when their state looks unchanged.
func (l *Loader) Reload(ctx context.Context, forceKeys bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.Holder.Current()
	n, err := l.Source.LatestVersionNumber(ctx)
	if err != nil {
		l.fail("cannot check the live version (keeping the current one)", err)
		return
	}
	var curVersion int64
	if cur != nil {
		curVersion = cur.Version
	}
	// Read before the data it labels: a copy is never labelled newer than
	// what it holds.
	epoch, err := l.Source.ConfigEpoch(ctx)
	if err != nil {
		l.fail("cannot check the configuration epoch", err)
		return
	}
	keysState, err := l.Source.CallerKeysState(ctx)
	if err != nil {
		l.fail("cannot check caller keys", err)
		return
	}
	// PostgreSQL answers: a failure to reach it no longer holds. Only a
	// version that does not load stays reported until a newer one loads.
	if n == l.failed && n > curVersion {
		l.lastErr.Store(l.refused)
	} else {
		l.lastErr.Store("")
	}
	// Back from a cached start: caller keys may have changed meanwhile.
	keysChanged := forceKeys || keysState != l.keysState || l.fromCache.Load() || epoch != l.last.Epoch
	if l.fromCache.Swap(false) {
		l.Log.Info("PostgreSQL answers again: configuration follows it", "serving", curVersion, "live", n)
	}
	switch {
	case n > curVersion && n != l.failed:
		rt, err := l.load(ctx, epoch)
		if err != nil {
			l.failed = n
			l.fail(fmt.Sprintf("version %d refused: it does not load; still serving version %d", n, curVersion), err)
			l.refused = l.LastError()
			return
		}
		l.keysState = keysState
		l.Holder.Set(rt)
		l.lastErr.Store("")
		l.Log.Info("configuration live", "version", rt.Version, "previous", curVersion)
		if l.OnSwap != nil {
			l.OnSwap(rt)
		}
		l.save(ctx)
	case keysChanged && cur != nil:
		keys, err := l.Source.LiveCallerKeys(ctx)
		if err != nil {
			l.fail("cannot reload caller keys", err)
			return
		}
		l.keysState = keysState
		l.Holder.Set(cur.WithCallerKeys(keys))
		l.Log.Info("caller keys reloaded", "version", cur.Version, "keys", len(keys))
		l.last.CallerKeys, l.last.Epoch = keys, epoch
		l.save(ctx)
	default:
		if !l.Holder.Loaded() {
			l.keysState = keysState
			l.Holder.loaded.Store(true)
		}
	}
}

func (l *Loader) fail(msg string, err error) {
	l.Log.Error(msg, "err", err)
	l.lastErr.Store(msg + ": " + err.Error())
}

func (l *Loader) load(ctx context.Context, epoch int64) (*config.Runtime, error) {
	number, snapshot, err := l.Source.LiveSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := config.Decode(snapshot)
	if err != nil {
		return nil, err
	}
	var ids, headerIDs []int64
	for _, p := range snap.Providers {
		for _, k := range p.Keys {
			ids = append(ids, k.ID)
		}
		for _, h := range p.Headers {
			if h.Secret {
				headerIDs = append(headerIDs, h.SecretID)
			}
		}
	}
	slices.Sort(ids)
	secrets, err := l.Source.ProviderKeySecrets(ctx, ids)
	if err != nil {
		return nil, err
	}
	headerSecrets, err := l.Source.ProviderHeaderSecrets(ctx, headerIDs)
	if err != nil {
		return nil, err
	}
	keys, err := l.Source.LiveCallerKeys(ctx)
	if err != nil {
		return nil, err
	}
	c := Cached{Version: number, Epoch: epoch, Snapshot: snapshot, ProviderKeySecrets: secrets, ProviderHeaderSecrets: headerSecrets, CallerKeys: keys}
	rt, err := compileDecoded(c, snap) // decoded once: a large snapshot takes a while
	if err == nil {
		l.last = c
	}
	return rt, err
}

func compile(c Cached) (*config.Runtime, error) {
	snap, err := config.Decode(c.Snapshot)
	if err != nil {
		return nil, err
	}
	return compileDecoded(c, snap)
}

func compileDecoded(c Cached, snap config.Snapshot) (*config.Runtime, error) {
	return config.Compile(c.Version, snap, config.Credentials{ProviderKeySecrets: c.ProviderKeySecrets, ProviderHeaderSecrets: c.ProviderHeaderSecrets, CallerKeys: c.CallerKeys})
}
