package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"switchyard/routing/wire"
)

// Set-based writes: a whole table's rows go to PostgreSQL as one JSON array
// in one statement (INSERT … SELECT FROM jsonb_to_recordset), never row by
// row. A table's write is described by its columns, so adding a column to
// it is one line: its name, its type and where a row keeps its value.

// column is one column of a set-based write.
type column[R any] struct {
	Name  string
	Type  string // PostgreSQL type the JSON value is read as
	Value func(*R) any
}

// rawJSON is a value written into the JSON as it is (for jsonb columns).
type rawJSON string

// rowsJSON renders rows as a JSON array of objects keyed by column name.
func rowsJSON[R any](rows []R, cols []column[R]) (string, error) {
	keys := make([]string, len(cols)) // `"name":`, and a comma before all but the first
	for j, c := range cols {
		keys[j] = strconv.Quote(c.Name) + ":" // column names are plain ASCII, quoted alike in Go and JSON
		if j > 0 {
			keys[j] = "," + keys[j]
		}
	}
	b := make([]byte, 0, 48*len(rows)*len(cols)+2)
	b = append(b, '[')
	for i := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		for j, c := range cols {
			b = append(b, keys[j]...)
			var err error
			if b, err = appendJSONValue(b, c.Value(&rows[i])); err != nil {
				return "", fmt.Errorf("column %s: %w", c.Name, err)
			}
		}
		b = append(b, '}')
	}
	return string(append(b, ']')), nil
}

func appendJSONValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case *int64:
		if v == nil {
			return append(b, "null"...), nil
		}
		return strconv.AppendInt(b, *v, 10), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case string:
		return wire.AppendString(b, v), nil
	case rawJSON:
		if v == "" {
			return append(b, "null"...), nil
		}
		return append(b, v...), nil
	}
	return b, fmt.Errorf("no JSON form for %T (convert it in the column's Value)", v)
}

// colNames is "a, b, c".
func colNames[R any](cols []column[R]) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// recordset is the FROM item reading rows of cols from parameter $1.
func recordset[R any](cols []column[R]) string {
	defs := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = c.Name + " " + c.Type
	}
	return `jsonb_to_recordset($1::jsonb) AS r(` + strings.Join(defs, ", ") + `)`
}

// writeRows writes rows in one statement. With a key (a unique key of the
// table, e.g. "id"), a row whose key exists updates it, and only if a
// column differs; the others are inserted. An unchanged row costs no
// write, no lock, no foreign-key check and no dead tuple (an INSERT … ON
// CONFLICT DO UPDATE … WHERE locks every conflicting row, even those it
// leaves alone: ~0.1 s for 5,000 unchanged deployments). The update never
// changes a unique key (deleteStale and parkNames clear those first), so
// it and the insert cannot collide. Without a key, rows are inserted.
func writeRows[R any](ctx context.Context, tx *sqlx.Tx, table string, cols []column[R], rows []R, key ...string) error {
	if len(rows) == 0 {
		return nil
	}
	data, err := rowsJSON(rows, cols)
	if err != nil {
		return fmt.Errorf("store: %s: %w", table, err)
	}
	names := colNames(cols)
	q := `INSERT INTO ` + table + ` (` + names + `) SELECT ` + names + ` FROM ` + recordset(cols)
	if len(key) > 0 {
		var sets, olds, news, match []string
		for _, c := range cols {
			if slices.Contains(key, c.Name) {
				match = append(match, "t."+c.Name+" = r."+c.Name)
				continue
			}
			sets = append(sets, c.Name+" = r."+c.Name)
			olds = append(olds, "t."+c.Name)
			news = append(news, "r."+c.Name)
		}
		on := strings.Join(match, " AND ")
		q = `WITH r AS MATERIALIZED (SELECT * FROM ` + recordset(cols) + `), changed AS (
			UPDATE ` + table + ` t SET ` + strings.Join(sets, ", ") + ` FROM r WHERE ` + on +
			` AND (` + strings.Join(olds, ", ") + `) IS DISTINCT FROM (` + strings.Join(news, ", ") + `))
			INSERT INTO ` + table + ` (` + names + `) SELECT ` + names + ` FROM r WHERE NOT EXISTS (SELECT FROM ` + table + ` t WHERE ` + on + `)`
	}
	if _, err := tx.ExecContext(ctx, q, data); err != nil {
		return fmt.Errorf("store: write %d %s: %w", len(rows), table, err)
	}
	return nil
}

// deleteStale deletes the rows of table that no row of rows matches on all
// of keys (the id and the columns of the table's other unique keys): rows
// the snapshot no longer has, and rows whose unique key it changes, which
// are then written anew, so no write collides with a row that is about to
// change (a unique index is checked row by row, not at the statement's end).
func deleteStale[R any](ctx context.Context, tx *sqlx.Tx, table string, cols []column[R], rows []R, keys ...string) error {
	var keyCols []column[R]
	var match []string
	for _, c := range cols {
		if slices.Contains(keys, c.Name) {
			keyCols = append(keyCols, c)
			match = append(match, "t."+c.Name+" = r."+c.Name)
		}
	}
	data, err := rowsJSON(rows, keyCols)
	if err != nil {
		return fmt.Errorf("store: %s: %w", table, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` t WHERE NOT EXISTS (SELECT FROM `+recordset(keyCols)+` WHERE `+strings.Join(match, " AND ")+`)`, data); err != nil {
		return fmt.Errorf("store: remove %s not in the snapshot: %w", table, err)
	}
	return nil
}

// parkNames renames, out of the way, every row of table holding a name
// that rows give to another id, so a snapshot that swaps or reuses names
// does not collide with itself (a unique index is checked row by row).
func parkNames[R any](ctx context.Context, tx *sqlx.Tx, table, nameCol string, cols []column[R], rows []R) error {
	if len(rows) == 0 {
		return nil
	}
	var idName []column[R]
	for _, c := range cols {
		if c.Name == "id" || c.Name == nameCol {
			idName = append(idName, c)
		}
	}
	data, err := rowsJSON(rows, idName)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE `+table+` t SET `+nameCol+` = '~replacing~' || t.id FROM `+recordset(idName)+
		` WHERE t.`+nameCol+` = r.`+nameCol+` AND t.id <> r.id`, data)
	if err != nil {
		return fmt.Errorf("store: make room for the names of %s: %w", table, err)
	}
	return nil
}

// deleteOthers deletes the rows of table whose id is not in keep.
func deleteOthers(ctx context.Context, tx *sqlx.Tx, table string, keep []int64) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE id <> ALL($1::bigint[])`, pq.Array(keep)); err != nil {
		return fmt.Errorf("store: remove %s not in the snapshot: %w", table, err)
	}
	return nil
}

// assignIDs gives every zero id in ids a new one from table's sequence.
// The sequence is first moved past every id the rows carry and every id
// the table holds, never backwards, so a new object never receives the id
// of another, and never one an older version gave to an object since
// deleted (a rollback would take the new object for the old one).
func assignIDs(ctx context.Context, tx *sqlx.Tx, table string, ids []*int64) error {
	var top int64
	fresh := 0
	for _, id := range ids {
		top = max(top, *id)
		if *id == 0 {
			fresh++
		}
	}
	seq := `pg_get_serial_sequence('` + table + `', 'id')`
	if _, err := tx.ExecContext(ctx, `SELECT setval(`+seq+`, GREATEST(nextval(`+seq+`), $1, (SELECT coalesce(max(id), 0) FROM `+table+`)))`, top); err != nil {
		return fmt.Errorf("store: %s ids: %w", table, err)
	}
	if fresh == 0 {
		return nil
	}
	var next []int64
	if err := tx.SelectContext(ctx, &next, `SELECT nextval(`+seq+`) FROM generate_series(1, $1)`, fresh); err != nil {
		return fmt.Errorf("store: new %s ids: %w", table, err)
	}
	for _, id := range ids {
		if *id == 0 {
			*id, next = next[0], next[1:]
		}
	}
	return nil
}
