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

	"switchyard/handlers"
	"switchyard/routing/config"
	"switchyard/secrets"
	"switchyard/store"
	"switchyard/web"
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

	sm := web.NewSessions(st, cfg.CookieSecure)
	h := &handlers.Handler{Store: st, Sessions: sm, Log: log, Env: implemented(), BaseURL: cfg.PublicURL}
	srv := web.New(h, &handlers.DataPlane{}, st, sm, log, func() bool { return true }, web.Options{CookieSecure: cfg.CookieSecure})

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	httpSrv := &http.Server{Handler: srv.Echo, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	log.Info("switchyard listening", "console", url, "role", cfg.Role)
	fmt.Fprintf(os.Stderr, "\n  Switchyard console: %s\n  %s\n\n", url, login)

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
	return httpSrv.Shutdown(sctx)
}

// implemented lists the protocols this build has adapters for.
func implemented() config.Env {
	return config.Env{Implemented: map[config.Protocol]config.ProtocolSupport{
		config.ProtocolOpenAI:    {Chat: true, Embeddings: true},
		config.ProtocolAnthropic: {Chat: true},
		config.ProtocolGemini:    {Chat: true, Embeddings: true},
	}}
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
