package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/live"
	"switchyard/routing/record"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
)

// pooledStore opens a Store through a PgBouncer in transaction pooling
// mode, with LISTEN and migrations on the direct connection, and migrates.
func pooledStore(t *testing.T) (st *store.Store, pooled, direct string) {
	t.Helper()
	direct = storetest.NewDatabase(t)
	pooled = storetest.PgBouncer(t, direct)
	key, err := secrets.ParseKey(storetest.TestKey)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := secrets.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	st, err = store.Open(context.Background(), pooled, sealer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	st.SetListenURL(direct)
	if _, err := st.Migrate(); err != nil {
		t.Fatalf("migrate on the direct connection: %v", err)
	}
	return st, pooled, direct
}

// TestPgBouncerSharesBackends guards the test setup itself: two client
// connections that never overlap run on the same server backend, which only
// transaction (or statement) pooling does. Without it the other PgBouncer
// tests would pass on session pooling and prove nothing.
func TestPgBouncerSharesBackends(t *testing.T) {
	_, pooled, _ := pooledStore(t)
	db, err := sql.Open("postgres", pooled)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	a, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var pidA, pidB int
	if err := a.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pidA); err != nil {
		t.Fatal(err)
	}
	if err := b.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pidB); err != nil {
		t.Fatal(err)
	}
	if pidA != pidB {
		t.Fatalf("two idle clients ran on backends %d and %d: the pooler is not in transaction mode", pidA, pidB)
	}
}

// TestStoreThroughPgBouncer runs the console's and data plane's store work
// through a PgBouncer in transaction pooling mode, from many goroutines at
// once so that clients take turns on the same few backends: draft edits
// (including jsonb columns), publishing with NOTIFY heard on the direct
// connection, versions, callers' keys, console sessions, admin tokens, the
// call-log partitions, writer and search. Anything that relied on session
// state (a statement prepared in one round trip and executed in the next,
// a session setting, a session lock) fails here.
func TestStoreThroughPgBouncer(t *testing.T) {
	st, _, _ := pooledStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	notes := st.Listen(lctx, slog.New(slog.NewTextHandler(io.Discard, nil)))

	s := seed(t, st)
	// jsonb columns written with parameters: breaker settings, headers.
	if err := st.UpdateDeployment(ctx, s.dep30, config.Deployment{Provider: "claude", UpstreamModel: "claude-haiku", Weight: 30, Enabled: true,
		Breaker: &config.BreakerSettings{Window: 20, MinCalls: 5, FailurePercent: 50, OpenMS: 1000, HalfOpenProbes: 1}}); err != nil {
		t.Fatalf("deployment with breaker settings: %v", err)
	}
	if err := st.UpdateProvider(ctx, s.claude, config.Provider{Name: "claude", Protocol: config.ProtocolAnthropic, BaseURL: "https://api.anthropic.com", Enabled: true, TimeoutMS: 60000,
		Headers: []config.ProviderHeader{{Name: "X-Team", Value: "legal"}}, PassHeaders: []string{"X-Trace"}}); err != nil {
		t.Fatalf("provider headers: %v", err)
	}
	uid, err := st.CreateUser(ctx, "ops", "correct horse battery", store.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}

	// Every notification heard on the direct connection, collected as it
	// arrives (the listener drops payloads nobody reads).
	var heardMu sync.Mutex
	heard := map[live.Notice]bool{}
	go func() {
		for n := range notes {
			heardMu.Lock()
			heard[n] = true
			heardMu.Unlock()
		}
	}()
	waitNote := func(want live.Notice, poke bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			heardMu.Lock()
			ok := heard[want]
			heardMu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %q notification on the direct connection", want.Payload())
			}
			if poke {
				if _, err := st.DB().ExecContext(ctx, `SELECT pg_notify($1, $2)`, store.NotifyChannel, want.Payload()); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Wait until the listener is in place so the publish below cannot slip
	// past it.
	waitNote(live.KeysNotice, true)
	out, err := st.Publish(ctx, store.PublishInput{Author: "ops", Message: "first", Check: check})
	if err != nil {
		t.Fatalf("publish through the pooler: %v", err)
	}
	waitNote(live.VersionNotice(out.Version.Number), false)

	// Many clients at once, each a few rounds of console and data-plane work.
	const workers, rounds = 12, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*8)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fail := func(what string, err error) bool {
				if err != nil {
					errs <- fmt.Errorf("worker %d: %s: %w", w, what, err)
					return true
				}
				return false
			}
			for r := range rounds {
				name := fmt.Sprintf("tenant-%d-%d", w, r)
				id, err := st.CreateTenant(ctx, config.Tenant{Name: name})
				if fail("create tenant", err) {
					return
				}
				if fail("update tenant", st.UpdateTenant(ctx, id, config.Tenant{Name: name, Description: "renamed"})) {
					return
				}
				if _, _, err := st.Draft(ctx); fail("read draft", err) {
					return
				}
				plain, _, err := st.CreateCallerKey(ctx, "contracts", name, "worker")
				if fail("create caller key", err) {
					return
				}
				if keys, err := st.LiveCallerKeys(ctx); fail("live caller keys", err) {
					return
				} else if len(keys) == 0 || plain == "" {
					errs <- fmt.Errorf("worker %d: no live caller keys", w)
					return
				}
				token := fmt.Sprintf("session-%d-%d", w, r)
				if fail("record session", st.RecordSession(ctx, uid, token, time.Now().Add(time.Hour))) {
					return
				}
				if fail("forget session", st.ForgetSession(ctx, token)) {
					return
				}
				adminTok, _, err := st.CreateAdminToken(ctx, name, store.RoleAdmin, "ops")
				if fail("create admin token", err) {
					return
				}
				if _, err := st.AuthenticateAdminToken(ctx, adminTok); fail("authenticate admin token", err) {
					return
				}
				if _, err := st.Login(ctx, "ops", "correct horse battery"); fail("login", err) {
					return
				}
				if _, err := st.Versions(ctx, 10); fail("versions", err) {
					return
				}
				if _, _, err := st.DraftState(ctx); fail("draft state", err) {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	out2, err := st.Publish(ctx, store.PublishInput{Author: "ops", Message: "tenants", Check: check})
	if err != nil {
		t.Fatalf("second publish: %v", err)
	}
	waitNote(live.VersionNotice(out2.Version.Number), false)
	vs, err := st.Versions(ctx, 10)
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions: %d, %v", len(vs), err)
	}
	v, err := st.Version(ctx, out2.Version.Number)
	if err != nil || v.Snapshot == "" || string(v.Checks) == "" {
		t.Fatalf("version %d: %+v, %v", out2.Version.Number, v, err)
	}
	snap, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Tenants) != workers*rounds {
		t.Fatalf("draft has %d tenants, want %d", len(snap.Tenants), workers*rounds)
	}

	// Call logs: partitions (SET LOCAL and LOCK TABLE inside a transaction),
	// then the writer (COPY and the roll-up statement inside each batch's
	// transaction) with several workers, then search.
	db := st.DB()
	if err := calllog.EnsurePartitions(ctx, db, time.Now(), 1); err != nil {
		t.Fatalf("call-log partitions through the pooler: %v", err)
	}
	cw, err := calllog.NewWriter(db, calllog.WriterOptions{SpillDir: t.TempDir(), Workers: 4, BatchSize: 7, FlushInterval: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const calls = 300
	var ww sync.WaitGroup
	for g := range 6 {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for i := range calls / 6 {
				cw.Write(calllog.Record{At: time.Now().Add(-time.Minute), RequestID: record.NewRequestID(), Caller: "contracts",
					Tier: "fast", LogicModel: "small", Provider: "openai", Status: calllog.StatusOK, HTTPStatus: 200,
					LatencyMS: 10 + g + i, PromptTokens: new(int64(5)), CompletionTokens: new(int64(7))})
			}
		}()
	}
	ww.Wait()
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	if err := cw.Close(cctx); err != nil {
		t.Fatalf("close call-log writer: %v", err)
	}
	if st := cw.Stats(); st.Spilled != 0 || st.DeadLettered != 0 || st.Lost != 0 {
		t.Fatalf("call-log writer did not store everything through the pooler: %+v", st)
	}
	found := 0
	f := calllog.Filter{Caller: "contracts", Limit: 100}
	for {
		page, err := calllog.Search(ctx, db, f)
		if err != nil {
			t.Fatalf("search through the pooler: %v", err)
		}
		found += len(page.Rows)
		if page.Next == "" {
			break
		}
		f.Cursor = page.Next
	}
	if found != calls {
		t.Fatalf("search found %d call logs, want %d", found, calls)
	}
}
