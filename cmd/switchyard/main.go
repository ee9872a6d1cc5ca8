// Command switchyard runs the Switchyard LLM gateway: the operator console
// and the OpenAI-compatible data plane (APP_ROLE=api), the background jobs
// (APP_ROLE=worker), or both (APP_ROLE=all, the default).
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/cmd/switchyard/gateway"
	"switchyard/store"
	"switchyard/store/secrets"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
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
	key, err := secrets.ParseKey(cfg.SecretKey)
	if err != nil {
		return err
	}
	sealer, err := secrets.NewSealer(key)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, sealer)
	if err != nil {
		return err
	}
	defer st.Close()
	schema, err := st.Migrate()
	if err != nil {
		return err
	}
	log.Info("schema ready", "version", schema)

	login, err := bootstrapAdmin(ctx, st, cfg)
	if err != nil {
		return err
	}

	rdb, err := newRedis(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	loc, _ := time.LoadLocation(cfg.TimeZone)
	gw, err := gateway.New(gateway.Options{
		Store: st, Redis: rdb, RedisPrefix: cfg.RedisPrefix, Log: log, SpillDir: cfg.SpillDir, Location: loc, MaxBody: cfg.MaxBody,
		InstanceCap: cfg.InstanceCap, IdemTTL: cfg.IdemTTL, ReloadInterval: cfg.ReloadEvery,
		CookieSecure: cfg.CookieSecure, PublicURL: cfg.PublicURL, Env: gateway.Implemented(), Console: cfg.Role != "worker",
		CatalogFile: cfg.CatalogFile, SandboxURL: cfg.SandboxURL, SignIn: cfg.SignIn,
		Worker: gateway.WorkerOptions{RunJobs: cfg.Role != "api", ProbeEvery: cfg.ProbeEvery, Retention: cfg.Retention, Health: cfg.Health},
	})
	if err != nil {
		return err
	}
	gw.Start(ctx)
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
	httpSrv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	log.Info("switchyard listening", "console", url, "role", cfg.Role)
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
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = httpSrv.Shutdown(sctx)
	if cerr := gw.Close(sctx); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// newRedis connects with short, context-bound timeouts and no blind retries:
// a limit script whose reply was lost must not be charged twice, and a dead
// Redis must fail fast so the per-instance fallback takes over.
func newRedis(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("SWITCHYARD_REDIS_URL: %w", err)
	}
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1
	opt.DialTimeout = 500 * time.Millisecond
	opt.ReadTimeout = 500 * time.Millisecond
	opt.WriteTimeout = 500 * time.Millisecond
	opt.PoolSize = 128
	return redis.NewClient(opt), nil
}

// bootstrapAdmin creates the first admin on an empty installation and says
// how to log in.
func bootstrapAdmin(ctx context.Context, st *store.Store, cfg Config) (string, error) {
	n, err := st.CountUsers(ctx)
	if err != nil {
		return "", err
	}
	if n > 0 {
		return "Log in with an existing console user (first admin: " + cfg.AdminUser + ").", nil
	}
	pw, generated := cfg.AdminPassword, false
	if pw == "" {
		pw, generated = randomPassword(), true
	}
	if _, err := st.CreateUser(ctx, cfg.AdminUser, pw, store.RoleAdmin); err != nil {
		return "", fmt.Errorf("create the first admin: %w", err)
	}
	if generated {
		return fmt.Sprintf("Log in as %s with password %s (generated once; set SWITCHYARD_ADMIN_PASSWORD to choose it).", cfg.AdminUser, pw), nil
	}
	return fmt.Sprintf("Log in as %s with the password from SWITCHYARD_ADMIN_PASSWORD.", cfg.AdminUser), nil
}

func randomPassword() string {
	const alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	var b strings.Builder
	for i := 0; i < 20; i++ {
		v, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b.WriteByte(alphabet[v.Int64()])
		if i%5 == 4 && i < 19 {
			b.WriteByte('-')
		}
	}
	return b.String()
}
