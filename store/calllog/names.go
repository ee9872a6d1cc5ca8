package calllog

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"
)

// Name kinds of call_log_names.
const (
	nameCaller     = "caller"
	nameLogicModel = "logic_model"
)

// namesStmt records the names of a batch with their days. A name's row is
// rewritten only when the batch widens its days (a new day, a replay of
// an old one), so a busy caller costs one index probe per batch.
const namesStmt = `INSERT INTO call_log_names AS n (kind, name, first_day, last_day)
    SELECT * FROM unnest($1::text[], $2::text[], $3::date[], $4::date[])
    ON CONFLICT (kind, name) DO UPDATE SET
        first_day = least(n.first_day, EXCLUDED.first_day),
        last_day = greatest(n.last_day, EXCLUDED.last_day)
    WHERE EXCLUDED.first_day < n.first_day OR EXCLUDED.last_day > n.last_day`

type nameKey struct{ kind, name string }

type nameDays struct{ first, last time.Time }

// knownNames remembers, per database, the days call_log_names is known to
// hold for each name, so that a batch of names already there (nearly every
// batch: the same callers, the same day) costs no statement. It learns
// only from committed batches, and rows of call_log_names are never
// deleted, so it is never wrong about a running database (a database
// restored from a backup under a running writer would need a restart).
var knownNames sync.Map // *sql.DB → *nameCache

type nameCache struct {
	mu   sync.Mutex
	days map[nameKey]nameDays
}

// storedNames are a batch's names written in its transaction, remembered
// once it commits.
type storedNames struct {
	cache *nameCache
	days  map[nameKey]nameDays
}

func (s storedNames) committed() {
	if s.cache == nil {
		return
	}
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	for k, d := range s.days {
		if have, ok := s.cache.days[k]; ok {
			d.first, d.last = minTime(d.first, have.first), maxTime(d.last, have.last)
		}
		s.cache.days[k] = d
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// storeNames records the callers and logic models of the batch's new rows
// (the keys of its daily roll-ups) that the table is not known to hold for
// those days, in key order so that concurrent writers lock the rows in the
// same order.
func storeNames(ctx context.Context, tx *sql.Tx, db *sql.DB, ru *rollups) (storedNames, error) {
	days := map[nameKey]nameDays{}
	see := func(k nameKey, day time.Time) {
		if k.name == "" {
			return
		}
		d, ok := days[k]
		if !ok {
			days[k] = nameDays{day, day}
			return
		}
		days[k] = nameDays{minTime(d.first, day), maxTime(d.last, day)}
	}
	for k := range ru.costs {
		see(nameKey{nameCaller, k.caller}, k.at)
		see(nameKey{nameLogicModel, k.logicModel}, k.at)
	}
	c, _ := knownNames.LoadOrStore(db, &nameCache{days: map[nameKey]nameDays{}})
	cache := c.(*nameCache)
	cache.mu.Lock()
	for k, d := range days {
		if have, ok := cache.days[k]; ok && !d.first.Before(have.first) && !d.last.After(have.last) {
			delete(days, k)
		}
	}
	cache.mu.Unlock()
	if len(days) == 0 {
		return storedNames{}, nil
	}
	keys := make([]nameKey, 0, len(days))
	for k := range days {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b nameKey) int { return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.name, b.name)) })
	var kinds, names, firsts, lasts []string
	for _, k := range keys {
		d := days[k]
		kinds, names = append(kinds, k.kind), append(names, k.name)
		firsts, lasts = append(firsts, d.first.Format(time.DateOnly)), append(lasts, d.last.Format(time.DateOnly))
	}
	if _, err := tx.ExecContext(ctx, namesStmt, pq.Array(kinds), pq.Array(names), pq.Array(firsts), pq.Array(lasts)); err != nil {
		return storedNames{}, fmt.Errorf("calllog: record names: %w", err)
	}
	return storedNames{cache: cache, days: days}, nil
}

// maxNameMatches bounds the names a partial name is resolved to. Up to
// maxNameBranches of them are searched as one ordered index scan each;
// more than that are common enough for the primary key scan to find a
// page at once. A part matching more than maxNameMatches names is searched
// as a substring, without the name table.
const (
	maxNameBranches = 16
	maxNameMatches  = 1000
)

// matchNames returns the names of kind that contain part (case-insensitive)
// and occur on a UTC day of [from, to) (zero: unbounded); over is set when
// more than maxNameMatches do.
func matchNames(ctx context.Context, db Queryer, kind, part string, from, to time.Time) (names []string, over bool, err error) {
	q := `SELECT name FROM call_log_names WHERE kind = $1 AND name ILIKE $2`
	args := []any{kind, "%" + likeEscape(part) + "%"}
	if !from.IsZero() {
		args = append(args, from.UTC().Format(time.DateOnly))
		q += fmt.Sprintf(" AND last_day >= $%d::date", len(args))
	}
	if !to.IsZero() {
		// to is exclusive: a window ending at midnight does not reach that day.
		args = append(args, to.UTC().Add(-time.Microsecond).Format(time.DateOnly))
		q += fmt.Sprintf(" AND first_day <= $%d::date", len(args))
	}
	q += fmt.Sprintf(" ORDER BY name LIMIT %d", maxNameMatches+1)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("calllog: match %s names: %w", kind, err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, false, fmt.Errorf("calllog: match %s names: %w", kind, err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("calllog: match %s names: %w", kind, err)
	}
	if len(names) > maxNameMatches {
		return nil, true, nil
	}
	return names, false, nil
}

// likeEscape quotes LIKE's wildcards with backslash, LIKE's default escape.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
