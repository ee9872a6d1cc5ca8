package calllog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"
)

// Daily partitions of call_logs are named call_logs_YYYYMMDD and cover one
// UTC day, [00:00, 24:00).
const (
	partitionPrefix  = "call_logs_"
	partitionLayout  = "20060102"
	defaultPartition = "call_logs_default"
)

// call_log_attempts (migration 0013) is partitioned with the same bounds:
// its partition of a day is created and dropped with call_logs' one.
const (
	attemptsPrefix  = "call_log_attempts_"
	attemptsDefault = "call_log_attempts_default"
)

// dayTables are the tables partitioned by day: parent, partition prefix,
// default partition.
var dayTables = [][3]string{
	{"call_logs", partitionPrefix, defaultPartition},
	{"call_log_attempts", attemptsPrefix, attemptsDefault},
}

// PartitionName returns the name of the partition holding time t.
func PartitionName(t time.Time) string {
	return partitionPrefix + t.UTC().Format(partitionLayout)
}

func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// EnsurePartitions creates the daily partitions for the UTC days of now
// through now+ahead days. Existing partitions are left alone, so it is safe
// to run repeatedly (the worker runs it at start and every hour). If rows for
// a day already landed in the default partition, they are moved into the new
// partition in the same transaction that creates it.
func EnsurePartitions(ctx context.Context, db *sql.DB, now time.Time, ahead int) error {
	schema, err := callLogsSchema(ctx, db)
	if err != nil {
		return err
	}
	day := utcDay(now)
	for i := 0; i <= ahead; i++ {
		if err := ensurePartition(ctx, db, schema, day.AddDate(0, 0, i)); err != nil {
			return err
		}
	}
	return nil
}

// ensurePartition creates the day's partition of each day table.
func ensurePartition(ctx context.Context, db *sql.DB, schema string, day time.Time) error {
	for _, t := range dayTables {
		if err := ensureTablePartition(ctx, db, schema, t[0], t[1]+day.UTC().Format(partitionLayout), t[2], day); err != nil {
			return err
		}
	}
	return nil
}

func ensureTablePartition(ctx context.Context, db *sql.DB, schema, table, name, defaultName string, day time.Time) error {
	var exists bool
	if err := db.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, qualify(schema, name)).Scan(&exists); err != nil {
		return fmt.Errorf("calllog: partition %s: %w", name, err)
	}
	if exists {
		return nil
	}
	from, to := day, day.AddDate(0, 0, 1)
	parent, def, part := qualify(schema, table), qualify(schema, defaultName), qualify(schema, name)

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("calllog: partition %s: %w", name, err)
	}
	defer func() { _ = tx.Rollback() }()
	// Creating a partition locks the table exclusively anyway (and scans the
	// default partition); taking the lock first means no row can reach the
	// default partition between moving its rows out and creating the
	// partition. The timeout keeps a long search from stalling ingestion
	// behind the queued lock.
	stmts := []string{
		`SET LOCAL lock_timeout = '5s'`,
		`LOCK TABLE ONLY ` + parent + ` IN ACCESS EXCLUSIVE MODE`,
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("calllog: partition %s: %w", name, err)
		}
	}
	// Another worker may have created it while we waited for the lock.
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, part).Scan(&exists); err != nil {
		return fmt.Errorf("calllog: partition %s: %w", name, err)
	}
	if exists {
		return nil
	}
	var stray bool
	if err := tx.QueryRowContext(ctx,
		`SELECT EXISTS (SELECT 1 FROM `+def+` WHERE at >= $1 AND at < $2)`, from, to).Scan(&stray); err != nil {
		return fmt.Errorf("calllog: partition %s: %w", name, err)
	}
	stmts = nil
	if stray {
		stmts = append(stmts,
			`CREATE TEMP TABLE day_rows_moving (LIKE `+parent+`) ON COMMIT DROP`,
			`WITH moved AS (DELETE FROM `+def+` WHERE at >= `+tsLiteral(from)+` AND at < `+tsLiteral(to)+` RETURNING *)
			 INSERT INTO day_rows_moving SELECT * FROM moved`)
	}
	stmts = append(stmts, `CREATE TABLE `+part+` PARTITION OF `+parent+
		` FOR VALUES FROM (`+tsLiteral(from)+`) TO (`+tsLiteral(to)+`)`)
	if stray {
		stmts = append(stmts, `INSERT INTO `+part+` SELECT * FROM day_rows_moving`)
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("calllog: partition %s: %w", name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("calllog: partition %s: %w", name, err)
	}
	return nil
}

// DropPartitions drops the daily partitions whose whole day is older than
// now-retention, and deletes rows that old from the default partition. It
// returns the names of the dropped partitions. The roll-up tables are kept,
// but for the per-minute outcome_stats beyond OutcomeRetention.
func DropPartitions(ctx context.Context, db *sql.DB, now time.Time, retention time.Duration) (dropped []string, err error) {
	schema, err := callLogsSchema(ctx, db)
	if err != nil {
		return nil, err
	}
	cutoff := now.Add(-retention)
	parts, err := partitions(ctx, db)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		if p.day.AddDate(0, 0, 1).After(cutoff) {
			continue
		}
		if err := dropPartition(ctx, db, schema, p.day); err != nil {
			return dropped, fmt.Errorf("calllog: drop partition %s: %w", p.name, err)
		}
		dropped = append(dropped, p.name)
	}
	for _, t := range dayTables {
		if _, err := db.ExecContext(ctx, `DELETE FROM `+qualify(schema, t[2])+` WHERE at < $1`, cutoff); err != nil {
			return dropped, fmt.Errorf("calllog: trim default partition %s: %w", t[2], err)
		}
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM outcome_stats WHERE minute < $1`, now.Add(-OutcomeRetention)); err != nil {
		return dropped, fmt.Errorf("calllog: trim outcome_stats: %w", err)
	}
	return dropped, nil
}

// OutcomeRetention is how long the per-minute outcome_stats rows are kept:
// the Dashboard's longest range (30 days) and a day.
const OutcomeRetention = 31 * 24 * time.Hour

// dropPartition drops a day's partitions of every day table, together.
// That locks the tables exclusively for a moment; the lock timeout keeps a
// long search from stalling ingestion behind the queued lock (the next run
// retries).
func dropPartition(ctx context.Context, db *sql.DB, schema string, day time.Time) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '5s'`); err != nil {
		return err
	}
	for _, t := range dayTables {
		if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+qualify(schema, t[1]+day.Format(partitionLayout))); err != nil {
			return err
		}
	}
	return tx.Commit()
}

type partition struct {
	name string
	day  time.Time
}

// partitions lists call_logs' daily partitions, oldest first.
func partitions(ctx context.Context, db Queryer) ([]partition, error) {
	rows, err := db.QueryContext(ctx, `
		SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'call_logs'::regclass ORDER BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("calllog: list partitions: %w", err)
	}
	defer rows.Close()
	var parts []partition
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("calllog: list partitions: %w", err)
		}
		day, err := time.Parse(partitionLayout, strings.TrimPrefix(name, partitionPrefix))
		if err != nil || !strings.HasPrefix(name, partitionPrefix) {
			continue // the default partition, or one someone else made
		}
		parts = append(parts, partition{name: name, day: day})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("calllog: list partitions: %w", err)
	}
	return parts, nil
}

// callLogsSchema finds the schema of the call_logs table search_path
// resolves to, so partitions are created next to it.
func callLogsSchema(ctx context.Context, db Queryer) (string, error) {
	var schema sql.NullString
	err := db.QueryRowContext(ctx, `
		SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = to_regclass('call_logs')`).Scan(&schema)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !schema.Valid) {
		return "", errors.New("calllog: table call_logs not found (migration 0002 not applied?)")
	}
	if err != nil {
		return "", fmt.Errorf("calllog: find call_logs: %w", err)
	}
	return schema.String, nil
}

func qualify(schema, name string) string {
	return pq.QuoteIdentifier(schema) + "." + pq.QuoteIdentifier(name)
}

func tsLiteral(t time.Time) string {
	return "'" + t.UTC().Format("2006-01-02 15:04:05") + "+00'"
}
