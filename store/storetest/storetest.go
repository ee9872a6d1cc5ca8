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
	"strings"
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
// at the end of the test.
func NewDatabase(t testing.TB) string {
	t.Helper()
	base := BaseDSN()
	admin, err := sql.Open("postgres", base)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() { admin.Close() })
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "sy_test_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("storetest: create database (is PostgreSQL running? `make test` starts it): %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Logf("storetest: drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("storetest: parse DSN: %v", err)
	}
	u.Path = "/" + name
	return u.String()
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
