package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"switchyard/routing/live"
	"switchyard/web"
)

// ErrCacheRefused is why an instance refuses to start when PostgreSQL is
// unreachable and the cached copies cannot be served (live.Choose says why).
var ErrCacheRefused = errors.New("PostgreSQL is unreachable and the cached configuration cannot be served: refusing to start; start PostgreSQL (the instance then loads the live version)")

// ErrNoConfiguration is why an instance refuses to start: PostgreSQL is
// unreachable and there is no last-known-good copy to serve.
var ErrNoConfiguration = errors.New("PostgreSQL is unreachable and this instance has no cached configuration (it never loaded a published version here): refusing to start; start PostgreSQL, or start this instance where its cache directory or Redis holds a copy")

// LoadInitial loads the configuration before the instance accepts
// requests: from PostgreSQL when it answers, else from the last-known-good
// cache. With neither it returns ErrNoConfiguration; when copies exist but
// are refused (damaged, older than the epoch PostgreSQL or Redis knows, or
// with no witness) an ErrCacheRefused that says which and why.
func (g *Gateway) LoadInitial(ctx context.Context) error {
	if err := g.pingStore(ctx); err == nil {
		g.Loader.Reload(ctx, true)
		if g.Holder.Loaded() {
			return nil
		}
		// PostgreSQL answers but its live version does not load (the
		// loader logged why): the cached copy is better than nothing.
		version, cerr := g.Loader.LoadCached(ctx)
		if cerr == nil {
			g.log.Error("the live version does not load; serving the cached copy", "version", version, "err", g.Loader.LastError())
			return nil
		}
		return fmt.Errorf("the live configuration does not load (%s) and no cached copy can be served: %v", g.Loader.LastError(), cerr)
	}
	g.pgDown.Store(true)
	version, err := g.Loader.LoadCached(ctx)
	switch {
	case errors.Is(err, live.ErrNoCache):
		return ErrNoConfiguration
	case live.IsRefused(err):
		return fmt.Errorf("%w: %v", ErrCacheRefused, err)
	case err != nil:
		return fmt.Errorf("%w: the cached copy does not load: %v", ErrCacheRefused, err)
	}
	g.log.Warn("started without PostgreSQL: serving the cached version; the console is closed and call logs are spilled until PostgreSQL answers", "version", version)
	return nil
}

// PostgresUp reports whether the last PostgreSQL check succeeded.
func (g *Gateway) PostgresUp() bool { return !g.pgDown.Load() }

func (g *Gateway) pingStore(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return g.store.Ping(ctx)
}

// watchPostgres checks PostgreSQL every interval and calls onBack once when
// it answers after having been down (to migrate and finish starting).
func (g *Gateway) watchPostgres(ctx context.Context, every time.Duration, onBack func(context.Context) error) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := g.pingStore(ctx)
		was := g.pgDown.Load()
		g.pgDown.Store(err != nil)
		switch {
		case err != nil && !was:
			g.log.Error("PostgreSQL is unreachable: the data plane serves the live version, call logs are spilled, the console is closed", "err", err)
		case err == nil && was:
			if onBack != nil {
				if err := onBack(ctx); err != nil {
					g.log.Error("PostgreSQL answers again but finishing the start failed; retrying", "err", err)
					g.pgDown.Store(true)
					continue
				}
				onBack = nil
			}
			g.log.Info("PostgreSQL answers again")
		}
	}
}

// offline is the console's closing sentence while PostgreSQL is
// unreachable, "" otherwise.
func (g *Gateway) offline() string {
	if !g.pgDown.Load() {
		return ""
	}
	v := int64(0)
	if rt := g.Holder.Current(); rt != nil {
		v = rt.Version
	}
	msg := fmt.Sprintf("PostgreSQL is unreachable. The data plane goes on serving configuration version %d", v)
	if cached, at := g.Loader.FromCache(); cached {
		msg += fmt.Sprintf(" (the last-known-good copy cached %s, because this instance started without PostgreSQL)", at.Format(time.RFC3339))
	}
	return msg + "; call logs are kept in the spill file and written when PostgreSQL returns. The console needs PostgreSQL and reopens by itself when it answers."
}

// health is the detail of /healthz.
func (g *Gateway) health(ctx context.Context) web.HealthDetail {
	d := web.HealthDetail{Postgres: "ok", Config: "postgres", Draining: g.draining.Load()}
	if err := g.pingStore(ctx); err != nil {
		d.Postgres = "unreachable"
	}
	switch rt := g.Holder.Current(); {
	case rt != nil:
		d.Version = rt.Version
	case !g.Holder.Loaded():
		d.Config = "none"
	}
	if cached, _ := g.Loader.FromCache(); cached {
		d.Config = "cache"
	}
	if p, ok := g.Loader.Picked(); ok {
		d.Cache = &web.CacheDetail{Copy: p.Where, Version: p.Version, Epoch: p.Epoch, Witness: p.Witness.Name, WitnessEpoch: p.Witness.Epoch}
	}
	d.Notes = g.notices()
	return d
}
