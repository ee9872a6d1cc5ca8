// Package live keeps the published configuration this instance serves: the
// newest version compiled into a config.Runtime behind an atomic pointer,
// swapped on PostgreSQL NOTIFY and on a periodic check. The router reads it
// without locks; a request keeps the Runtime it started with.
package live

import (
	"context"
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
	LiveCallerKeys(ctx context.Context) (map[[32]byte]int64, error)
	CallerKeysState(ctx context.Context) (string, error)
	Listen(ctx context.Context, log *slog.Logger) <-chan string
}

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

	mu        sync.Mutex
	keysState string
	failed    int64 // a version number that failed to load, not retried until a newer one
	lastErr   atomic.Value
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
			l.Reload(ctx, n == "keys" || n == "reconnect")
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
	keysState, err := l.Source.CallerKeysState(ctx)
	if err != nil {
		l.fail("cannot check caller keys", err)
		return
	}
	keysChanged := forceKeys || keysState != l.keysState
	switch {
	case n > curVersion && n != l.failed:
		rt, err := l.load(ctx)
		if err != nil {
			l.failed = n
			l.fail(fmt.Sprintf("version %d refused: it does not load; still serving version %d", n, curVersion), err)
			return
		}
		l.keysState = keysState
		l.Holder.Set(rt)
		l.lastErr.Store("")
		l.Log.Info("configuration live", "version", rt.Version, "previous", curVersion)
		if l.OnSwap != nil {
			l.OnSwap(rt)
		}
	case keysChanged && cur != nil:
		keys, err := l.Source.LiveCallerKeys(ctx)
		if err != nil {
			l.fail("cannot reload caller keys", err)
			return
		}
		l.keysState = keysState
		l.Holder.Set(cur.WithCallerKeys(keys))
		l.Log.Info("caller keys reloaded", "version", cur.Version, "keys", len(keys))
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

func (l *Loader) load(ctx context.Context) (*config.Runtime, error) {
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
	return config.Compile(number, snap, config.Credentials{ProviderKeySecrets: secrets, ProviderHeaderSecrets: headerSecrets, CallerKeys: keys})
}
