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

	"switchyard/routing/wire"
)

// Name kinds of call_log_names.
const (
	nameCaller     = "caller"
	nameLogicModel = "logic_model"
)

// namesInsert records the callers and logic models of a batch's new rows
// that call_log_names is not known to hold for their days (kind, name,
// first_day, last_day, in key order). A name's row is rewritten only when
// the batch widens its days (a new day, a replay of an old one).
const namesInsert = `
    INSERT INTO call_log_names AS n (kind, name, first_day, last_day)
    SELECT * FROM json_to_recordset($ARG::json) AS x(kind text, name text, first_day date, last_day date)
    ON CONFLICT (kind, name) DO UPDATE SET
        first_day = least(n.first_day, EXCLUDED.first_day),
        last_day = greatest(n.last_day, EXCLUDED.last_day)
    WHERE EXCLUDED.first_day < n.first_day OR EXCLUDED.last_day > n.last_day`

type nameKey struct{ kind, name string }

// dayRange is a span of UTC days, as days since 1970-01-01.
type dayRange struct{ first, last int64 }

func (d dayRange) covers(o dayRange) bool { return d.first <= o.first && o.last <= d.last }

func (d dayRange) union(o dayRange) dayRange {
	return dayRange{min(d.first, o.first), max(d.last, o.last)}
}

// knownNames remembers, per database, the days call_log_names is known to
// hold for each name, so that a batch of names already there (nearly every
// batch: the same callers, the same day) sends none. It learns only from
// committed batches, and rows of call_log_names are never deleted, so it is
// never wrong about a running database (a database restored from a backup
// under a running writer would need a restart).
var knownNames sync.Map // *sql.DB → *nameCache

type nameCache struct {
	mu   sync.Mutex
	days map[nameKey]dayRange
}

func nameCacheOf(db *sql.DB) *nameCache {
	if c, ok := knownNames.Load(db); ok {
		return c.(*nameCache)
	}
	c, _ := knownNames.LoadOrStore(db, &nameCache{days: map[nameKey]dayRange{}})
	return c.(*nameCache)
}

// batchNames collects the names of a batch's new rows with their days
// (reused between batches).
type batchNames struct {
	days    map[nameKey]dayRange
	last    [2]nameKey // the previous row's, to skip the map for runs of one name
	lastDay [2]int64
	keys    []nameKey // the names to record, in key order
}

func newBatchNames() batchNames { return batchNames{days: map[nameKey]dayRange{}} }

func (b *batchNames) reset() {
	clear(b.days)
	b.last = [2]nameKey{}
	b.keys = b.keys[:0]
}

// see notes the caller and logic model of r, a new row.
func (b *batchNames) see(r *Record) {
	day := floorDiv(r.At.Unix(), 86400)
	for i, k := range [2]nameKey{{nameCaller, r.Caller}, {nameLogicModel, r.LogicModel}} {
		if k.name == "" || k == b.last[i] && day == b.lastDay[i] {
			continue
		}
		b.last[i], b.lastDay[i] = k, day
		d := dayRange{day, day}
		if have, ok := b.days[k]; ok {
			if have.covers(d) {
				continue
			}
			d = have.union(d)
		}
		b.days[k] = d
	}
}

// unknown drops the names the cache knows for their days; the others are
// recorded, in key order so that concurrent writers lock their rows in the
// same order.
func (b *batchNames) unknown(c *nameCache) {
	c.mu.Lock()
	for k, d := range b.days {
		if have, ok := c.days[k]; ok && have.covers(d) {
			delete(b.days, k)
			continue
		}
		b.keys = append(b.keys, k)
	}
	c.mu.Unlock()
	slices.SortFunc(b.keys, func(x, y nameKey) int { return cmp.Or(cmp.Compare(x.kind, y.kind), cmp.Compare(x.name, y.name)) })
}

func (b *batchNames) appendJSON(buf []byte) []byte {
	buf = append(buf, '[')
	for i, k := range b.keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		d := b.days[k]
		buf = append(buf, `{"kind":`...)
		buf = wire.AppendString(buf, k.kind)
		buf = appendJSONField(buf, "name", k.name)
		buf = append(buf, `,"first_day":"`...)
		buf = time.Unix(d.first*86400, 0).UTC().AppendFormat(buf, time.DateOnly)
		buf = append(buf, `","last_day":"`...)
		buf = time.Unix(d.last*86400, 0).UTC().AppendFormat(buf, time.DateOnly)
		buf = append(buf, `"}`...)
	}
	return append(buf, ']')
}

// committed teaches the cache the names the batch recorded.
func (b *batchNames) committed(c *nameCache) {
	if len(b.keys) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range b.keys {
		d := b.days[k]
		if have, ok := c.days[k]; ok {
			d = d.union(have)
		}
		c.days[k] = d
	}
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
