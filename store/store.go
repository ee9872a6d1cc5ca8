// Package store keeps Switchyard's state in PostgreSQL: the draft
// configuration (one file per table), credentials, console users, sessions,
// admin tokens and published versions.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"switchyard/routing/config"
	"switchyard/store/secrets"
)

// Store is the PostgreSQL store.
type Store struct {
	db        *sqlx.DB
	dsn       string
	listenDSN string // direct connection for LISTEN and migrations; "" means dsn
	sealer    *secrets.Sealer
}

// Open connects to PostgreSQL and checks that it answers.
func Open(ctx context.Context, dsn string, sealer *secrets.Sealer) (*Store, error) {
	s, err := Connect(dsn, sealer)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.db.PingContext(pctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("store: connect to PostgreSQL: %w", err)
	}
	return s, nil
}

// Connect prepares the pool without reaching PostgreSQL: connections are
// made on first use. An instance that starts while PostgreSQL is down uses
// it (see Ping).
//
// The pool keeps no session state, so dsn may point at PgBouncer in
// transaction pooling mode: every query with parameters is sent as one
// Parse/Bind/Execute/Sync round trip (lib/pq's binary_parameters), because
// its default two round trips (prepare, then execute) may land on two
// different server connections behind such a pooler. With it, []byte
// arguments travel in binary format: pass JSON for jsonb columns as string.
// LISTEN and migrations need a session of their own: see SetListenURL.
func Connect(dsn string, sealer *secrets.Sealer) (*Store, error) {
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	cfg.BinaryParameters = true
	conn, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	db := sqlx.NewDb(sql.OpenDB(conn), "postgres")
	db.SetMaxOpenConns(20)
	db.SetMaxIdleConns(10)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return &Store{db: db, dsn: dsn, sealer: sealer}, nil
}

// DB exposes the pool to packages that own their own tables (call logs, sessions).
func (s *Store) DB() *sql.DB { return s.db.DB }

// DSN is the pool's connection string.
func (s *Store) DSN() string { return s.dsn }

// SetListenURL sets the connection string of the direct (not pooled)
// connection that LISTEN and migrations use, since both hold session state
// (a listening session, golang-migrate's advisory lock) that a pooler in
// transaction mode would not keep. "" means the pool's own DSN. Call it
// before Listen or Migrate.
func (s *Store) SetListenURL(dsn string) { s.listenDSN = dsn }

// ListenDSN is the connection string LISTEN and migrations use.
func (s *Store) ListenDSN() string {
	if s.listenDSN != "" {
		return s.listenDSN
	}
	return s.dsn
}

// Close closes the pool.
func (s *Store) Close() error { return s.db.Close() }

// Ping checks that PostgreSQL answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// inTx runs fn in a transaction, committing when it returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// uniqueField turns a unique violation into a per-field validation error.
func uniqueField(err error, field, what string) error {
	var pe *pq.Error
	if errors.As(err, &pe) && pe.Code == "23505" {
		return (config.FieldErrors{field: what + " is already taken"}).Err()
	}
	return err
}

// isFK reports a foreign-key violation.
func isFK(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == "23503"
}

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

func rowsAffected(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// referenced builds a ReferencedError: "cannot delete X: used by a, b and 3 more".
func referenced(what string, users []string) error {
	if len(users) == 0 {
		return nil
	}
	shown := users
	more := ""
	if len(shown) > 5 {
		more = fmt.Sprintf(" and %d more", len(shown)-5)
		shown = shown[:5]
	}
	return &ReferencedError{Message: fmt.Sprintf("cannot delete %s: still used by %s%s", what, strings.Join(shown, ", "), more)}
}
