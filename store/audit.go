package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"switchyard/store/rows"
)

// auditHashVersion starts every row's hashed encoding, so a later change
// of the encoding can be told apart.
const auditHashVersion = "audit-v1"

// AuditHash is a row's hash: hex SHA-256 over the JSON array of the
// encoding's version, the row's time in Unix microseconds, actor, actor
// kind, address, action, object kind, id and name, outcome, status, the
// detail as PostgreSQL prints the jsonb, and the previous row's hash. The
// id is left out: it orders the rows, and the previous hash chains them.
func AuditHash(e rows.AuditEntry, detailText string) string {
	b, _ := json.Marshal([]any{auditHashVersion, e.At.UnixMicro(), e.Actor, string(e.ActorKind), e.Addr, string(e.Action),
		e.ObjectKind, e.ObjectID, e.ObjectName, string(e.Outcome), e.Status, detailText, e.PrevHash})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// AppendAudit adds e to the end of the audit trail and returns it with its
// id, time (now, when e has none), previous hash and hash. Appends lock the
// chain's head row, so they are serialised and the chain is linear.
func (s *Store) AppendAudit(ctx context.Context, e rows.AuditEntry) (rows.AuditEntry, error) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	e.At = e.At.UTC().Truncate(time.Microsecond)
	detail, err := json.Marshal(e.Detail)
	if err != nil {
		return e, fmt.Errorf("store: audit detail: %w", err)
	}
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		var detailText string
		// The detail is hashed as the jsonb column will print it, so a
		// check reading the column back computes the same hash.
		if err := tx.QueryRowxContext(ctx, `SELECT hash, $1::jsonb::text FROM audit_head FOR UPDATE`, string(detail)).Scan(&e.PrevHash, &detailText); err != nil {
			return err
		}
		e.Hash = AuditHash(e, detailText)
		if err := tx.GetContext(ctx, &e.ID, `INSERT INTO audit_log (at, actor, actor_kind, addr, action, object_kind, object_id, object_name, outcome, status, detail, prev_hash, hash)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13) RETURNING id`,
			e.At, e.Actor, string(e.ActorKind), e.Addr, string(e.Action), e.ObjectKind, e.ObjectID, e.ObjectName, string(e.Outcome), e.Status, string(detail), e.PrevHash, e.Hash); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE audit_head SET last_id = $1, hash = $2`, e.ID, e.Hash)
		return err
	})
	if err != nil {
		return e, fmt.Errorf("store: append audit %s: %w", e.Action, err)
	}
	return e, nil
}

// auditRow is a row as read for the page and the check.
type auditRow struct {
	ID         int64     `db:"id"`
	At         time.Time `db:"at"`
	Actor      string    `db:"actor"`
	ActorKind  string    `db:"actor_kind"`
	Addr       string    `db:"addr"`
	Action     string    `db:"action"`
	ObjectKind string    `db:"object_kind"`
	ObjectID   string    `db:"object_id"`
	ObjectName string    `db:"object_name"`
	Outcome    string    `db:"outcome"`
	Status     int       `db:"status"`
	Detail     string    `db:"detail"`
	PrevHash   string    `db:"prev_hash"`
	Hash       string    `db:"hash"`
}

const auditColumns = `id, at, actor, actor_kind, addr, action, object_kind, object_id, object_name, outcome, status, detail::text AS detail, prev_hash, hash`

func (r auditRow) entry() rows.AuditEntry {
	e := rows.AuditEntry{ID: r.ID, At: r.At, Actor: r.Actor, ActorKind: rows.AuditActorKind(r.ActorKind), Addr: r.Addr,
		Action: rows.AuditAction(r.Action), ObjectKind: r.ObjectKind, ObjectID: r.ObjectID, ObjectName: r.ObjectName,
		Outcome: rows.AuditOutcome(r.Outcome), Status: r.Status, PrevHash: r.PrevHash, Hash: r.Hash}
	_ = json.Unmarshal([]byte(r.Detail), &e.Detail)
	return e
}

// AuditLog lists the rows f selects: newest first, or oldest first from
// f.AfterID when f.Oldest (an export's pages).
func (s *Store) AuditLog(ctx context.Context, f rows.AuditFilter) ([]rows.AuditEntry, error) {
	where, args := auditWhere(f)
	order := "id DESC"
	if f.Oldest {
		args = append(args, f.AfterID)
		where = append(where, "id > $"+strconv.Itoa(len(args)))
		order = "id"
	} else if f.BeforeID > 0 {
		args = append(args, f.BeforeID)
		where = append(where, "id < $"+strconv.Itoa(len(args)))
	}
	limit := f.Limit
	if limit <= 0 || limit > 5000 {
		limit = 5000
	}
	q := `SELECT ` + auditColumns + ` FROM audit_log`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY ` + order + ` LIMIT ` + strconv.Itoa(limit)
	var rs []auditRow
	if err := s.db.SelectContext(ctx, &rs, q, args...); err != nil {
		return nil, fmt.Errorf("store: audit log: %w", err)
	}
	out := make([]rows.AuditEntry, len(rs))
	for i, r := range rs {
		out[i] = r.entry()
	}
	return out, nil
}

// auditWhere turns a filter into conditions and their arguments.
func auditWhere(f rows.AuditFilter) ([]string, []any) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	if f.Actor != "" {
		add(`actor = $?`, f.Actor)
	}
	if a := string(f.Action); strings.HasSuffix(a, ".") {
		add(`starts_with(action, $?)`, a)
	} else if a != "" {
		add(`action = $?`, a)
	}
	if f.Object != "" {
		add(`(object_kind = $? OR object_id = $?)`, f.Object)
		cond := where[len(where)-1]
		where = where[:len(where)-1]
		add(`(`+cond+` OR object_name ILIKE '%' || $? || '%' ESCAPE '\')`, likeEscape(f.Object))
	}
	if f.Text != "" {
		add(`(actor || ' ' || addr || ' ' || action || ' ' || object_kind || ' ' || object_id || ' ' || object_name || ' ' || detail::text) ILIKE '%' || $? || '%' ESCAPE '\'`, likeEscape(f.Text))
	}
	if !f.Since.IsZero() {
		add(`at >= $?`, f.Since)
	}
	if !f.Until.IsZero() {
		add(`at < $?`, f.Until)
	}
	return where, args
}

// likeEscape escapes LIKE's wildcards so s matches itself.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// auditCheckBatch is how many rows the check reads at a time.
const auditCheckBatch = 2000

// CheckAudit walks the whole chain, oldest first, and reports the first
// broken link: a row whose fields no longer give its hash (edited), whose
// previous hash is no row's (the row before was deleted or rewritten) or
// another row's elsewhere (reordered), or a last row that is not the one
// the head records (rows cut from the end). progress, when set, is told
// how many rows were checked after each batch.
func (s *Store) CheckAudit(ctx context.Context, progress func(checked int64)) (rows.AuditCheck, error) {
	var res rows.AuditCheck
	var after int64
	for {
		var rs []auditRow
		if err := s.db.SelectContext(ctx, &rs, `SELECT `+auditColumns+` FROM audit_log WHERE id > $1 ORDER BY id LIMIT $2`, after, auditCheckBatch); err != nil {
			return res, fmt.Errorf("store: check audit: %w", err)
		}
		for _, r := range rs {
			if b, err := s.auditLink(ctx, r, res.HeadHash); b != nil || err != nil {
				res.Break = b
				return res, err
			}
			res.Checked++
			res.HeadID, res.HeadHash = r.ID, r.Hash
		}
		if progress != nil {
			progress(res.Checked)
		}
		if len(rs) < auditCheckBatch {
			break
		}
		after = rs[len(rs)-1].ID
	}
	var headID int64
	var headHash string
	if err := s.db.QueryRowContext(ctx, `SELECT last_id, hash FROM audit_head`).Scan(&headID, &headHash); err != nil {
		return res, fmt.Errorf("store: check audit head: %w", err)
	}
	if headHash != res.HeadHash {
		res.Break = &rows.AuditBreak{ID: res.HeadID, Kind: rows.BreakTruncated, Other: headID}
	}
	return res, nil
}

// auditLink checks one row against the hash of the row before it.
func (s *Store) auditLink(ctx context.Context, r auditRow, prev string) (*rows.AuditBreak, error) {
	e := r.entry()
	if AuditHash(e, r.Detail) != r.Hash {
		return &rows.AuditBreak{ID: r.ID, Kind: rows.BreakEdited}, nil
	}
	if r.PrevHash == prev {
		return nil, nil
	}
	var other int64
	err := s.db.QueryRowContext(ctx, `SELECT id FROM audit_log WHERE hash = $1`, r.PrevHash).Scan(&other)
	switch {
	case err == nil:
		return &rows.AuditBreak{ID: r.ID, Kind: rows.BreakReordered, Other: other}, nil
	case errors.Is(err, sql.ErrNoRows):
		return &rows.AuditBreak{ID: r.ID, Kind: rows.BreakDeleted}, nil
	}
	return nil, fmt.Errorf("store: check audit row %d: %w", r.ID, err)
}
