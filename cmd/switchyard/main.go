// Command switchyard runs the Switchyard LLM gateway: the operator console
// and the OpenAI-compatible data plane (APP_ROLE=api), the background jobs
// (APP_ROLE=worker), or both (APP_ROLE=all, the default).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/redis/go-redis/v9"

	"switchyard/store"
	"switchyard/store/redis/connect"
	"switchyard/store/rows"
	"switchyard/store/secrets"
	"switchyard/web/gateway"
	"switchyard/web/tracing"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "reset-password" {
		if err := resetPassword(ctx, os.Args[2:], os.Stdin, os.Stdout, os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "switchyard:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "audit" {
		if err := auditCommand(ctx, os.Args[2:], os.Stdout, os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "switchyard:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "switchyard:", err)
		os.Exit(1)
	}
}

func newLogger(c Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, opts))
}

func run(ctx context.Context) error {
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	log := newLogger(cfg)
	setMemoryLimit(log, memlimit.FromCgroup)
	key, err := secrets.ParseKey(cfg.SecretKey)
	if err != nil {
		return err
	}
	sealer, err := secrets.NewSealer(key)
	if err != nil {
		return err
	}
	st, err := store.Connect(cfg.DatabaseURL, sealer)
	if err != nil {
		return err
	}
	st.SetListenURL(cfg.DatabaseListenURL) // LISTEN and migrations bypass a pooler
	defer st.Close()
	start := starter{st: st, cfg: cfg, log: log}
	login, pgErr, err := start.atStart(ctx)
	if err != nil {
		return err
	}

	rdb, err := newRedis(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	opts := gatewayOptions(cfg, st, rdb, sealer, log)
	tracer, err := startTracing(ctx, cfg, log)
	if err != nil {
		return err
	}
	if tracer != nil {
		defer stopTracing(tracer, log)
		opts.Tracer = tracer
	}
	gw, err := gateway.New(opts)
	if err != nil {
		return err
	}
	// Not ready until loaded: the listener opens only once a version (or
	// the cached one) is in place, so a restart has no window of "nothing
	// has been published yet".
	if err := gw.LoadInitial(ctx); err != nil {
		if pgErr != nil {
			return fmt.Errorf("%w (PostgreSQL: %v)", err, pgErr)
		}
		return err
	}
	if pgErr != nil {
		gw.OnPostgresBack = start.whenBack
	}
	gw.Start(ctx)
	return serve(ctx, cfg, gw, log, login)
}

// startTracing starts the span exporter the OTEL_* environment configures;
// nil when tracing is off (the default).
func startTracing(ctx context.Context, cfg Config, log *slog.Logger) (*tracing.Tracer, error) {
	t, err := tracing.FromEnv(ctx, tracing.Options{Propagate: cfg.TracePropagate})
	if err != nil || t == nil {
		return nil, err
	}
	log.Info("tracing on: exporting spans over OTLP", "propagate_to_vendors", cfg.TracePropagate)
	return t, nil
}

// stopTracing flushes the spans not yet exported, within a bound.
func stopTracing(t *tracing.Tracer, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		log.Warn("tracing: spans not flushed at exit", "err", err)
	}
}

// starter finishes starting against PostgreSQL (schema, first admin).
// PostgreSQL may be down at start: an instance that loaded a version before
// serves its last-known-good copy and finishes starting when PostgreSQL
// answers.
type starter struct {
	st  *store.Store
	cfg Config
	log *slog.Logger
}

func (s starter) finish(ctx context.Context) (string, error) {
	schema, err := s.st.Migrate()
	if err != nil {
		return "", err
	}
	s.log.Info("schema ready", "version", schema)
	return bootstrapAdmin(ctx, s.st, s.cfg)
}

// atStart finishes starting when PostgreSQL answers now and returns the
// sign-in line; pgErr says it did not answer (and the start waits for it).
func (s starter) atStart(ctx context.Context) (login string, pgErr, err error) {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	pgErr = s.st.Ping(pctx)
	cancel()
	if pgErr != nil {
		s.log.Error("PostgreSQL is unreachable at start; trying the last-known-good configuration", "err", pgErr)
		return "PostgreSQL is unreachable: the console opens when it answers.", pgErr, nil
	}
	login, err = s.finish(ctx)
	return login, nil, err
}

// whenBack finishes the start once PostgreSQL answers again.
func (s starter) whenBack(ctx context.Context) error {
	msg, err := s.finish(ctx)
	if err == nil {
		s.log.Info("PostgreSQL answers: start finished", "login", msg)
	}
	return err
}

// gatewayOptions hands the settings to the assembly.
func gatewayOptions(cfg Config, st *store.Store, rdb redis.UniversalClient, sealer *secrets.Sealer, log *slog.Logger) gateway.Options {
	loc, _ := time.LoadLocation(cfg.TimeZone)
	return gateway.Options{
		Store: st, Redis: rdb, RedisPrefix: cfg.RedisPrefix, Log: log, SpillDir: cfg.SpillDir, Location: loc, MaxBody: cfg.MaxBody, CountTokens: cfg.CountTokens, BodyBytesInFlight: cfg.BodyBytesInFlight,
		InstanceCap: cfg.InstanceCap, QueueBounds: cfg.QueueBounds, QueuePoll: cfg.QueuePoll, IdemTTL: cfg.IdemTTL, ReloadInterval: cfg.ReloadEvery, RedisTimeout: cfg.RedisTimeout, LimitsExact: cfg.LimitsExact,
		CookieSecure: cfg.CookieSecure, PublicURL: cfg.PublicURL, Env: gateway.Implemented(), Console: cfg.Role != "worker",
		CatalogFile: cfg.CatalogFile, SandboxURL: cfg.SandboxURL, Sealer: sealer, CacheDir: cfg.CacheDir, CacheUnwitnessed: cfg.CacheUnwitnessed, SignIn: cfg.SignIn,
		Worker: gateway.WorkerOptions{RunJobs: cfg.Role != "api", ProbeEvery: cfg.ProbeEvery, AlertEvery: cfg.AlertEvery, ProbeConcurrency: cfg.ProbeConcurrency, LeaseTTL: cfg.LeaseTTL, Retention: cfg.Retention, Health: cfg.Health},
	}
}

// serve listens and serves until ctx ends or the server fails, then shuts
// down.
func serve(ctx context.Context, cfg Config, gw *gateway.Gateway, log *slog.Logger, login string) error {
	var handler http.Handler = gw.Server.Echo
	if cfg.Role == "worker" {
		// A worker serves no console and no data plane: only its health
		// and metrics, for the orchestrator and Prometheus.
		handler = gw.WorkerHandler()
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	if cfg.PprofAddr != "" {
		if err := servePprof(ctx, cfg.PprofAddr, log); err != nil {
			return err
		}
	}
	// Read deadline, idle timeout, per-IP pending and connection caps, and
	// the instance's connection caps.
	httpSrv, gln, conns := cfg.Clients().Serve(ln, handler, log, gw.Metrics.ConnClosed)
	var connStats func() (int, int)
	if conns != nil {
		connStats = conns.Stats
	}
	gw.Metrics.Connections(connStats)
	// Every request's context ends when the shutdown grace cuts the data
	// plane, with nothing to set up per request.
	httpSrv.BaseContext = gw.Data.BaseContext
	// Start-up is over: what it alone read of the binary goes back.
	if n, err := releaseStartupPages(); err != nil {
		log.Warn("start-up pages: kept", "error", err)
	} else {
		log.Debug("start-up pages: released", "bytes", n)
	}
	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(gln) }()
	url := "http://" + ln.Addr().String()
	log.Info("switchyard listening", "console", url, "role", cfg.Role, "instance", gw.Reporter.InstanceID())
	if cfg.Role == "worker" {
		fmt.Fprintf(os.Stderr, "\n  Switchyard worker: health %s/healthz, metrics %s/metrics\n\n", url, url)
	} else {
		fmt.Fprintf(os.Stderr, "\n  Switchyard console: %s\n  %s\n\n", url, login)
	}

	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	return shutdown(gw, httpSrv, cfg, log)
}

// shutdown drains the instance: readiness turns 503 at once, the listener
// closes after the drain delay, in-flight requests get the grace to finish,
// what is still open is cut (streams end with an error event) and every
// call-log row is written or spilled before the process exits.
func shutdown(gw *gateway.Gateway, srv *http.Server, cfg Config, log *slog.Logger) error {
	gw.BeginDrain()
	grace := cfg.ShutdownGrace
	if grace == 0 {
		grace = gateway.DefaultGrace(gw.Holder.Current())
	}
	log.Info("shutting down: readiness is 503, draining", "in_flight", gw.InFlight(), "grace", grace.String(), "drain_delay", cfg.DrainDelay.String())
	time.Sleep(cfg.DrainDelay) // let load balancers see /readyz fail
	start := time.Now()
	// Shutdown closes the listeners and idle connections and waits for
	// active ones; the data plane is drained (and cut) beside it.
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace+10*time.Second)
		defer cancel()
		done <- srv.Shutdown(ctx)
	}()
	gctx, cancel := context.WithTimeout(context.Background(), grace)
	waited, cut := gw.Drain(gctx, 5*time.Second)
	cancel()
	err := <-done
	log.Info("in-flight requests done", "waited_for", waited, "cut_at_grace", cut, "took", time.Since(start).Round(time.Millisecond).String())
	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if cerr := gw.Close(cctx); cerr != nil && err == nil {
		err = cerr
	}
	st := gw.CallLog.Stats()
	log.Info("call log flushed", "written", st.Written, "spilled", st.Spilled, "lost", st.Lost)
	return err
}

// newRedis connects to one node, a Redis Cluster or a Sentinel-managed
// master as the URL says (store/redis/connect), with short, context-bound
// timeouts and no blind retries: a limit script whose reply was lost must not
// be charged twice, and a dead Redis must fail fast so the per-instance
// fallback takes over.
func newRedis(url string) (redis.UniversalClient, error) {
	rdb, err := connect.New(url)
	if err != nil {
		return nil, fmt.Errorf("SWITCHYARD_REDIS_URL: %w", err)
	}
	return rdb, nil
}

// bootstrapAdmin creates the first admin on an empty installation and says
// how to log in.
func bootstrapAdmin(ctx context.Context, st *store.Store, cfg Config) (string, error) {
	n, err := st.CountUsers(ctx)
	if err != nil {
		return "", err
	}
	if n > 0 {
		return existingLogin(ctx, st, cfg)
	}
	pw, generated := cfg.AdminPassword, false
	if pw == "" {
		pw, generated = rows.RandomPassword(), true
	}
	create := st.CreateUser
	if generated {
		// Whoever reads the start message knows it: the admin chooses
		// their own at the first sign-in.
		create = st.CreateUserToChangePassword
	}
	id, err := create(ctx, cfg.AdminUser, pw, store.RoleAdmin)
	if err != nil {
		// Several instances starting at once on an empty database race to
		// create the first admin; the ones that lose find it created.
		if n, cerr := st.CountUsers(ctx); cerr == nil && n > 0 {
			return existingLogin(ctx, st, cfg)
		}
		return "", fmt.Errorf("create the first admin: %w", err)
	}
	if _, err := st.AppendAudit(ctx, rows.AuditEntry{Actor: "switchyard", ActorKind: rows.ActorSystem, Action: rows.AuditFirstAdmin, ObjectKind: "user",
		ObjectID: strconv.FormatInt(id, 10), ObjectName: cfg.AdminUser, Outcome: rows.OutcomeOK}); err != nil {
		return "", fmt.Errorf("record the first admin in the audit trail: %w", err)
	}
	if generated {
		return fmt.Sprintf("Log in as %s with password %s (generated once; you choose your own at the first sign-in; set SWITCHYARD_ADMIN_PASSWORD to choose it beforehand).", cfg.AdminUser, pw), nil
	}
	return fmt.Sprintf("Log in as %s with the password from SWITCHYARD_ADMIN_PASSWORD.", cfg.AdminUser), nil
}

// existingLogin says how to log in to an installation that has users: as
// the first admin with SWITCHYARD_ADMIN_PASSWORD when that still is its
// password, else with the password it was given, and how to reset it.
func existingLogin(ctx context.Context, st *store.Store, cfg Config) (string, error) {
	users, err := st.Users(ctx)
	if err != nil {
		return "", err
	}
	envWorks := false
	if cfg.AdminPassword != "" {
		_, lerr := st.Login(ctx, cfg.AdminUser, cfg.AdminPassword)
		envWorks = lerr == nil
	}
	return loginHint(users, cfg.AdminUser, envWorks, os.Args[0]), nil
}

// loginHint is the start message of an installation with users. self is
// how this binary was run, for the reset command.
func loginHint(users []store.User, adminUser string, envWorks bool, self string) string {
	if self == "" {
		self = "switchyard"
	}
	reset := func(user string) string {
		return "Forgot it? Run `" + self + " reset-password " + user + "` with the same SWITCHYARD_DATABASE_URL: it prints a new one."
	}
	for _, u := range users {
		if u.Username != adminUser || u.Role != store.RoleAdmin {
			continue
		}
		if envWorks {
			return "Log in as " + adminUser + " with the password from SWITCHYARD_ADMIN_PASSWORD."
		}
		return "Log in as " + adminUser + " with the password it was given (printed once when this database was first started, or SWITCHYARD_ADMIN_PASSWORD at that time). " + reset(adminUser)
	}
	var admins []string
	for _, u := range users {
		if u.Role == store.RoleAdmin {
			admins = append(admins, u.Username)
		}
	}
	if len(admins) == 0 {
		return "Log in with an existing console user; none is an admin. " + reset("<user>")
	}
	return "Log in as one of the admins: " + strings.Join(admins, ", ") + ". " + reset(admins[0])
}

// servePprof serves the Go profiler on its own listener until ctx ends
// (SWITCHYARD_PPROF_ADDR, for profiling under load; keep it on loopback:
// profiles show request data and cost CPU while they run).
func servePprof(ctx context.Context, addr string, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("SWITCHYARD_PPROF_ADDR %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	log.Warn("profiler listening (SWITCHYARD_PPROF_ADDR)", "addr", "http://"+ln.Addr().String()+"/debug/pprof/")
	return nil
}
