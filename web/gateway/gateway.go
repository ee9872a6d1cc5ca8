// Package gateway assembles one Switchyard instance: the live configuration,
// the Redis-backed protection (limits, idempotency, breakers, key pools, load
// counters), the call-log writer, metrics, the data plane and the console.
// cmd/switchyard and the integration tests build instances with it.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/redis/go-redis/v9"

	"switchyard/handlers"
	"switchyard/routing"
	"switchyard/routing/adapter"
	"switchyard/routing/alert"
	"switchyard/routing/breaker"
	"switchyard/routing/config"
	"switchyard/routing/config/onboarding"
	"switchyard/routing/ladder"
	"switchyard/routing/live"
	"switchyard/routing/queue"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/store/lastgood"
	"switchyard/store/redis/answercache"
	"switchyard/store/redis/breakerboard"
	"switchyard/store/redis/idempotency"
	"switchyard/store/redis/keypool"
	"switchyard/store/redis/limits"
	"switchyard/store/redis/loadcount"
	"switchyard/store/redis/loginguard"
	"switchyard/store/redis/retrybudget"
	"switchyard/store/secrets"
	"switchyard/web"
	"switchyard/web/metrics"
	"switchyard/web/worker"
)

// Options configure an instance.
type Options struct {
	Store       *store.Store
	Redis       redis.UniversalClient
	Log         *slog.Logger
	RedisPrefix string         // default "sy"
	SpillDir    string         // call-log spill directory (required)
	Location    *time.Location // daily quotas and monthly budgets; default UTC
	MaxBody     int64          // data-plane body limit; default 10 MB
	// CountTokens is count_tokens' own rate (a multiple of the caller's
	// RPM) and body bound.
	CountTokens routing.CountTokensLimits
	// BodyBytesInFlight bounds the request-body bytes in flight (0: none).
	BodyBytesInFlight int64
	InstanceCap       int           // in-flight cap of this instance; 0 = unlimited
	IdemTTL           time.Duration // how long idempotent results are kept
	ReloadInterval    time.Duration // safety-net configuration check
	// KeyUseFlush is how often the last use of caller keys and admin API
	// tokens is written to PostgreSQL (default 30s).
	KeyUseFlush  time.Duration
	CookieSecure bool
	PublicURL    string
	Env          config.Env
	// Console serves the operator console (APP_ROLE api or all).
	Console bool
	// RedisTimeout bounds each limit, load-counter and key-state call before
	// the per-instance fallback takes over (default 50 ms).
	RedisTimeout time.Duration
	// LimitsExact decides every limited request in Redis, with no leased
	// slices (store/redis/limits, lease.go).
	LimitsExact bool
	// CatalogFile (SWITCHYARD_CATALOG_FILE) is merged over the built-in
	// onboarding catalogue; SandboxURL (SWITCHYARD_SANDBOX_URL) is where the
	// local sandbox template points.
	CatalogFile, SandboxURL string
	// Worker configures health scoring and the singleton jobs; its RunJobs
	// runs the jobs (APP_ROLE worker or all).
	Worker WorkerOptions
	// Sealer seals the last-known-good configuration copy; with CacheDir
	// (default: "lastgood" beside SpillDir) it enables starting while
	// PostgreSQL is unreachable.
	Sealer   *secrets.Sealer
	CacheDir string
	// CacheUnwitnessed serves a cached copy at start even when neither
	// PostgreSQL nor Redis answers with the configuration epoch to check
	// it against (live.Choose).
	CacheUnwitnessed bool
	// SignIn throttles failed console logins and admin API tokens.
	SignIn handlers.SignInOptions
	// QueueBounds are the most requests waiting per class (interactive,
	// normal, batch; 0: the default, negative: no queue); QueuePoll the
	// re-poll period of shared capacity while requests wait.
	QueueBounds [3]int
	QueuePoll   time.Duration
	// Tracer exports a span per data-plane request (nil: tracing off).
	Tracer routing.Tracer
}

// Gateway is one assembled instance.
type Gateway struct {
	Holder   *live.Holder
	Loader   *live.Loader
	Breakers *breaker.Set
	Reporter *breakerboard.Reporter
	Keys     *keypool.Pool
	Load     *loadcount.Counters
	Queue    *queue.Queue
	Limiter  *limits.Limiter
	Budget   *retrybudget.Budget
	SLA      *ladder.Watch
	Answers  *answercache.Cache
	Idem     *idempotency.Store
	Uses     *store.UseLog
	CallLog  *calllog.Writer
	Metrics  *metrics.Metrics
	Exec     *routing.Executor
	Journey  *routing.Journey
	Data     *handlers.DataPlane
	Console  *handlers.Handler
	Server   *web.Server
	Sessions *scs.SessionManager
	Worker   *Worker
	log      *slog.Logger
	redis    redis.UniversalClient
	store    *store.Store
	wg       sync.WaitGroup
	stop     context.CancelFunc
	// ssoRecheck is how often single-sign-on sessions are refreshed.
	ssoRecheck time.Duration
	draining   atomic.Bool
	cutNow     context.CancelFunc
	pgDown     atomic.Bool // the last PostgreSQL check failed
	useFlush   time.Duration
	// OnPostgresBack runs once when PostgreSQL answers after the instance
	// started without it (migrations, the first admin); set before Start.
	OnPostgresBack func(context.Context) error
}

// Adapters are the implemented protocols (adapter.All).
func Adapters() map[config.Protocol]adapter.Adapter { return adapter.All() }

// Implemented is what the dry-run knows about this build's adapters.
func Implemented() config.Env { return adapter.Support() }

// UpstreamClient is the shared HTTP client for vendor calls: pooled
// connections and no client timeout, because every deadline comes from the
// attempt's context.
func UpstreamClient() *http.Client {
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: t}
}

func instanceID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}

// New assembles an instance; Start runs its background loops.
func New(o Options) (*Gateway, error) {
	o = o.withDefaults()
	g := &Gateway{log: o.Log, Holder: &live.Holder{}, redis: o.Redis, store: o.Store, Uses: o.Store.NewUseLog()}
	observer := &queueObserver{}
	g.buildState(o, observer)
	w, err := calllog.NewWriter(o.Store.DB(), calllog.WriterOptions{SpillDir: o.SpillDir, Logger: o.Log})
	if err != nil {
		return nil, err
	}
	g.CallLog = w
	if err := g.buildLoader(o); err != nil {
		return nil, err
	}
	bodies := routing.NewBodyBudget(o.BodyBytesInFlight)
	g.Metrics = metrics.New(g.gauges(bodies))
	observer.m = g.Metrics
	g.Metrics.QueueDepth(func(class string) float64 { return float64(g.Queue.Depth(queue.ClassOf(config.PriorityClass(class)))) })
	g.Metrics.Alerting(g.alertingSources())
	g.Metrics.LimitDecisions(func(by string) float64 {
		switch by {
		case "slice":
			return float64(g.Limiter.LeasedDecisions())
		case "redis":
			return float64(g.Limiter.RedisDecisions())
		}
		return float64(g.Limiter.FallbackDecisions())
	})
	g.Loader.OnSwap = func(rt *config.Runtime) {
		g.Metrics.Live.Set(float64(rt.Version))
		g.Metrics.Reloads.WithLabelValues("ok").Inc()
	}
	g.useFlush = o.KeyUseFlush
	g.buildDataPlane(o, bodies)
	g.buildConsole(o)
	o.Worker.Prefix = o.RedisPrefix
	g.Worker = g.AttachWorker(o.Store, o.Worker)
	return g, nil
}

// withDefaults fills the options a caller may leave out.
func (o Options) withDefaults() Options {
	if o.RedisPrefix == "" {
		o.RedisPrefix = "sy"
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.KeyUseFlush <= 0 {
		o.KeyUseFlush = 30 * time.Second
	}
	if o.Env.Implemented == nil {
		o.Env = Implemented()
	}
	return o
}

// buildState makes the shared state the data plane consults: breakers, key
// pools, load, queue, limits, retry budget, SLA watch, answers and
// idempotency.
func (g *Gateway) buildState(o Options, observer *queueObserver) {
	log := o.Log
	id := instanceID()
	g.Breakers = breaker.NewSet(breaker.Options{Logger: log})
	g.Reporter = breakerboard.NewReporter(g.Breakers, o.Redis, breakerboard.ReporterOptions{Prefix: o.RedisPrefix, InstanceID: id, Logger: log})
	g.Keys = keypool.New(o.Redis, keypool.Options{Prefix: o.RedisPrefix, Logger: log, Timeout: o.RedisTimeout})
	g.Queue = queue.New(queue.Options{Bounds: o.QueueBounds, InstanceCap: o.InstanceCap, Poll: o.QueuePoll, Observer: observer})
	g.Load = loadcount.New(o.Redis, loadcount.Options{Prefix: o.RedisPrefix, Logger: log, OpTimeout: o.RedisTimeout, InstanceID: id, OnRelease: g.Queue.Released})
	g.Limiter = limits.New(o.Redis, limits.Options{Prefix: o.RedisPrefix, Location: o.Location, Logger: log, Timeout: o.RedisTimeout, Exact: o.LimitsExact})
	g.SLA = ladder.New(nil)
	g.Answers = answercache.New(o.Redis, o.RedisPrefix)
	g.Budget = retrybudget.New(o.Redis, retrybudget.Options{Prefix: o.RedisPrefix, Logger: log, Timeout: o.RedisTimeout})
	g.Idem = idempotency.New(o.Redis, idempotency.Options{Prefix: o.RedisPrefix, TTL: o.IdemTTL})
}

// buildLoader makes the configuration loader, with the last-known-good
// cache when there is a key to seal it with.
func (g *Gateway) buildLoader(o Options) error {
	g.Loader = &live.Loader{Source: o.Store, Holder: g.Holder, Log: o.Log, Interval: o.ReloadInterval}
	if o.Sealer == nil {
		return nil
	}
	dir := o.CacheDir
	if dir == "" {
		dir = filepath.Join(filepath.Dir(filepath.Clean(o.SpillDir)), "lastgood")
	}
	cache, err := lastgood.New(dir, o.Redis, o.RedisPrefix, o.Sealer, o.Log)
	if err != nil {
		return err
	}
	g.Loader.Cache = cache
	g.Loader.Unwitnessed = o.CacheUnwitnessed
	return nil
}

// gauges are the instance's gauges read at scrape time.
func (g *Gateway) gauges(bodies *routing.BodyBudget) map[string]func() float64 {
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	w := g.CallLog
	return map[string]func() float64{
		"switchyard_body_bytes_in_flight": func() float64 { return float64(bodies.InFlight()) },
		"switchyard_calllog_buffer_depth": func() float64 { return float64(w.Depth()) },
		"switchyard_calllog_spill_bytes":  func() float64 { return float64(w.SpillBytes()) },
		"switchyard_redis_degraded": func() float64 {
			return flag(g.Limiter.Degraded() || g.Keys.Degraded() || g.Load.Degraded() || g.Budget.Degraded())
		},
		"switchyard_inflight_requests":    func() float64 { return float64(g.Queue.InFlight()) },
		"switchyard_config_load_failing":  func() float64 { return flag(g.Loader.LastError() != "") },
		"switchyard_goroutines_dataplane": func() float64 { return float64(runtime.NumGoroutine()) },
		"switchyard_config_from_cache": func() float64 {
			cached, _ := g.Loader.FromCache()
			return flag(cached)
		},
		// The epoch of the cached copy served (0: not serving one), and
		// whether it was served with no witness to check it against.
		"switchyard_config_cache_epoch": func() float64 {
			p, _ := g.Loader.Picked()
			return float64(p.Epoch)
		},
		"switchyard_config_cache_unwitnessed": func() float64 {
			p, ok := g.Loader.Picked()
			return flag(ok && p.Witness.Name == "")
		},
		"switchyard_postgres_unreachable": func() float64 { return flag(g.pgDown.Load()) },
		"switchyard_draining":             func() float64 { return flag(g.draining.Load()) },
	}
}

// buildDataPlane makes the executor, the journey and the data-plane
// handlers.
func (g *Gateway) buildDataPlane(o Options, bodies *routing.BodyBudget) {
	g.Exec = &routing.Executor{
		Adapters: Adapters(),
		Client:   UpstreamClient(),
		State:    routing.State{Breakers: breakers{g.Breakers}, Keys: g.Keys, Load: load{g.Load}, Budget: g.Budget},
		Queue:    g.Queue,
	}
	g.Journey = &routing.Journey{
		Live: g.Holder, Exec: g.Exec, Limits: g.Limiter, Idem: g.Idem, Calls: g.CallLog, Watch: g.Metrics,
		MaxBody: o.MaxBody, CountTokens: o.CountTokens, BodyBytes: bodies, Log: o.Log,
		SLA: slaWatch{g.SLA}, Answers: g.Answers, KeyUse: g.Uses, Trace: o.Tracer,
	}
	cut, cutNow := context.WithCancelCause(context.Background())
	g.cutNow = func() { cutNow(routing.ErrShuttingDown) }
	g.Data = &handlers.DataPlane{Journey: g.Journey, Cut: cut}
}

// buildConsole makes the console handlers, the onboarding wizard and the
// server that routes to them and to the data plane.
func (g *Gateway) buildConsole(o Options) {
	log := o.Log
	g.Sessions = web.NewSessions(o.Store, o.CookieSecure)
	g.Console = &handlers.Handler{Sessions: g.Sessions, Log: log, Env: o.Env, BaseURL: o.PublicURL, Location: o.Location,
		Keys: g.Keys, Notices: g.notices, Ops: ops{g: g, prefix: o.RedisPrefix}}
	g.Console.UseStorage(o.Store, calllog.Reader{DB: o.Store.DB()})
	g.ssoRecheck = o.SignIn.SSORecheck
	g.Console.PostAlert = func(ctx context.Context, shape alert.Shape, url string, n alert.Notice) error {
		return worker.Post(ctx, &http.Client{Timeout: 10 * time.Second}, shape, url, n)
	}
	g.Console.SignIn = handlers.NewSignIn(loginguard.New(o.Redis, loginguard.Options{Prefix: o.RedisPrefix, Settings: o.SignIn.Settings, Logger: log, Timeout: o.RedisTimeout}), o.SignIn.TrustedProxies)
	cat, catErr := loadCatalog(o, log)
	wizard := handlers.NewOnboarding(g.Console, cat, catErr, &onboarding.Verifier{Adapters: Adapters(), Client: UpstreamClient()})
	g.Server = web.New(g.Console, g.Data, o.Store, g.Sessions, log, g.Ready, web.Options{CookieSecure: o.CookieSecure, Metrics: g.Metrics.Handler(), Onboarding: wizard,
		Health: g.health, Offline: g.offline, Uses: g.Uses})
}

// loadCatalog loads the onboarding catalogue with the operator's file merged
// over the built-in one. A broken operator file must not keep the console
// down at 2 a.m.: it is logged, named on the wizard's first page (the
// returned message), and the built-in catalogue is used.
func loadCatalog(o Options, log *slog.Logger) (*onboarding.Catalog, string) {
	opts := onboarding.LoadOptions{File: o.CatalogFile, SandboxURL: o.SandboxURL, Env: o.Env}
	cat, err := onboarding.Load(opts)
	if err == nil {
		return cat, ""
	}
	log.Error("onboarding catalogue not loaded; using the built-in one", "file", o.CatalogFile, "err", err)
	opts.File = ""
	cat, _ = onboarding.Load(opts)
	return cat, err.Error()
}

// notices are the instance-wide warnings on every console page.
func (g *Gateway) notices() []string {
	var out []string
	if cached, at := g.Loader.FromCache(); cached {
		out = append(out, fmt.Sprintf("PostgreSQL has not answered since this instance started: it serves the last-known-good configuration version %d, cached %s.", g.Holder.Current().Version, at.Format(time.RFC3339)))
	}
	if g.Limiter.Degraded() || g.Keys.Degraded() || g.Load.Degraded() || g.Budget.Degraded() {
		out = append(out, "Redis is unreachable: rate limits, key states, load counters and retry budgets are enforced per instance until it returns.")
	}
	if e := g.Loader.LastError(); e != "" {
		out = append(out, "Configuration: "+e)
	}
	if g.CallLog.SpillBytes() > 0 {
		out = append(out, "PostgreSQL is not taking call logs right now: they are kept in the spill file and will be written when it returns.")
	}
	return out
}

// Start loads the configuration and runs the background loops until ctx ends.
func (g *Gateway) Start(ctx context.Context) {
	ctx, g.stop = context.WithCancel(ctx)
	g.wg.Add(2)
	go func() { defer g.wg.Done(); g.Loader.Run(ctx) }()
	go func() { defer g.wg.Done(); _ = g.Reporter.Run(ctx) }()
	g.wg.Add(1)
	go func() { defer g.wg.Done(); g.Worker.Run(ctx) }()
	if g.Console != nil && g.ssoRecheck > 0 {
		g.wg.Add(1)
		go func() { defer g.wg.Done(); g.Console.RunSSORecheck(ctx, g.ssoRecheck) }()
	}
	g.wg.Add(1)
	go func() { defer g.wg.Done(); g.Uses.Run(ctx, g.useFlush, g.log) }()
	g.wg.Add(1)
	go func() { defer g.wg.Done(); g.watchPostgres(ctx, 2*time.Second, g.OnPostgresBack) }()
	g.wg.Add(1)
	go func() { defer g.wg.Done(); g.releaseAfterPeaks(ctx) }()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for id, s := range g.Breakers.Snapshot() {
					g.Metrics.Breakers.WithLabelValues(strconv.FormatInt(id, 10)).Set(float64(s.State))
				}
			}
		}
	}()
}

// WaitLoaded blocks until the first configuration load finished.
func (g *Gateway) WaitLoaded(ctx context.Context) error {
	for !g.Holder.Loaded() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// Close stops the loops and flushes the call log.
func (g *Gateway) Close(ctx context.Context) error {
	if g.stop != nil {
		g.stop()
	}
	g.wg.Wait()
	_ = g.Limiter.Close(ctx) // leased slices given back, settlements still waiting for a pipeline sent
	g.Keys.Close()
	g.Queue.Close()
	g.Load.Close()
	g.Budget.Close()
	return g.CallLog.Close(ctx)
}

// WorkerHandler serves what a worker-only process exposes: /healthz,
// /readyz and /metrics.
func (g *Gateway) WorkerHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", g.Metrics.Handler())
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if g.draining.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"not ready"}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"ready"}`))
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if err := g.store.Ping(ctx); err != nil {
			http.Error(w, `{"status":"unavailable","postgres":"unreachable"}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok","role":"worker"}`))
	})
	return mux
}
