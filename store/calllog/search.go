package calllog

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"switchyard/routing/record"
)

// Queryer is what the read functions need: *sql.DB, *sql.Tx, *sql.Conn and
// *sqlx.DB all satisfy it.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	// ErrNotFound is returned by Get for an unknown request id.
	ErrNotFound = errors.New("calllog: not found")
	// ErrInvalidFilter is wrapped by Search's error for a filter it cannot
	// run (an unknown status, a malformed cursor).
	ErrInvalidFilter = errors.New("calllog: invalid filter")
)

// Filter selects call logs. Zero fields do not filter. From is inclusive,
// To exclusive.
type Filter struct {
	From, To   time.Time
	Caller     string
	Tier       string
	LogicModel string
	Provider   string
	Status     string
	ErrorClass string
	RequestID  string
	// Endpoint is the front door (record.Call.Endpoint).
	Endpoint string
	// Limit is the page size: default 50, at most 500.
	Limit int
	// Cursor is Page.Next of the previous page; empty for the first page.
	Cursor string
}

// Page is one page of call logs, newest first.
type Page struct {
	Rows []Record
	// Next is the cursor of the following page, empty on the last page.
	Next string
}

const (
	defaultPageSize = 50
	maxPageSize     = 500
)

// MaxTextLen bounds a text filter (and a request id) in bytes. Names in the
// configuration are far shorter; request ids are UUIDs or short caller ids.
const MaxTextLen = 200

// The range of times a filter or cursor may carry: years 1 to 9999, what
// the console's forms can express and well inside PostgreSQL's timestamptz.
var (
	MinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

// ValidText reports whether s can be compared with a text column: valid
// UTF-8 (PostgreSQL refuses anything else), no NUL or other control
// character, at most MaxTextLen bytes.
func ValidText(s string) bool {
	if len(s) > MaxTextLen || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// ValidTime reports whether t lies within [MinTime, MaxTime].
func ValidTime(t time.Time) bool { return !t.Before(MinTime) && !t.After(MaxTime) }

// checkFilter refuses what PostgreSQL would answer with an error rather
// than no rows: text it cannot hold, times it cannot store.
func checkFilter(f Filter) error {
	for _, v := range []struct{ name, v string }{
		{"caller", f.Caller}, {"tier", f.Tier}, {"logic model", f.LogicModel}, {"provider", f.Provider},
		{"status", f.Status}, {"error class", f.ErrorClass}, {"request id", f.RequestID},
		{"endpoint", f.Endpoint},
	} {
		if !ValidText(v.v) {
			return fmt.Errorf("%w: %s must be at most %d characters of text without control characters", ErrInvalidFilter, v.name, MaxTextLen)
		}
	}
	for _, t := range []struct {
		name string
		t    time.Time
	}{{"from", f.From}, {"to", f.To}} {
		if !t.t.IsZero() && !ValidTime(t.t) {
			return fmt.Errorf("%w: %s must be between the years 1 and 9999", ErrInvalidFilter, t.name)
		}
	}
	return nil
}

// Search returns a page of call logs matching f, ordered by (at, request_id)
// descending. Pages are keyset-paginated: the cursor holds the last row's
// (at, request_id), so rows with equal timestamps are neither repeated nor
// skipped, and rows written meanwhile do not shift later pages.
func Search(ctx context.Context, db Queryer, f Filter) (Page, error) {
	q, args, limit, err := searchQuery(f)
	if err != nil {
		return Page{}, err
	}
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return Page{}, fmt.Errorf("calllog: search: %w", err)
	}
	defer rows.Close()
	var p Page
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return Page{}, fmt.Errorf("calllog: search: %w", err)
		}
		p.Rows = append(p.Rows, r)
	}
	if err := rows.Err(); err != nil {
		return Page{}, fmt.Errorf("calllog: search: %w", err)
	}
	if len(p.Rows) > limit {
		p.Rows = p.Rows[:limit]
		last := p.Rows[limit-1]
		p.Next = encodeCursor(last.At, last.RequestID)
	}
	return p, nil
}

// searchQuery builds Search's SQL; it fetches limit+1 rows to learn whether
// there is a next page.
func searchQuery(f Filter) (q string, args []any, limit int, err error) {
	limit = f.Limit
	if limit <= 0 {
		limit = defaultPageSize
	}
	limit = min(limit, maxPageSize)
	if err := checkFilter(f); err != nil {
		return "", nil, 0, err
	}
	if f.Status != "" && !ValidStatus(f.Status) {
		return "", nil, 0, fmt.Errorf("%w: unknown status %q", ErrInvalidFilter, f.Status)
	}

	var where []string
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if !f.From.IsZero() {
		add("at >= ?", f.From)
	}
	if !f.To.IsZero() {
		add("at < ?", f.To)
	}
	for _, eq := range []struct{ col, v string }{
		{"caller", f.Caller}, {"tier", f.Tier}, {"logic_model", f.LogicModel},
		{"provider", f.Provider}, {"status", f.Status}, {"error_class", f.ErrorClass},
		{"request_id", f.RequestID}, {"endpoint", f.Endpoint},
	} {
		if eq.v != "" {
			add(eq.col+" = ?", eq.v)
		}
	}
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return "", nil, 0, err
		}
		// The plain "at <=" lets the planner prune newer partitions; the
		// row comparison is the exact keyset condition.
		args = append(args, at, id)
		where = append(where, fmt.Sprintf("at <= $%d AND (at, request_id) < ($%d, $%d)", len(args)-1, len(args)-1, len(args)))
	}
	q = "SELECT " + columnList + " FROM call_logs"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY at DESC, request_id DESC LIMIT " + strconv.Itoa(limit+1)
	return q, args, limit, nil
}

// The cursor is base64url("<unix microseconds>:<request id>"): opaque to
// callers, exact to PostgreSQL's precision.
func encodeCursor(at time.Time, requestID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + ":" + requestID))
}

func decodeCursor(c string) (time.Time, string, error) {
	malformed := fmt.Errorf("%w: malformed cursor", ErrInvalidFilter)
	if len(c) > 4*MaxTextLen {
		return time.Time{}, "", malformed
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", malformed
	}
	us, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || id == "" || !ValidText(id) {
		return time.Time{}, "", malformed
	}
	at := time.UnixMicro(n).UTC()
	if !ValidTime(at) {
		return time.Time{}, "", malformed
	}
	return at, id, nil
}

// getWindow is how far from the time embedded in a UUIDv7 request id the
// row's at is looked for first. The id is minted when the request arrives,
// so the two are normally within one request's duration.
const getWindow = time.Hour

// Get returns the call log of requestID. at is the row's time if the caller
// knows it (a link from a search result), else zero. Without at, the time
// embedded in a UUIDv7 id narrows the search to the partitions around it;
// any other id (a caller-supplied one) is looked up in every partition.
func Get(ctx context.Context, db Queryer, requestID string, at time.Time) (Record, error) {
	if requestID == "" || !ValidText(requestID) {
		// No stored id is like this: PostgreSQL could not even compare it.
		return Record{}, fmt.Errorf("%w: request %q", ErrNotFound, requestID)
	}
	if !at.IsZero() && !ValidTime(at) {
		at = time.Time{}
	}
	type probe struct {
		cond string
		args []any
	}
	var probes []probe
	if !at.IsZero() {
		probes = append(probes, probe{"at = $2 AND request_id = $1", []any{requestID, at}})
	}
	if t, ok := record.RequestIDTime(requestID); ok {
		probes = append(probes, probe{"request_id = $1 AND at >= $2 AND at < $3",
			[]any{requestID, t.Add(-getWindow), t.Add(getWindow)}})
	}
	probes = append(probes, probe{"request_id = $1", []any{requestID}})

	for _, p := range probes {
		row := db.QueryRowContext(ctx, "SELECT "+columnList+" FROM call_logs WHERE "+p.cond+
			" ORDER BY at DESC LIMIT 1", p.args...)
		r, err := scanRecord(row)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return Record{}, fmt.Errorf("calllog: get %s: %w", requestID, err)
		}
		return r, nil
	}
	return Record{}, fmt.Errorf("%w: request %s", ErrNotFound, requestID)
}
