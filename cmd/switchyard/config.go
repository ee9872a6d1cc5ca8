package main

import (
	"fmt"

	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"switchyard/handlers"
	"switchyard/routing"
	"switchyard/routing/health"
	"switchyard/routing/queue"
	"switchyard/store/redis/loginguard"
	"switchyard/web/guard"
)

// Config is everything the binary reads from its environment. The manual's
// Settings page (static/manual/settings.md) documents every variable.
type Config struct {
	Addr          string        // SWITCHYARD_ADDR
	DatabaseURL   string        // SWITCHYARD_DATABASE_URL
	RedisURL      string        // SWITCHYARD_REDIS_URL
	RedisPrefix   string        // SWITCHYARD_REDIS_PREFIX
	RedisTimeout  time.Duration // SWITCHYARD_REDIS_TIMEOUT
	SecretKey     string        // SWITCHYARD_SECRET_KEY (or SWITCHYARD_SECRET_KEY_FILE)
	AdminUser     string        // SWITCHYARD_ADMIN_USER
	AdminPassword string        // SWITCHYARD_ADMIN_PASSWORD
	PublicURL     string        // SWITCHYARD_PUBLIC_URL
	Role          string        // APP_ROLE: api | worker | all
	CookieSecure  bool          // SWITCHYARD_COOKIE_SECURE
	// TracePropagate (SWITCHYARD_TRACE_PROPAGATE) sends each vendor call's
	// W3C trace context (traceparent) to the vendor when tracing is on.
	TracePropagate bool
	// LimitsExact (SWITCHYARD_LIMITS_EXACT) decides every limited request
	// in Redis instead of from leased slices.
	LimitsExact bool
	LogLevel    string // SWITCHYARD_LOG_LEVEL
	LogFormat   string // SWITCHYARD_LOG_FORMAT: json | text
	SpillDir    string // SWITCHYARD_SPILL_DIR
	CacheDir    string // SWITCHYARD_CONFIG_CACHE_DIR (default: lastgood beside the spill dir)
	// CacheUnwitnessed (SWITCHYARD_CONFIG_CACHE_UNWITNESSED=serve) serves
	// the cached copy at a start when neither PostgreSQL nor Redis can
	// confirm it is current; the default, refuse, keeps a copy put back on
	// disk from bringing back revoked keys.
	CacheUnwitnessed bool
	ShutdownGrace    time.Duration // SWITCHYARD_SHUTDOWN_GRACE (0: the longest tier timeout, capped)
	DrainDelay       time.Duration // SWITCHYARD_DRAIN_DELAY
	TimeZone         string        // SWITCHYARD_TIMEZONE
	Retention        time.Duration
	MaxBody          int64 // SWITCHYARD_MAX_BODY_BYTES
	// CountTokens: SWITCHYARD_COUNT_TOKENS_PER_RPM and
	// SWITCHYARD_COUNT_TOKENS_MAX_BODY_BYTES.
	CountTokens routing.CountTokensLimits
	// BodyBytesInFlight: SWITCHYARD_MAX_BODY_BYTES_IN_FLIGHT.
	BodyBytesInFlight int64
	ReloadEvery       time.Duration // SWITCHYARD_RELOAD_INTERVAL
	InstanceCap       int           // SWITCHYARD_MAX_INFLIGHT
	IdemTTL           time.Duration // SWITCHYARD_IDEMPOTENCY_TTL
	ProbeEvery        time.Duration // SWITCHYARD_PROBE_INTERVAL
	AlertEvery        time.Duration // SWITCHYARD_ALERT_INTERVAL
	Health            health.Settings
	CatalogFile       string // SWITCHYARD_CATALOG_FILE
	SandboxURL        string // SWITCHYARD_SANDBOX_URL
	// Slow and greedy clients (web/guard).
	ReadTimeout     time.Duration // SWITCHYARD_READ_TIMEOUT
	MaxConnsPerIP   int           // SWITCHYARD_MAX_CONNS_PER_IP
	MaxPendingPerIP int           // SWITCHYARD_MAX_PENDING_PER_IP
	// Connection caps of the instance (web/guard Conns).
	MaxConns     int           // SWITCHYARD_MAX_CONNS (default: 3/4 of the fd limit; 0: none)
	MaxIdleConns int           // SWITCHYARD_MAX_IDLE_CONNS (0: 3/4 of MaxConns)
	MaxIdlePerIP int           // SWITCHYARD_MAX_IDLE_CONNS_PER_IP
	IdleTimeout  time.Duration // SWITCHYARD_IDLE_TIMEOUT
	SignIn       handlers.SignInOptions
	// DatabaseListenURL is the direct (not pooled) connection for LISTEN
	// and migrations, when DatabaseURL goes through a pooler such as
	// PgBouncer in transaction mode. Default: DatabaseURL.
	DatabaseListenURL string // SWITCHYARD_DATABASE_LISTEN_URL
	// Probes in flight at once (the worker spreads a round over the
	// interval).
	ProbeConcurrency int // SWITCHYARD_PROBE_CONCURRENCY
	// LeaseTTL is how long a dead worker's job lease outlives it before
	// another worker takes the job over (SWITCHYARD_WORKER_LEASE_TTL).
	LeaseTTL time.Duration
	// PprofAddr, when set, serves net/http/pprof on a listener of its own
	// (never on the console's); off by default.
	PprofAddr string // SWITCHYARD_PPROF_ADDR
	// Queue bounds per class (SWITCHYARD_QUEUE_INTERACTIVE, _NORMAL,
	// _BATCH; 0 there is no queue, here -1) and the re-poll period of
	// shared capacity (SWITCHYARD_QUEUE_POLL).
	QueueBounds [3]int
	QueuePoll   time.Duration
}

// Clients are the slow-client limits of the HTTP server.
func (c Config) Clients() guard.Limits {
	return guard.Limits{ReadTimeout: c.ReadTimeout, ConnsPerIP: c.MaxConnsPerIP, PendingPerIP: c.MaxPendingPerIP,
		MaxConns: c.MaxConns, MaxIdleConns: c.MaxIdleConns, IdlePerIP: c.MaxIdlePerIP, IdleTimeout: c.IdleTimeout}
}

// DefaultBodyBytesInFlight bounds the request-body bytes an instance reads
// at once (SWITCHYARD_MAX_BODY_BYTES_IN_FLIGHT).
const DefaultBodyBytesInFlight = 64 << 20

// DefaultIdlePerIP is how many idle keep-alive connections one client
// address may hold by default (SWITCHYARD_MAX_IDLE_CONNS_PER_IP).
const DefaultIdlePerIP = 256

// defaultMaxConns is SWITCHYARD_MAX_CONNS's default: three quarters of the
// process's file-descriptor limit (the rest is for PostgreSQL, Redis, the
// vendors and files), or 4096 when the limit is unknown or unlimited.
func defaultMaxConns() int64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 || r.Cur > 1<<30 {
		return 4096
	}
	return int64(r.Cur) * 3 / 4
}

// Defaults of the settings the reset-password command reads too.
const (
	defaultDatabaseURL = "postgres://switchyard:switchyard@127.0.0.1:5432/switchyard?sslmode=disable"
	defaultRedisURL    = "redis://127.0.0.1:6379/0"
	defaultRedisPrefix = "sy"
)

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return def
}

func loadConfig() (Config, error) {
	c := Config{
		Addr:          env("SWITCHYARD_ADDR", "127.0.0.1:8080"),
		DatabaseURL:   env("SWITCHYARD_DATABASE_URL", defaultDatabaseURL),
		RedisURL:      env("SWITCHYARD_REDIS_URL", defaultRedisURL),
		RedisPrefix:   env("SWITCHYARD_REDIS_PREFIX", defaultRedisPrefix),
		SecretKey:     env("SWITCHYARD_SECRET_KEY", ""),
		AdminUser:     env("SWITCHYARD_ADMIN_USER", "admin"),
		AdminPassword: os.Getenv("SWITCHYARD_ADMIN_PASSWORD"),
		PublicURL:     env("SWITCHYARD_PUBLIC_URL", ""),
		Role:          env("APP_ROLE", "all"),
		LogLevel:      env("SWITCHYARD_LOG_LEVEL", "info"),
		LogFormat:     env("SWITCHYARD_LOG_FORMAT", "json"),
		SpillDir:      env("SWITCHYARD_SPILL_DIR", "./.dev/spill"),
		CacheDir:      env("SWITCHYARD_CONFIG_CACHE_DIR", ""),
		TimeZone:      env("SWITCHYARD_TIMEZONE", "UTC"),
		CatalogFile:   env("SWITCHYARD_CATALOG_FILE", ""),
		SandboxURL:    env("SWITCHYARD_SANDBOX_URL", ""),
		PprofAddr:     env("SWITCHYARD_PPROF_ADDR", ""),
	}
	c.DatabaseListenURL = env("SWITCHYARD_DATABASE_LISTEN_URL", c.DatabaseURL)
	r := &envReader{}
	r.bool("SWITCHYARD_COOKIE_SECURE", &c.CookieSecure)
	r.bool("SWITCHYARD_TRACE_PROPAGATE", &c.TracePropagate)
	r.bool("SWITCHYARD_LIMITS_EXACT", &c.LimitsExact)
	c.readLimits(r)
	c.readQueues(r)
	c.readTimings(r)
	c.readConnections(r)
	c.readHealth(r)
	parseSignIn(&c, r.int, r.dur, &r.errs)
	c.readSecretKey(r)
	c.checkChoices(r)
	if c.PublicURL == "" {
		c.PublicURL = "http://" + c.Addr
	}
	if len(r.errs) > 0 {
		return c, fmt.Errorf("configuration: %s", strings.Join(r.errs, "; "))
	}
	return c, nil
}

// envReader reads typed settings from the environment, collecting what is
// wrong with them so one start names every bad setting.
type envReader struct {
	errs []string
}

func (r *envReader) fail(msg string) { r.errs = append(r.errs, msg) }

func (r *envReader) bool(name string, dst *bool) {
	if v := env(name, ""); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			r.fail(name + " must be true or false")
		}
		*dst = b
	}
}

func (r *envReader) dur(name string, def time.Duration, dst *time.Duration) {
	*dst = def
	if v := env(name, ""); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			r.fail(name + " must be a positive duration such as 30s or 24h")
		}
		*dst = d
	}
}

func (r *envReader) int(name string, def int64, dst *int64) {
	*dst = def
	if v := env(name, ""); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			r.fail(name + " must be a non-negative integer")
		}
		*dst = n
	}
}

func (r *envReader) frac(name string, def float64, dst *float64) {
	*dst = def
	if v := env(name, ""); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			r.fail(name + " must be a fraction between 0 and 1 (e.g. 0.9)")
		}
		*dst = f
	}
}

// readLimits reads the call-log retention and the request size limits.
func (c *Config) readLimits(r *envReader) {
	var days int64
	r.int("SWITCHYARD_CALLLOG_RETENTION_DAYS", 30, &days)
	c.Retention = time.Duration(days) * 24 * time.Hour
	r.int("SWITCHYARD_MAX_BODY_BYTES", 10<<20, &c.MaxBody)
	r.int("SWITCHYARD_MAX_BODY_BYTES_IN_FLIGHT", DefaultBodyBytesInFlight, &c.BodyBytesInFlight)
	r.int("SWITCHYARD_COUNT_TOKENS_PER_RPM", routing.DefaultCountTokensPerRPM, &c.CountTokens.PerRPM)
	r.int("SWITCHYARD_COUNT_TOKENS_MAX_BODY_BYTES", routing.DefaultCountTokensMaxBody, &c.CountTokens.MaxBody)
	var inflight int64
	r.int("SWITCHYARD_MAX_INFLIGHT", 0, &inflight)
	c.InstanceCap = int(inflight)
}

// readQueues reads the bound of each priority class's queue; 0 is no queue.
func (c *Config) readQueues(r *envReader) {
	for i, q := range []struct {
		name string
		def  int64
	}{{"SWITCHYARD_QUEUE_INTERACTIVE", queue.DefaultInteractive}, {"SWITCHYARD_QUEUE_NORMAL", queue.DefaultNormal}, {"SWITCHYARD_QUEUE_BATCH", queue.DefaultBatch}} {
		var n int64
		r.int(q.name, q.def, &n)
		if n > 1_000_000 {
			r.fail(q.name + " must be at most 1000000")
		}
		c.QueueBounds[i] = int(n)
		if n == 0 {
			c.QueueBounds[i] = -1 // no queue: refuse at once
		}
	}
	r.dur("SWITCHYARD_QUEUE_POLL", queue.DefaultPoll, &c.QueuePoll)
}

// readTimings reads the intervals, timeouts and the background work's pace.
func (c *Config) readTimings(r *envReader) {
	r.dur("SWITCHYARD_RELOAD_INTERVAL", time.Second, &c.ReloadEvery)
	r.dur("SWITCHYARD_SHUTDOWN_GRACE", 0, &c.ShutdownGrace)
	r.dur("SWITCHYARD_REDIS_TIMEOUT", 50*time.Millisecond, &c.RedisTimeout)
	if v := env("SWITCHYARD_DRAIN_DELAY", ""); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			r.fail("SWITCHYARD_DRAIN_DELAY must be a duration such as 0s or 5s")
		}
		c.DrainDelay = d
	}
	r.dur("SWITCHYARD_IDEMPOTENCY_TTL", 24*time.Hour, &c.IdemTTL)
	r.dur("SWITCHYARD_PROBE_INTERVAL", 60*time.Second, &c.ProbeEvery)
	r.dur("SWITCHYARD_ALERT_INTERVAL", 10*time.Second, &c.AlertEvery)
	c.ProbeConcurrency = 8
	if v := env("SWITCHYARD_PROBE_CONCURRENCY", ""); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1024 {
			r.fail("SWITCHYARD_PROBE_CONCURRENCY must be a whole number between 1 and 1024")
		}
		c.ProbeConcurrency = n
	}
	r.dur("SWITCHYARD_WORKER_LEASE_TTL", 30*time.Second, &c.LeaseTTL)
	if c.LeaseTTL < time.Second {
		r.fail("SWITCHYARD_WORKER_LEASE_TTL must be at least 1s")
	}
	r.dur("SWITCHYARD_READ_TIMEOUT", 10*time.Second, &c.ReadTimeout)
}

// readConnections reads the listener's connection limits.
func (c *Config) readConnections(r *envReader) {
	var conns, pending int64
	r.int("SWITCHYARD_MAX_CONNS_PER_IP", 2048, &conns)
	r.int("SWITCHYARD_MAX_PENDING_PER_IP", 64, &pending)
	c.MaxConnsPerIP, c.MaxPendingPerIP = int(conns), int(pending)
	var maxConns, maxIdle, idlePerIP int64
	r.int("SWITCHYARD_MAX_CONNS", defaultMaxConns(), &maxConns)
	r.int("SWITCHYARD_MAX_IDLE_CONNS", 0, &maxIdle)
	r.int("SWITCHYARD_MAX_IDLE_CONNS_PER_IP", DefaultIdlePerIP, &idlePerIP)
	c.MaxConns, c.MaxIdleConns, c.MaxIdlePerIP = int(maxConns), int(maxIdle), int(idlePerIP)
	r.dur("SWITCHYARD_IDLE_TIMEOUT", guard.DefaultIdleTimeout, &c.IdleTimeout)
}

// readHealth reads how deployment health is judged.
func (c *Config) readHealth(r *envReader) {
	r.dur("SWITCHYARD_HEALTH_WINDOW", 5*time.Minute, &c.Health.Window)
	var minSamples int64
	r.int("SWITCHYARD_HEALTH_MIN_SAMPLES", 3, &minSamples)
	c.Health.MinSamples = minSamples
	r.frac("SWITCHYARD_HEALTH_DEGRADED_BELOW", 0.9, &c.Health.DegradedBelow)
	r.frac("SWITCHYARD_HEALTH_DOWN_BELOW", 0.5, &c.Health.DownBelow)
	if err := c.Health.WithDefaults().Validate(); err != nil {
		r.fail("health settings: " + err.Error())
	}
}

// readSecretKey reads the secret key, from its file when it is not set.
func (c *Config) readSecretKey(r *envReader) {
	if c.SecretKey == "" {
		if f := env("SWITCHYARD_SECRET_KEY_FILE", ""); f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				r.fail("SWITCHYARD_SECRET_KEY_FILE: " + err.Error())
			}
			c.SecretKey = strings.TrimSpace(string(b))
		}
	}
	if c.SecretKey == "" {
		r.fail("SWITCHYARD_SECRET_KEY (or SWITCHYARD_SECRET_KEY_FILE) is required: 32 bytes as 64 hex digits; `make run` generates one for local use")
	}
}

// checkChoices checks the settings that are one of a few words or names.
func (c *Config) checkChoices(r *envReader) {
	if strings.ContainsAny(c.RedisPrefix, "{}: ") {
		r.fail("SWITCHYARD_REDIS_PREFIX must not contain braces, colons or spaces")
	}
	switch c.Role {
	case "api", "worker", "all":
	default:
		r.fail("APP_ROLE must be api, worker or all")
	}
	switch env("SWITCHYARD_CONFIG_CACHE_UNWITNESSED", "refuse") {
	case "refuse":
	case "serve":
		c.CacheUnwitnessed = true
	default:
		r.fail("SWITCHYARD_CONFIG_CACHE_UNWITNESSED must be refuse or serve")
	}
	if _, err := time.LoadLocation(c.TimeZone); err != nil {
		r.fail("SWITCHYARD_TIMEZONE: " + err.Error())
	}
}

// parseSignIn reads the sign-in throttle's settings (SWITCHYARD_SIGNIN_*)
// and the trusted reverse proxies.
func parseSignIn(c *Config, parseInt func(string, int64, *int64), parseDur func(string, time.Duration, *time.Duration), errs *[]string) {
	s := &c.SignIn.Settings
	for _, v := range []struct {
		name string
		def  int64
		dst  *int
	}{
		{"SWITCHYARD_SIGNIN_BACKOFF_AFTER", loginguard.DefaultUserBackoffAfter, &s.User.BackoffAfter},
		{"SWITCHYARD_SIGNIN_LOCKOUT_AFTER", loginguard.DefaultUserLockoutAfter, &s.User.LockoutAfter},
		{"SWITCHYARD_SIGNIN_IP_BACKOFF_AFTER", loginguard.DefaultIPBackoffAfter, &s.IP.BackoffAfter},
		{"SWITCHYARD_SIGNIN_IP_LOCKOUT_AFTER", loginguard.DefaultIPLockoutAfter, &s.IP.LockoutAfter},
	} {
		var n int64
		parseInt(v.name, v.def, &n)
		if n < 1 || n > 1_000_000 {
			*errs = append(*errs, v.name+" must be a whole number from 1 to 1000000")
		}
		*v.dst = int(n)
	}
	parseDur("SWITCHYARD_SIGNIN_BACKOFF", loginguard.DefaultBackoffBase, &s.BackoffBase)
	parseDur("SWITCHYARD_SIGNIN_LOCKOUT", loginguard.DefaultLockoutFor, &s.LockoutFor)
	parseDur("SWITCHYARD_SSO_RECHECK_INTERVAL", 5*time.Minute, &c.SignIn.SSORecheck)
	if c.SignIn.SSORecheck < time.Second {
		*errs = append(*errs, "SWITCHYARD_SSO_RECHECK_INTERVAL must be at least 1s")
	}
	if err := s.Validate(); err != nil {
		*errs = append(*errs, "sign-in throttle (SWITCHYARD_SIGNIN_*): "+err.Error())
	}
	p, err := handlers.ParseTrustedProxies(env("SWITCHYARD_TRUSTED_PROXIES", ""))
	if err != nil {
		*errs = append(*errs, "SWITCHYARD_TRUSTED_PROXIES must be comma-separated addresses or CIDR prefixes: "+err.Error())
	}
	c.SignIn.TrustedProxies = p
}
