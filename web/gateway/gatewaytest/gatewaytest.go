// Package gatewaytest runs a whole Switchyard instance for integration
// tests: a fresh PostgreSQL database, real Redis under a random key prefix,
// the fake vendor, a configuration built through the real store and
// published, and the gateway's HTTP server.
package gatewaytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/e2e/fakevendor"
	"switchyard/handlers"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
	"switchyard/web/gateway"
)

// RedisURL is the test Redis (SWITCHYARD_TEST_REDIS_URL).
func RedisURL() string {
	if v := os.Getenv("SWITCHYARD_TEST_REDIS_URL"); v != "" {
		return v
	}
	return "redis://127.0.0.1:6379/0"
}

// NewRedis connects to the test Redis, failing the test when it is down,
// and returns a fresh key prefix whose keys are deleted afterwards.
func NewRedis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	opt, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1
	opt.PoolSize = 256
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("gatewaytest: Redis at %s is not answering (`make test` starts it): %v", RedisURL(), err)
	}
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	prefix := "sytest" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	return rdb, prefix
}

// Env is a running instance with its fake vendor.
type Env struct {
	T        testing.TB
	Store    *store.Store // the instance's store (through the proxy when proxied)
	DSN      string       // the test database, direct
	Redis    redis.UniversalClient
	Prefix   string
	Fake     *fakevendor.Server
	FakeURL  string
	GW       *gateway.Gateway
	URL      string // the gateway's base URL
	Log      *slog.Logger
	SpillDir string
	// PGProxy and RedisProxy are set when the instance was started behind
	// cuttable proxies (Options.ProxyPostgres / ProxyRedis).
	PGProxy, RedisProxy *storetest.Proxy
}

// Options adjust an Env.
type Options struct {
	InstanceCap int
	// BodyBytesInFlight bounds the request-body bytes in flight (0: none).
	BodyBytesInFlight int64
	Logger            *slog.Logger
	ProxyPostgres     bool // connect the instance to PostgreSQL through a Proxy
	ProxyRedis        bool // connect the instance to Redis through a Proxy
	// RedisTimeout is the per-call Redis timeout before the per-instance
	// fallback (default 1 s here, so a loaded test machine does not fall
	// back by accident; production uses 50 ms).
	RedisTimeout time.Duration
	// SignIn configures the sign-in throttle (zero: the defaults).
	SignIn handlers.SignInOptions
	// Redis, when set, is the instance's Redis (e.g. a storetest
	// LocalCluster's client) instead of the test Redis; the caller owns it
	// and its keys. Only New reads it.
	Redis redis.UniversalClient
	// PgBouncer connects the instance's pool through a PgBouncer of its own
	// in transaction pooling mode (storetest.PgBouncer), with LISTEN on the
	// direct connection, as SWITCHYARD_DATABASE_LISTEN_URL sets it.
	PgBouncer bool
	// ReloadInterval is the periodic configuration check (default 200 ms);
	// a long one leaves NOTIFY as the only prompt way a publish goes live.
	ReloadInterval time.Duration
	// QueueBounds and QueuePoll configure the priority queues (zero: the
	// defaults; see gateway.Options).
	QueueBounds [3]int
	QueuePoll   time.Duration
	// Fake configures the fake vendor (only New reads it).
	Fake fakevendor.Options
	// KeyUseFlush is how often last use of keys is written (default 30 s).
	KeyUseFlush time.Duration
}

// New starts the fake vendor and an instance on a fresh database. The
// configuration is empty: use a Builder, then Publish.
func New(t testing.TB, opts ...Options) *Env {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	_, dsn := storetest.New(t)
	var rdb redis.UniversalClient
	var prefix string
	if o.Redis != nil {
		b := make([]byte, 5)
		_, _ = rand.Read(b)
		rdb, prefix = o.Redis, "sytest"+hex.EncodeToString(b)
	} else {
		rdb, prefix = NewRedis(t)
	}
	fake := fakevendor.New(o.Fake)
	fs := httptest.NewServer(fake)
	t.Cleanup(fs.Close)
	base := &Env{T: t, DSN: dsn, Redis: rdb, Prefix: prefix, Fake: fake, FakeURL: fs.URL}
	return base.start(o)
}

// Second starts another instance on the same database, Redis prefix and fake
// vendor, as a second gateway process would run.
func (e *Env) Second(opts ...Options) *Env {
	e.T.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	base := &Env{T: e.T, DSN: e.DSN, Redis: e.Redis, Prefix: e.Prefix, Fake: e.Fake, FakeURL: e.FakeURL}
	return base.start(o)
}

func (e *Env) start(o Options) *Env {
	t := e.T
	t.Helper()
	dsn := e.DSN
	if o.ProxyPostgres {
		u, _ := url.Parse(dsn)
		e.PGProxy = storetest.NewProxy(t, u.Host)
		u.Host = e.PGProxy.Addr
		dsn = u.String()
	}
	listenDSN := dsn
	if o.PgBouncer {
		dsn = storetest.PgBouncer(t, dsn)
	}
	key, _ := secrets.ParseKey(storetest.TestKey)
	sealer, _ := secrets.NewSealer(key)
	st, err := store.Open(context.Background(), dsn, sealer)
	if err != nil {
		t.Fatal(err)
	}
	st.SetListenURL(listenDSN)
	t.Cleanup(func() { st.Close() })
	e.Store = st
	rdb := e.Redis
	if o.ProxyRedis {
		opt, _ := redis.ParseURL(RedisURL())
		e.RedisProxy = storetest.NewProxy(t, opt.Addr)
		opt.Addr = e.RedisProxy.Addr
		opt.ContextTimeoutEnabled = true
		opt.MaxRetries = -1
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
		opt.PoolSize = 256
		prdb := redis.NewClient(opt)
		t.Cleanup(func() { prdb.Close() })
		rdb = prdb
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e.Log = log
	e.SpillDir = filepath.Join(t.TempDir(), "spill")
	if o.RedisTimeout == 0 {
		o.RedisTimeout = time.Second
	}
	if o.ReloadInterval == 0 {
		o.ReloadInterval = 200 * time.Millisecond
	}
	gw, err := gateway.New(gateway.Options{Store: st, Redis: rdb, Log: log, RedisPrefix: e.Prefix, SpillDir: e.SpillDir, RedisTimeout: o.RedisTimeout,
		ReloadInterval: o.ReloadInterval, InstanceCap: o.InstanceCap, BodyBytesInFlight: o.BodyBytesInFlight, QueueBounds: o.QueueBounds, QueuePoll: o.QueuePoll, Env: gateway.Implemented(), PublicURL: "http://gateway.test", SignIn: o.SignIn,
		KeyUseFlush: o.KeyUseFlush})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gw.Start(ctx)
	srv := httptest.NewUnstartedServer(gw.Server.Echo)
	srv.Config.BaseContext = gw.Data.BaseContext // as cmd/switchyard serves it
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = gw.Close(cctx)
		cancel()
	})
	e.GW, e.URL = gw, srv.URL
	if err := gw.WaitLoaded(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// Publish publishes the draft and waits until this instance serves it.
func (e *Env) Publish(msg string) int64 {
	e.T.Helper()
	out, err := e.Store.Publish(context.Background(), store.PublishInput{Author: "test", Message: msg, Check: func(s config.Snapshot) config.Result { return config.DryRun(s, gateway.Implemented()) }})
	if err != nil {
		e.T.Fatalf("gatewaytest: publish: %v", err)
	}
	e.WaitVersion(out.Version.Number)
	return out.Version.Number
}

// WaitVersion waits (up to 5 s) until the instance serves version n.
func (e *Env) WaitVersion(n int64) {
	e.T.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if rt := e.GW.Holder.Current(); rt != nil && rt.Version >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.T.Fatalf("gatewaytest: version %d not live after 5s", n)
}

// Builder creates configuration through the store, failing the test on any error.
type Builder struct {
	e *Env
}

// Build returns a Builder.
func (e *Env) Build() *Builder { return &Builder{e: e} }

func (b *Builder) must(err error) {
	b.e.T.Helper()
	if err != nil {
		b.e.T.Fatalf("gatewaytest: %v", err)
	}
}

// Provider adds a provider pointing at the fake vendor (baseURL "" means the
// fake's URL, plus /v1 for OpenAI) with the given keys.
func (b *Builder) Provider(name string, protocol config.Protocol, baseURL string, keys ...string) int64 {
	b.e.T.Helper()
	if baseURL == "" {
		baseURL = b.e.FakeURL
		if protocol == config.ProtocolOpenAI {
			baseURL += "/v1"
		}
	}
	id, err := b.e.Store.CreateProvider(context.Background(), config.Provider{Name: name, Protocol: protocol, BaseURL: baseURL, Enabled: true, TimeoutMS: 60000})
	b.must(err)
	for _, k := range keys {
		_, err := b.e.Store.AddProviderKey(context.Background(), id, "", k)
		b.must(err)
	}
	return id
}

// CloudProvider adds p (an Azure, Bedrock or Vertex AI provider: its api-version,
// region, project or token endpoint set) with the given key secrets; an empty
// BaseURL means the fake vendor's URL.
func (b *Builder) CloudProvider(p config.Provider, keys ...string) int64 {
	b.e.T.Helper()
	if p.BaseURL == "" {
		p.BaseURL = b.e.FakeURL
	}
	p.Enabled = true
	if p.TimeoutMS == 0 {
		p.TimeoutMS = 60000
	}
	id, err := b.e.Store.CreateProvider(context.Background(), p)
	b.must(err)
	for _, k := range keys {
		_, err := b.e.Store.AddProviderKey(context.Background(), id, "", k)
		b.must(err)
	}
	return id
}

// Model adds a logic model with deployments.
func (b *Builder) Model(m config.LogicModel, deps ...config.Deployment) int64 {
	b.e.T.Helper()
	id, err := b.e.Store.CreateLogicModel(context.Background(), m)
	b.must(err)
	for _, d := range deps {
		if !d.Enabled && d.Weight == 0 && d.UpstreamModel != "" {
			d.Enabled = true
		}
		_, err := b.e.Store.CreateDeployment(context.Background(), id, d)
		b.must(err)
	}
	return id
}

// Group adds a route group; tiers maps a tier to its candidates.
func (b *Builder) Group(name string, tiers map[config.TierName][]config.Candidate, timeouts ...map[config.TierName][2]int) {
	b.e.T.Helper()
	ctx := context.Background()
	_, err := b.e.Store.CreateRouteGroup(ctx, config.RouteGroup{Name: name})
	b.must(err)
	snap, _, err := b.e.Store.Draft(ctx)
	b.must(err)
	for _, g := range snap.RouteGroups {
		if g.Name != name {
			continue
		}
		for _, t := range g.Tiers {
			for _, c := range tiers[t.Name] {
				_, err := b.e.Store.AddCandidate(ctx, t.ID, c)
				b.must(err)
			}
			if len(timeouts) > 0 {
				if to, ok := timeouts[0][t.Name]; ok {
					b.must(b.e.Store.UpdateTier(ctx, t.ID, to[0], to[1]))
				}
			}
		}
	}
}

// Caller adds a caller bound to group and returns a fresh API key.
func (b *Builder) Caller(c config.Caller) (id int64, key string) {
	b.e.T.Helper()
	if c.PriorityClass == "" {
		c.PriorityClass = config.ClassInteractive
	}
	c.Enabled = true
	id, err := b.e.Store.CreateCaller(context.Background(), c)
	b.must(err)
	key, _, err = b.e.Store.CreateCallerKey(context.Background(), c.Name, "test", "gatewaytest")
	b.must(err)
	return id, key
}

// Simple builds the common world: provider "fake" (openai protocol, two
// keys), logic model "small" on it, group "default" with small in every
// tier, and a caller "app". It publishes and returns the caller key.
func (e *Env) Simple() string {
	b := e.Build()
	b.Provider("fake", config.ProtocolOpenAI, "", "sk-fake-key-one-0001", "sk-fake-key-two-0002")
	b.Model(config.LogicModel{Code: "small", Kind: config.KindChat}, config.Deployment{Provider: "fake", UpstreamModel: "fake-small", Weight: 100, Enabled: true,
		Prices: config.Prices{InputMicros: config.Unit, OutputMicros: 2 * config.Unit, CachedMicros: config.Unit / 2, Currency: "USD"}, Capabilities: config.Capabilities{Tools: true, Vision: true, Thinking: true}})
	all := []config.Candidate{{LogicModel: "small", Weight: 100}}
	b.Group("default", map[config.TierName][]config.Candidate{config.TierFast: all, config.TierStandard: all, config.TierDeep: all})
	_, key := b.Caller(config.Caller{Name: "app", RouteGroup: "default"})
	e.Publish("simple world")
	return key
}
