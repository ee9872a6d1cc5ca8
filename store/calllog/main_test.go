package calllog

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/migrations"

	"github.com/lib/pq"
)

// The tests need a real PostgreSQL; they fail (never skip) without one.
// Every test gets its own schema, named calllog_test_<run>_<n>, with the
// migration applied, so they run beside other packages' tests on the same
// database; TestMain drops this run's schemas at the end.

const defaultTestDSN = "postgres://switchyard:switchyard@127.0.0.1:5432/switchyard_test?sslmode=disable"

var (
	baseDSN   string
	adminDB   *sql.DB
	runID     string
	schemaSeq atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	baseDSN = os.Getenv("SWITCHYARD_TEST_DATABASE_URL")
	if baseDSN == "" {
		baseDSN = defaultTestDSN
	}
	db, err := sql.Open("postgres", baseDSN)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = db.PingContext(ctx)
		cancel()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: calllog tests need PostgreSQL (set SWITCHYARD_TEST_DATABASE_URL): %v\n", err)
		return 1
	}
	adminDB = db
	var b [4]byte
	_, _ = rand.Read(b[:])
	runID = hex.EncodeToString(b[:])

	code := m.Run()

	rows, err := db.Query(`SELECT nspname FROM pg_namespace WHERE nspname LIKE $1`, "calllog_test_"+runID+"_%")
	if err == nil {
		var names []string
		for rows.Next() {
			var n string
			if rows.Scan(&n) == nil {
				names = append(names, n)
			}
		}
		rows.Close()
		for _, n := range names {
			_, _ = db.Exec(`DROP SCHEMA ` + pq.QuoteIdentifier(n) + ` CASCADE`)
		}
	}
	_ = db.Close()
	return code
}

// newTestDB creates a schema with the call-log migration applied and returns
// a pool whose search_path is that schema, and the schema's name.
func newTestDB(t testing.TB) (*sql.DB, string) {
	t.Helper()
	schema := fmt.Sprintf("calllog_test_%s_%d", runID, schemaSeq.Add(1))
	if _, err := adminDB.Exec(`CREATE SCHEMA ` + pq.QuoteIdentifier(schema)); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := adminDB.Exec(`DROP SCHEMA ` + pq.QuoteIdentifier(schema) + ` CASCADE`); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	db := openSchema(t, baseDSN, schema)
	applyMigration(t, db)
	return db, schema
}

// newEmptySchema is newTestDB without any migration applied.
func newEmptySchema(t testing.TB) *sql.DB {
	t.Helper()
	schema := fmt.Sprintf("calllog_test_%s_%d", runID, schemaSeq.Add(1))
	if _, err := adminDB.Exec(`CREATE SCHEMA ` + pq.QuoteIdentifier(schema)); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := adminDB.Exec(`DROP SCHEMA ` + pq.QuoteIdentifier(schema) + ` CASCADE`); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return openSchema(t, baseDSN, schema)
}

func openSchema(t testing.TB, dsn, schema string) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", withSearchPath(t, dsn, schema))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// applyMigration applies every migration, in order, in db's schema: the
// call-log tables are changed by later migrations (0004 money in micros).
func applyMigration(t testing.TB, db *sql.DB) {
	t.Helper()
	sqlText, err := migrationText(func(string) bool { return true })
	if err != nil {
		t.Fatalf("read migrations: %v", err)
	}
	if _, err := db.Exec(sqlText); err != nil {
		t.Fatalf("apply migrations: %v", err)
	}
}

// migrationText is the up migrations whose file names pass keep, in order,
// as one text.
func migrationText(keep func(name string) bool) (string, error) {
	names, err := fs.Glob(migrations.FS, "*.up.sql")
	if err != nil {
		return "", err
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		if !keep(n) {
			continue
		}
		text, err := fs.ReadFile(migrations.FS, n)
		if err != nil {
			return "", err
		}
		b.Write(text)
		b.WriteString("\n")
	}
	return b.String(), nil
}

// withSearchPath returns dsn with search_path set (lib/pq passes unknown
// parameters to the server as run-time parameters).
func withSearchPath(t testing.TB, dsn, schema string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return dsn + " search_path=" + schema
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// withHost returns dsn pointing at addr instead of its host and port.
func withHost(t testing.TB, dsn, addr string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		t.Fatalf("test DSN must be a URL to reroute it: %q", dsn)
	}
	u.Host = addr
	return u.String()
}

func dsnHostPort(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		t.Fatalf("test DSN must be a URL: %q", dsn)
	}
	host := u.Host
	if !strings.Contains(host, ":") {
		host += ":5432"
	}
	return host
}

// tcpProxy forwards connections to PostgreSQL and can be switched off (the
// port refuses connections and open ones are cut) and on again, on the same
// port, to play an outage.
type tcpProxy struct {
	t      testing.TB
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newProxy(t testing.TB, target string) *tcpProxy {
	p := &tcpProxy{t: t, target: target, addr: "127.0.0.1:0", conns: map[net.Conn]struct{}{}}
	p.up()
	t.Cleanup(func() {
		p.down()
		p.wg.Wait()
	})
	return p
}

func (p *tcpProxy) up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return
	}
	var ln net.Listener
	var err error
	for range 50 { // the port may linger briefly after down
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatalf("proxy listen: %v", err)
	}
	p.ln, p.addr = ln, ln.Addr().String()
	p.wg.Add(1)
	go p.accept(ln)
}

func (p *tcpProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

func (p *tcpProxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.ln != ln { // switched off meanwhile
			p.mu.Unlock()
			_ = c.Close()
			_ = u.Close()
			return
		}
		p.conns[c], p.conns[u] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

func (p *tcpProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func countRows(t testing.TB, db *sql.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("count %q: %v", query, err)
	}
	return n
}

func mustClose(t testing.TB, w *Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("close writer: %v", err)
	}
}
