package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/postgres"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"switchyard/migrations"
)

// ErrUnknownSchema is returned when the database was migrated by a newer
// Switchyard than this binary: serving on it could corrupt data.
var ErrUnknownSchema = errors.New("store: the database schema is newer than this binary knows")

// LatestSchema is the highest migration this binary carries.
func LatestSchema() (uint, error) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		return 0, err
	}
	re := regexp.MustCompile(`^(\d+)_.*\.up\.sql$`)
	var latest uint
	for _, e := range entries {
		if m := re.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.ParseUint(m[1], 10, 32)
			latest = max(latest, uint(n))
		}
	}
	return latest, nil
}

// Migrate applies every pending migration and refuses a schema it does not
// know (newer than LatestSchema, or left dirty by a failed migration).
func (s *Store) Migrate() (uint, error) {
	latest, err := LatestSchema()
	if err != nil {
		return 0, fmt.Errorf("store: read migrations: %w", err)
	}
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return 0, fmt.Errorf("store: migrations source: %w", err)
	}
	// A dedicated session on the direct connection (ListenDSN): the
	// migration lock is a session-level advisory lock, which a pooler in
	// transaction mode would hand to another client's session. Its own
	// handle, too, since closing the driver must not close our pool.
	ctx := context.Background()
	db, err := sql.Open("postgres", s.ListenDSN())
	if err != nil {
		return 0, fmt.Errorf("store: migrations connection: %w", err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("store: migrations connection: %w", err)
	}
	defer conn.Close()
	drv, err := postgres.WithConnection(ctx, conn, &postgres.Config{MigrationsTable: "schema_migrations"})
	if err != nil {
		return 0, fmt.Errorf("store: migrations driver: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "postgres", drv)
	if err != nil {
		return 0, fmt.Errorf("store: migrate: %w", err)
	}
	cur, dirty, err := m.Version()
	switch {
	case errors.Is(err, migrate.ErrNilVersion):
	case err != nil:
		return 0, fmt.Errorf("store: read schema version: %w", err)
	case dirty:
		return cur, fmt.Errorf("%w: migration %d failed half-way (dirty); fix it by hand, then run migrate force", ErrUnknownSchema, cur)
	case cur > latest:
		return cur, fmt.Errorf("%w: database is at %d, this binary knows up to %d", ErrUnknownSchema, cur, latest)
	}
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return 0, fmt.Errorf("store: apply migrations: %w", err)
	}
	return latest, nil
}
