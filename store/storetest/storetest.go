// Package storetest gives integration tests their own PostgreSQL database,
// created fresh from the test server and dropped when the test ends. Tests
// never mock PostgreSQL; if it is unreachable they fail.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/lib/pq" // driver

	"switchyard/store"
	"switchyard/store/secrets"
)

// BaseDSN is the test server's connection string (SWITCHYARD_TEST_DATABASE_URL).
func BaseDSN() string {
	if v := os.Getenv("SWITCHYARD_TEST_DATABASE_URL"); v != "" {
		return v
	}
	return "postgres://switchyard:switchyard@127.0.0.1:5432/switchyard_test?sslmode=disable"
}

// NewDatabase creates an empty database and returns its DSN; it is dropped
// after the test ends.
//
// Dropping a database waits for PostgreSQL to flush it (0.2–1 s here), so
// drops run in the background instead of holding up the next test. A test
// binary that exits before its last drops finished leaves those databases
// behind; their names carry the creating process's pid, and the first
// NewDatabase of a later process drops every test database whose process is
// gone.
func NewDatabase(t testing.TB) string {
	t.Helper()
	base := BaseDSN()
	admin := adminDB(t, base)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := fmt.Sprintf("sy_test_%d_%s", os.Getpid(), hex.EncodeToString(b))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("storetest: create database (is PostgreSQL running? `make test` starts it): %v", err)
	}
	t.Cleanup(func() { dropLater(admin, name) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("storetest: parse DSN: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

var (
	adminOnce sync.Once
	admin     *sql.DB
	adminErr  error
	drops     chan string
)

// adminDB is this process's connection to the test server's maintenance
// database, shared by every test; the first call also starts the dropper
// and sweeps databases left behind by processes that are gone.
func adminDB(t testing.TB, base string) *sql.DB {
	adminOnce.Do(func() {
		admin, adminErr = sql.Open("postgres", base)
		if adminErr != nil {
			return
		}
		admin.SetMaxOpenConns(4)
		drops = make(chan string, 1024)
		go func() {
			for name := range drops {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				_, _ = admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
				cancel()
			}
		}()
		go sweepOrphans(admin)
	})
	if adminErr != nil {
		t.Fatalf("storetest: %v", adminErr)
	}
	return admin
}

func dropLater(db *sql.DB, name string) {
	select {
	case drops <- name:
	default: // a full queue: drop now rather than leak
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, _ = db.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
	}
}

// sweepOrphans queues the drop of every test database whose creating
// process no longer runs.
func sweepOrphans(db *sql.DB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'sy\_test\_%'`)
	if err != nil {
		return
	}
	var names []string
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			names = append(names, n)
		}
	}
	rows.Close()
	for _, n := range names {
		if !processAlive(n) {
			dropLater(db, n)
		}
	}
}

// processAlive reports whether the process named in a test database's name
// (sy_test_<pid>_<hex>) still runs. A name without a pid is kept: it may
// belong to a running test of an older checkout.
func processAlive(name string) bool {
	parts := strings.Split(strings.TrimPrefix(name, "sy_test_"), "_")
	if len(parts) != 2 {
		return true
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 {
		return true
	}
	return pidAlive(pid)
}

// TestKey is the secret key tests seal provider keys with.
var TestKey = strings.Repeat("ab", 32)

// New returns a migrated Store on a fresh database, and its DSN.
func New(t testing.TB) (*store.Store, string) {
	t.Helper()
	dsn := NewDatabase(t)
	key, err := secrets.ParseKey(TestKey)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := secrets.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), dsn, sealer)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(); err != nil {
		t.Fatalf("storetest: migrate: %v", err)
	}
	return st, dsn
}

// Must fails the test on err.
func Must[T any](t testing.TB) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(fmt.Errorf("storetest: %w", err))
		}
		return v
	}
}
