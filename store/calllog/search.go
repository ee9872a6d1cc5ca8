package calllog

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lib/pq"

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

// FilterError is a filter the call log cannot run; Reason says why, in
// words for the operator who typed it. It is ErrInvalidFilter to errors.Is.
type FilterError struct {
	Reason string
}

func (e *FilterError) Error() string { return ErrInvalidFilter.Error() + ": " + e.Reason }

// Is makes every FilterError ErrInvalidFilter.
func (e *FilterError) Is(target error) bool { return target == ErrInvalidFilter }

func invalidFilter(format string, args ...any) error {
	return &FilterError{Reason: fmt.Sprintf(format, args...)}
}

// Filter selects call logs. Zero fields do not filter; set fields must all
// match. From is inclusive, To exclusive.
//
// Caller, LogicModel, RequestID and Tier are exact. CallerPart and
// LogicModelPart match every name that contains them, case-insensitively.
// RequestIDPart matches a request id equal to it, starting with it or
// ending with it (the tail the console's list shows; a leading "…" is
// ignored); shorter than MinIDPart it must be the whole id.
//
// Provider, Deployment, Key (a key fingerprint) and ErrorClass match a call
// when any of its attempts does — the failed ones before a failover
// included — or its own final columns do. Each filter matches on its own:
// provider X with class auth finds a call with any attempt on X and any
// auth failure, not necessarily the same attempt.
type Filter struct {
	From, To       time.Time
	Caller         string
	CallerPart     string
	Tier           string
	LogicModel     string
	LogicModelPart string
	Provider       string
	Deployment     int64
	Key            string
	Status         string
	ErrorClass     string
	RequestID      string
	RequestIDPart  string
	// Endpoint is the front door (record.Call.Endpoint).
	Endpoint string
	// DroppedField matches a call whose vendor did not get that request
	// field (one of record.Call.DroppedFields, exactly).
	DroppedField string
	// HTTPStatus is the status the caller was answered (100–599); 0 does
	// not filter.
	HTTPStatus int
	// ErrorCode is the error code the caller got (record.Call.ErrorCode,
	// e.g. no_available_model), exactly.
	ErrorCode string
	// PresentedKey is the fingerprint of the caller key a request
	// presented (record.Call.PresentedKey), exactly.
	PresentedKey string
	// Limit is the page size: default 50, at most 500.
	Limit int
	// Cursor is Page.Next of the previous page; empty for the first page.
	Cursor string
}

// MinIDPart is the shortest part of a request id searched as a prefix or
// suffix; a shorter one matches only a whole id.
const MinIDPart = 4

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

// ValidHTTPStatus reports whether n is an HTTP status code (100–599).
func ValidHTTPStatus(n int) bool { return n >= 100 && n <= 599 }

// ValidTime reports whether t lies within [MinTime, MaxTime].
func ValidTime(t time.Time) bool { return !t.Before(MinTime) && !t.After(MaxTime) }

// checkFilter refuses what PostgreSQL would answer with an error rather
// than no rows: text it cannot hold, times it cannot store.
func checkFilter(f Filter) error {
	for _, v := range []struct{ name, v string }{
		{"caller", f.Caller}, {"tier", f.Tier}, {"logic model", f.LogicModel}, {"provider", f.Provider},
		{"status", f.Status}, {"error class", f.ErrorClass}, {"request id", f.RequestID},
		{"endpoint", f.Endpoint}, {"dropped field", f.DroppedField},
		{"caller", f.CallerPart}, {"logic model", f.LogicModelPart}, {"request id", f.RequestIDPart}, {"key", f.Key},
		{"error code", f.ErrorCode}, {"caller key", f.PresentedKey},
	} {
		if !ValidText(v.v) {
			return invalidFilter("%s must be at most %d characters of text without control characters", v.name, MaxTextLen)
		}
	}
	if f.Deployment < 0 {
		return invalidFilter("deployment must be a deployment id")
	}
	if f.HTTPStatus != 0 && !ValidHTTPStatus(f.HTTPStatus) {
		return invalidFilter("HTTP status must be a number from 100 to 599")
	}
	for _, t := range []struct {
		name string
		t    time.Time
	}{{"from", f.From}, {"to", f.To}} {
		if !t.t.IsZero() && !ValidTime(t.t) {
			return invalidFilter("%s must be between the years 1 and 9999", t.name)
		}
	}
	return nil
}

// Search returns a page of call logs matching f, ordered by (at, request_id)
// descending. Pages are keyset-paginated: the cursor holds the last row's
// (at, request_id), so rows with equal timestamps are neither repeated nor
// skipped, and rows written meanwhile do not shift later pages.
func Search(ctx context.Context, db Queryer, f Filter) (Page, error) {
	sq, err := buildSearch(ctx, db, f)
	if err != nil || sq.q == "" {
		return Page{}, err
	}
	var p Page
	err = sq.run(ctx, db, func(db Queryer) error {
		rows, err := db.QueryContext(ctx, sq.q, sq.args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRecord(rows)
			if err != nil {
				return err
			}
			p.Rows = append(p.Rows, r)
		}
		return rows.Err()
	})
	if err != nil {
		return Page{}, fmt.Errorf("calllog: search: %w", err)
	}
	if limit := sq.limit; len(p.Rows) > limit {
		p.Rows = p.Rows[:limit]
		last := p.Rows[limit-1]
		p.Next = encodeCursor(last.At, last.RequestID)
	}
	return p, nil
}

// searchSQL is one search as SQL: the query, its arguments and page size
// (it fetches limit+1 rows to learn whether there is a next page); q is ""
// when no row can match (a partial name no call log holds).
type searchSQL struct {
	q     string
	args  []any
	limit int
	// serial: run without parallel workers. The attempt branch's planner
	// estimate for a rare value is a few rows, which it then fetches with
	// a parallel bitmap scan; starting the workers takes longer (tens of
	// milliseconds, more on a busy machine) than the scan of a page.
	serial bool
}

// run calls fn with db, or for a serial search with a read-only
// transaction on db that forbids parallel workers (SET LOCAL, so it holds
// for that transaction only, also through PgBouncer in transaction mode).
// A db that cannot begin one (already a transaction) is used as it is.
func (sq searchSQL) run(ctx context.Context, db Queryer, fn func(Queryer) error) error {
	b, ok := db.(interface {
		BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
	})
	if !sq.serial || !ok {
		return fn(db)
	}
	tx, err := b.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SET LOCAL max_parallel_workers_per_gather = 0`); err != nil {
		return err
	}
	return fn(tx)
}

// buildSearch checks f, resolves its partial names and builds Search's SQL.
func buildSearch(ctx context.Context, db Queryer, f Filter) (searchSQL, error) {
	if err := checkFilter(f); err != nil {
		return searchSQL{}, err
	}
	// What searchQuery would refuse is refused before any name is looked up.
	if f.Status != "" && !ValidStatus(f.Status) {
		return searchSQL{}, invalidFilter("unknown status %q", f.Status)
	}
	if f.Cursor != "" {
		if _, _, err := decodeCursor(f.Cursor); err != nil {
			return searchSQL{}, err
		}
	}
	var names resolvedNames
	for _, n := range []struct {
		kind, part string
		to         *nameMatch
	}{{nameCaller, f.CallerPart, &names.callers}, {nameLogicModel, f.LogicModelPart, &names.models}} {
		if n.part == "" {
			continue
		}
		found, over, err := matchNames(ctx, db, n.kind, n.part, f.From, f.To)
		if err != nil {
			return searchSQL{}, err
		}
		if !over && len(found) == 0 {
			return searchSQL{}, nil
		}
		*n.to = nameMatch{part: n.part, names: found, over: over}
	}
	return searchQuery(f, names)
}

// nameMatch is a partial name resolved against call_log_names: the exact
// names containing it, or over when there are too many to list.
type nameMatch struct {
	part  string
	names []string
	over  bool
}

type resolvedNames struct{ callers, models nameMatch }

// dim is one filter that ordered index scans can find: values of a final
// column, and for the attempt filters (kind set) the call_log_attempts
// rows of that kind holding the one value.
type dim struct {
	col   string
	kind  string   // the call_log_attempts kind, "" for a name filter
	value string   // the value of an attempt filter, as call_log_attempts holds it
	final any      // the value of an attempt filter, as the column holds it
	names []string // the values of a name filter
}

// branching: the filter needs more than one ordered index scan.
func (d dim) branching() bool { return len(d.names) > 1 || d.kind != "" }

// searchQuery builds Search's SQL.
//
// Every page is ordered by (at, request_id) descending and each filterable
// column has an index ending in (at, request_id), so a filter on one
// value of one column is an ordered index scan that stops after a page. A
// filter on several values (a partial name resolved to its names) or on
// any attempt (the final column or an earlier attempt) is not one such
// scan: the most selective of those filters drives the search as branches
// — a scan per name (one lateral subquery), or the final column's scan
// and the scan of call_log_attempts' primary key (kind, value, at,
// request_id), which is ordered the same way — each fetching a page, and
// the branches are merged (a row found by two counted once). Every other
// filter applies to every branch.
func searchQuery(f Filter, names resolvedNames) (searchSQL, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = defaultPageSize
	}
	limit = min(limit, maxPageSize)
	if err := checkFilter(f); err != nil {
		return searchSQL{}, err
	}
	if f.Status != "" && !ValidStatus(f.Status) {
		return searchSQL{}, invalidFilter("unknown status %q", f.Status)
	}
	b := &searchBuilder{page: " LIMIT " + strconv.Itoa(limit+1)}
	if err := b.bound(f); err != nil {
		return searchSQL{}, err
	}
	b.where = b.keys("")
	b.addColumns(f)
	b.addDims(f, names)
	driver := b.driver()
	for i, d := range b.dims {
		if i != driver {
			b.where = append(b.where, dimCond(d, b.arg))
		}
	}
	if driver < 0 {
		return searchSQL{q: b.selectWhere(b.where) + searchOrder + b.page, args: b.args, limit: limit}, nil
	}
	d := b.dims[driver]
	q := "SELECT DISTINCT ON (at, request_id) " + columnList + " FROM (" + strings.Join(b.branches(d), " UNION ALL ") + ") u" + searchOrder + b.page
	return searchSQL{q: q, args: b.args, limit: limit, serial: d.kind != ""}, nil
}

// searchOrder is the order of every scan: newest first, the key breaking
// ties.
const searchOrder = " ORDER BY at DESC, request_id DESC"

// searchBuilder gathers a search's arguments and conditions.
type searchBuilder struct {
	args []any
	// The time range and the cursor, as argument placeholders ("" for none).
	fromArg, toArg, curAt, curID string
	where                        []string
	// dims are the filters index scans can find, most selective first.
	dims     []dim
	idSearch bool // a request id (or part of one) is searched
	page     string
}

// arg adds an argument and returns its placeholder.
func (b *searchBuilder) arg(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// bound takes the time range and the cursor, which bound every scan,
// call_log_attempts' too.
func (b *searchBuilder) bound(f Filter) error {
	if !f.From.IsZero() {
		b.fromArg = b.arg(f.From)
	}
	if !f.To.IsZero() {
		b.toArg = b.arg(f.To)
	}
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return err
		}
		b.curAt, b.curID = b.arg(at), b.arg(id)
	}
	return nil
}

// keys are the time range and cursor conditions on the columns at and
// request_id of the table prefix names.
func (b *searchBuilder) keys(prefix string) []string {
	var c []string
	if b.fromArg != "" {
		c = append(c, prefix+"at >= "+b.fromArg)
	}
	if b.toArg != "" {
		c = append(c, prefix+"at < "+b.toArg)
	}
	if b.curAt != "" {
		// The plain "at <=" lets the planner prune newer partitions;
		// the row comparison is the exact keyset condition.
		c = append(c, prefix+"at <= "+b.curAt+" AND ("+prefix+"at, "+prefix+"request_id) < ("+b.curAt+", "+b.curID+")")
	}
	return c
}

// addColumns adds the conditions on call_logs' own columns.
func (b *searchBuilder) addColumns(f Filter) {
	for _, eq := range []struct{ col, v string }{
		{"caller", f.Caller}, {"tier", f.Tier}, {"logic_model", f.LogicModel},
		{"status", f.Status}, {"request_id", f.RequestID}, {"endpoint", f.Endpoint},
		{"error_code", f.ErrorCode}, {"presented_key", f.PresentedKey},
	} {
		if eq.v != "" {
			b.where = append(b.where, eq.col+" = "+b.arg(eq.v))
		}
	}
	if f.HTTPStatus != 0 {
		b.where = append(b.where, "http_status = "+b.arg(f.HTTPStatus))
	}
	if f.DroppedField != "" {
		// @> is strict, so the planner knows dropped_fields is not null
		// and walks the partial index call_logs_dropped (the few rows
		// that dropped anything) newest first, stopping after a page.
		b.where = append(b.where, "dropped_fields @> ARRAY["+b.arg(f.DroppedField)+"::text]")
	}
	b.idSearch = f.RequestID != ""
	if part := idPart(f.RequestIDPart); part != "" {
		b.idSearch = true
		if len(part) < MinIDPart {
			b.where = append(b.where, "request_id = "+b.arg(part))
		} else {
			// Both LIKEs are index range scans: request_id and its
			// reverse are COLLATE "C" (migration 0013).
			b.where = append(b.where, "(request_id LIKE "+b.arg(likeEscape(part)+"%")+" OR reverse(request_id) LIKE "+
				b.arg(likeEscape(reverseRunes(part))+"%")+")")
		}
	}
}

// addDims adds the filters index scans can find, most selective first:
// error classes are rare, a key serves a share of one provider, ...
func (b *searchBuilder) addDims(f Filter, names resolvedNames) {
	if f.ErrorClass != "" {
		b.dims = append(b.dims, dim{col: "error_class", kind: attemptClass, value: f.ErrorClass, final: f.ErrorClass})
	}
	if f.Key != "" {
		b.dims = append(b.dims, dim{col: "key_fingerprint", kind: attemptKey, value: f.Key, final: f.Key})
	}
	if f.Deployment != 0 {
		b.dims = append(b.dims, dim{col: "deployment_id", kind: attemptDeployment, value: strconv.FormatInt(f.Deployment, 10), final: f.Deployment})
	}
	for _, nm := range []struct {
		col string
		m   nameMatch
	}{{"caller", names.callers}, {"logic_model", names.models}} {
		switch {
		case nm.m.part == "":
		case nm.m.over:
			b.where = append(b.where, nm.col+" ILIKE "+b.arg("%"+likeEscape(nm.m.part)+"%"))
		case len(nm.m.names) > maxNameBranches:
			// So many names are common: the primary key finds a page.
			b.where = append(b.where, nm.col+" = ANY("+b.arg(pq.StringArray(nm.m.names))+"::text[])")
		default:
			b.dims = append(b.dims, dim{col: nm.col, names: nm.m.names})
		}
	}
	if f.Provider != "" {
		b.dims = append(b.dims, dim{col: "provider", kind: attemptProvider, value: f.Provider, final: f.Provider})
	}
}

// driver is the index of the dim whose scans drive the search, -1 for a
// plain scan of call_logs.
func (b *searchBuilder) driver() int {
	if b.idSearch { // a request id is selective: one scan finds it
		return -1
	}
	for i, d := range b.dims {
		if d.branching() {
			return i
		}
	}
	return -1
}

func (b *searchBuilder) selectWhere(conds []string) string {
	q := "SELECT " + columnList + " FROM call_logs"
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	return q
}

// branches are the scans the driving dim d is searched by.
func (b *searchBuilder) branches(d dim) []string {
	where, order, page := b.where, searchOrder, b.page
	if d.kind == "" {
		// One scan per name, planned once: a lateral subquery run for
		// each name of the list (planning a branch per name costs more
		// than running them, with a partition each day).
		return []string{"(SELECT b.* FROM unnest(" + b.arg(pq.StringArray(d.names)) + "::text[]) AS v(val) CROSS JOIN LATERAL (" +
			b.selectWhere(append(slices.Clip(where), d.col+" = v.val")) + order + page + ") b)"}
	}
	// The final column's scan, and call_log_attempts' scan with each
	// row's call looked up by its key. The attempt scan is a subquery
	// of its own (OFFSET 0 keeps it one) and the lookup a LATERAL
	// with LIMIT 1: so the planner sees one call per attempt row and
	// walks the ordered scan until a page matches. Joined plainly, it
	// estimates the join on (at, request_id) at one row in all — it
	// does not know the key is unique — and sorts every attempt row
	// of the value first (seconds for a common one).
	final := "(" + b.selectWhere(append(slices.Clip(where), d.col+" = "+b.arg(d.final))) + order + page + ")"
	attempts := "(SELECT c.* FROM (SELECT at, request_id FROM call_log_attempts WHERE " +
		strings.Join(append([]string{"kind = " + b.arg(d.kind), "value = " + b.arg(d.value)}, b.keys("")...), " AND ") +
		order + " OFFSET 0) a CROSS JOIN LATERAL (" +
		b.selectWhere(append([]string{"at = a.at", "request_id = a.request_id"}, where...)) + " LIMIT 1) c" +
		" ORDER BY a.at DESC, a.request_id DESC" + page + ")"
	return []string{final, attempts}
}

// dimCond is d as one condition on a call_logs row: its final column
// holds a value, or one of its attempts did.
func dimCond(d dim, arg func(any) string) string {
	if d.kind == "" {
		if len(d.names) == 1 {
			return d.col + " = " + arg(d.names[0])
		}
		return d.col + " = ANY(" + arg(pq.StringArray(d.names)) + "::text[])"
	}
	return "(" + d.col + " = " + arg(d.final) + " OR EXISTS (SELECT 1 FROM call_log_attempts x WHERE x.kind = " + arg(d.kind) +
		" AND x.value = " + arg(d.value) + " AND x.at = call_logs.at AND x.request_id = call_logs.request_id))"
}

// idPart is a request-id part as the list shows it: without a leading
// ellipsis.
func idPart(s string) string {
	s = strings.TrimSpace(s)
	for _, p := range []string{"…", "..."} {
		s = strings.TrimPrefix(s, p)
	}
	return strings.TrimSpace(s)
}

func reverseRunes(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

// The cursor is base64url("<unix microseconds>:<request id>"): opaque to
// callers, exact to PostgreSQL's precision.
func encodeCursor(at time.Time, requestID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + ":" + requestID))
}

func decodeCursor(c string) (time.Time, string, error) {
	malformed := invalidFilter("malformed cursor")
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
