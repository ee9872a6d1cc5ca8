package calllog

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/limit"
	"switchyard/routing/record"
)

// testAttempt is a trail entry as the journey writes it (routing.Attempt).
type testAttempt struct {
	Model        string `json:"model"`
	DeploymentID int64  `json:"deployment_id,omitempty"`
	Deployment   string `json:"deployment,omitempty"`
	Provider     string `json:"provider,omitempty"`
	Key          string `json:"key,omitempty"`
	Outcome      string `json:"outcome"`
	Class        string `json:"class,omitempty"`
	Status       int    `json:"status,omitempty"`
	LatencyMS    int64  `json:"latency_ms"`
}

func trailJSON(t testing.TB, attempts ...testAttempt) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(map[string]any{"attempts": attempts})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func call(provider string, dep int64, key, outcome, class string) testAttempt {
	return testAttempt{Model: "m", DeploymentID: dep, Deployment: fmt.Sprintf("m on %s", provider), Provider: provider, Key: key, Outcome: outcome, Class: class}
}

// served makes r a call served by its last attempt after the others.
func served(r *Record, attempts []testAttempt, t testing.TB) {
	last := attempts[len(attempts)-1]
	r.Status, r.ErrorClass, r.ErrorCode, r.HTTPStatus = StatusOK, "", "", 200
	r.Provider, r.KeyFingerprint = last.Provider, last.Key
	r.DeploymentID = new(last.DeploymentID)
	r.Attempts = trailJSON(t, attempts...)
}

// failedAll makes r a call every attempt of which failed: the journey then
// records no provider, deployment or key, only the last failure's class.
func failedAll(r *Record, attempts []testAttempt, t testing.TB) {
	r.Status, r.ErrorClass, r.ErrorCode, r.HTTPStatus = StatusUpstreamError, adapter.Class(attempts[len(attempts)-1].Class), "upstream_error", 502
	r.Provider, r.KeyFingerprint, r.DeploymentID = "", "", nil
	r.Attempts = trailJSON(t, attempts...)
}

// matchesAnyAttempt is the reference meaning of the attempt filters: the
// final column or any call the trail made.
func matchesAnyAttempt(t testing.TB, r Record, f Filter) bool {
	var tr struct {
		Attempts []testAttempt `json:"attempts"`
	}
	raw := strings.TrimSpace(string(r.Attempts))
	if strings.HasPrefix(raw, "[") {
		_ = json.Unmarshal(r.Attempts, &tr.Attempts)
	} else if raw != "" {
		_ = json.Unmarshal(r.Attempts, &tr)
	}
	seen := func(final bool, attempt func(testAttempt) bool) bool {
		if final {
			return true
		}
		for _, a := range tr.Attempts {
			if (a.Outcome == "ok" || a.Outcome == "failed") && attempt(a) {
				return true
			}
		}
		return false
	}
	if f.Provider != "" && !seen(r.Provider == f.Provider, func(a testAttempt) bool { return a.Provider == f.Provider }) {
		return false
	}
	if f.Key != "" && !seen(r.KeyFingerprint == f.Key, func(a testAttempt) bool { return a.Key == f.Key }) {
		return false
	}
	if f.Deployment != 0 && !seen(r.DeploymentID != nil && *r.DeploymentID == f.Deployment, func(a testAttempt) bool { return a.DeploymentID == f.Deployment }) {
		return false
	}
	if f.ErrorClass != "" && !seen(string(r.ErrorClass) == f.ErrorClass, func(a testAttempt) bool { return a.Outcome == "failed" && a.Class == f.ErrorClass }) {
		return false
	}
	if f.CallerPart != "" && !strings.Contains(strings.ToLower(r.Caller), strings.ToLower(f.CallerPart)) {
		return false
	}
	if f.LogicModelPart != "" && !strings.Contains(strings.ToLower(r.LogicModel), strings.ToLower(f.LogicModelPart)) {
		return false
	}
	if f.Status != "" && string(r.Status) != f.Status {
		return false
	}
	if !f.From.IsZero() && r.At.Before(f.From) || !f.To.IsZero() && !r.At.Before(f.To) {
		return false
	}
	return true
}

func newestFirst(a, b Record) int {
	if c := b.At.Compare(a.At); c != 0 {
		return c
	}
	return cmp.Compare(b.RequestID, a.RequestID)
}

// searchAll walks every page of f and returns the request ids in order.
func searchAll(t testing.TB, db Queryer, f Filter) []string {
	t.Helper()
	var got []string
	for pages := 0; ; pages++ {
		if pages > 200 {
			t.Fatal("pagination does not end")
		}
		p, err := Search(context.Background(), db, f)
		if err != nil {
			t.Fatalf("search %+v: %v", f, err)
		}
		if f.Limit > 0 && len(p.Rows) > f.Limit {
			t.Fatalf("page of %d rows, limit %d", len(p.Rows), f.Limit)
		}
		for _, r := range p.Rows {
			got = append(got, r.RequestID)
		}
		if p.Next == "" {
			return got
		}
		f.Cursor = p.Next
	}
}

// storeRecords normalizes recs as the writer does before a batch.
func storeRecords(t testing.TB, recs []Record) []Record {
	t.Helper()
	for i := range recs {
		if err := normalize(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// TestAttemptFiltersMatchAnyAttempt: a call that failed over after a 401 on
// provider X and was served by Y is found by class auth, by provider X, by
// X's deployment and by X's key; a call that failed everywhere is found by
// every provider it tried although its row names none. Pages walked with a
// small limit equal the reference filter over every row, in order.
func TestAttemptFiltersMatchAnyAttempt(t *testing.T) {
	t.Parallel()
	db, _ := newTestDB(t)
	ctx := context.Background()
	base := time.Date(2026, 4, 2, 9, 0, 0, 0, time.UTC)
	if err := EnsurePartitions(ctx, db, base.AddDate(0, 0, -1), 1); err != nil {
		t.Fatal(err)
	}
	x, y, z := call("vendor-x", 1, "sk-…xxxx", "failed", "auth"), call("vendor-y", 2, "sk-…yyyy", "ok", ""), call("vendor-z", 3, "sk-…zzzz", "failed", "timeout")
	var recs []Record
	var failover, failedEverywhere, legacy string
	rng := rand.New(rand.NewPCG(16, 4))
	for i := range 120 {
		// Few distinct times across midnight, so pages break ties by id.
		r := sampleRecord(base.Add(time.Duration(i%5-2)*5*time.Hour), []string{"app", "batch"}[i%2], i)
		switch i % 6 {
		case 0: // served by y after x refused the key
			served(&r, []testAttempt{x, y}, t)
			failover = r.RequestID
		case 1: // served by x at once
			ok := x
			ok.Outcome, ok.Class = "ok", ""
			served(&r, []testAttempt{ok}, t)
		case 2: // y's server error, then z timed out: nothing served
			yFail := y
			yFail.Outcome, yFail.Class = "failed", "server"
			failedAll(&r, []testAttempt{yFail, z}, t)
			failedEverywhere = r.RequestID
		case 3: // rejected before any attempt
			r.Status, r.ErrorClass, r.ErrorCode, r.HTTPStatus = StatusRejected, "rate_limited", "rate_limited", 429
			r.Provider, r.KeyFingerprint, r.DeploymentID, r.LogicModel, r.Attempts = "", "", nil, "", nil
		case 4: // a trail of the oldest shape: a bare array, x then y
			served(&r, []testAttempt{x, y}, t)
			r.Attempts, _ = json.Marshal([]testAttempt{x, y})
			legacy = r.RequestID
		default: // y at once, a skip of z on the way (a skip is no attempt)
			skip := z
			skip.Outcome, skip.Class = "skipped", ""
			served(&r, []testAttempt{skip, y}, t)
		}
		if rng.IntN(4) == 0 {
			r.Tier = "deep"
		}
		recs = append(recs, r)
	}
	recs = storeRecords(t, recs)
	if _, err := insertBatch(ctx, db, recs); err != nil {
		t.Fatal(err)
	}

	// What the console's operator asked for in issue 16, by hand first.
	for _, tc := range []struct {
		name string
		f    Filter
		want string
	}{
		{"class auth finds the failover", Filter{ErrorClass: "auth"}, failover},
		{"provider x finds the failover", Filter{Provider: "vendor-x", Status: string(StatusOK)}, failover},
		{"x's deployment finds the failover", Filter{Deployment: 1, Status: string(StatusOK)}, failover},
		{"x's key finds the failover", Filter{Key: "sk-…xxxx", Status: string(StatusOK)}, failover},
		{"the oldest trail shape too", Filter{ErrorClass: "auth"}, legacy},
		{"provider y finds the failed call", Filter{Provider: "vendor-y", Status: string(StatusUpstreamError)}, failedEverywhere},
		{"class server finds the failed call", Filter{ErrorClass: "server"}, failedEverywhere},
		{"class timeout (its final class)", Filter{ErrorClass: "timeout"}, failedEverywhere},
	} {
		ids := searchAll(t, db, tc.f)
		if !slices.Contains(ids, tc.want) {
			t.Errorf("%s: %s not among %d results", tc.name, tc.want, len(ids))
		}
	}
	if ids := searchAll(t, db, Filter{Provider: "vendor-z", Status: string(StatusOK)}); len(ids) != 0 {
		t.Errorf("a skip is not an attempt: provider z finds %d served calls, want 0", len(ids))
	}

	sorted := slices.Clone(recs)
	slices.SortFunc(sorted, newestFirst)
	for _, f := range []Filter{
		{ErrorClass: "auth"}, {ErrorClass: "timeout"}, {ErrorClass: "rate_limited"}, {ErrorClass: "server"},
		{Provider: "vendor-x"}, {Provider: "vendor-y"}, {Provider: "vendor-z"},
		{Deployment: 1}, {Deployment: 2}, {Deployment: 3},
		{Key: "sk-…xxxx"}, {Key: "sk-…zzzz"},
		{Provider: "vendor-x", ErrorClass: "auth"}, {Provider: "vendor-y", ErrorClass: "timeout", Tier: "", Status: string(StatusUpstreamError)},
		{Key: "sk-…yyyy", Deployment: 1}, {Provider: "vendor-x", CallerPart: "APP"},
		{ErrorClass: "auth", From: base, To: base.Add(6 * time.Hour)},
	} {
		var want []string
		for _, r := range sorted {
			if matchesAnyAttempt(t, r, f) {
				want = append(want, r.RequestID)
			}
		}
		if len(want) == 0 {
			t.Fatalf("%+v: the reference finds nothing; the data set does not exercise it", f)
		}
		for _, limit := range []int{7, 500} {
			f.Limit = limit
			if got := searchAll(t, db, f); !slices.Equal(got, want) {
				t.Errorf("%+v: %d ids, want %d (or another order)", f, len(got), len(want))
			}
		}
	}
}

// TestAttemptValuesLeaveOutTheRowsOwnValues: call_log_attempts holds only
// what the final columns do not, so a call served at the first try has no
// row there, and a failover only its failed side.
func TestAttemptValuesLeaveOutTheRowsOwnValues(t *testing.T) {
	t.Parallel()
	x, y := call("vendor-x", 1, "sk-…xxxx", "failed", "auth"), call("vendor-y", 2, "sk-…yyyy", "ok", "")
	r := sampleRecord(time.Now(), "app", 0)
	served(&r, []testAttempt{y}, t)
	if v := attemptValues(&r); v != nil {
		t.Errorf("first-try call: %+v, want none", v)
	}
	served(&r, []testAttempt{x, x, y}, t) // two keys' worth of x, the same fingerprint
	want := []attemptValue{{attemptClass, "auth"}, {attemptProvider, "vendor-x"}, {attemptKey, "sk-…xxxx"}, {attemptDeployment, "1"}}
	if v := attemptValues(&r); !slices.Equal(v, want) {
		t.Errorf("failover: %+v, want %+v", v, want)
	}
	r.Attempts = json.RawMessage(`{"attempts": [{"outcome": "failed", "provider": 7}]}`) // not a trail
	if v := attemptValues(&r); v != nil {
		t.Errorf("unreadable trail: %+v", v)
	}
}

// TestPartialCallerAndModelNames: part of a name, in any case, finds every
// caller (or logic model) containing it; LIKE's wildcards in the part are
// plain characters; a part no call log holds finds nothing; more names
// than the branch limit still page correctly.
func TestPartialCallerAndModelNames(t *testing.T) {
	t.Parallel()
	db, _ := newTestDB(t)
	ctx := context.Background()
	base := time.Date(2026, 5, 20, 10, 0, 0, 0, time.UTC)
	if err := EnsurePartitions(ctx, db, base.AddDate(0, 0, -3), 3); err != nil {
		t.Fatal(err)
	}
	callers := []string{"app-web", "App-Mobile", "batch_etl", "batchxetl", "reports"}
	for i := range 20 {
		callers = append(callers, fmt.Sprintf("svc-%02d", i))
	}
	var recs []Record
	for i := range 150 {
		r := sampleRecord(base.Add(-time.Duration(i%4)*24*time.Hour-time.Duration(i)*time.Second), callers[i%len(callers)], i)
		r.LogicModel = []string{"gpt-4.1", "GPT-4.1-mini", "qwen3-max"}[i%3]
		recs = append(recs, r)
	}
	recs = storeRecords(t, recs)
	if _, err := insertBatch(ctx, db, recs); err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(recs)
	slices.SortFunc(sorted, newestFirst)
	for _, f := range []Filter{
		{CallerPart: "app"}, {CallerPart: "MOBILE"}, {CallerPart: "h_e"}, {CallerPart: "svc-"}, {CallerPart: "svc-1"},
		{LogicModelPart: "gpt"}, {LogicModelPart: "4.1-m"}, {CallerPart: "app", LogicModelPart: "max"},
		{CallerPart: "svc", From: base.AddDate(0, 0, -1).Add(time.Hour), To: base.Add(time.Hour)},
	} {
		var want []string
		for _, r := range sorted {
			if matchesAnyAttempt(t, r, f) {
				want = append(want, r.RequestID)
			}
		}
		if len(want) == 0 {
			t.Fatalf("%+v: the reference finds nothing", f)
		}
		for _, limit := range []int{4, 500} {
			f.Limit = limit
			if got := searchAll(t, db, f); !slices.Equal(got, want) {
				t.Errorf("%+v limit %d: %d ids, want %d (or another order)", f, limit, len(got), len(want))
			}
		}
	}
	if n := len(searchAll(t, db, Filter{CallerPart: "h_e"})); n != 6 {
		t.Errorf("h_e matched %d rows, want batch_etl's 6 (the _ is no wildcard)", n)
	}
	for _, part := range []string{"nobody", "%", "app-web-2"} {
		if ids := searchAll(t, db, Filter{CallerPart: part}); len(ids) != 0 {
			t.Errorf("caller part %q found %d rows, want 0", part, len(ids))
		}
	}
	// A window the names do not occur in resolves no name at all.
	if ids := searchAll(t, db, Filter{CallerPart: "app", From: base.AddDate(0, 0, 1)}); len(ids) != 0 {
		t.Errorf("future window: %d rows", len(ids))
	}
	// Exact names stay exact.
	if ids := searchAll(t, db, Filter{Caller: "app"}); len(ids) != 0 {
		t.Errorf("exact caller app: %d rows, want 0", len(ids))
	}
}

// TestCallLogNamesKeepTheirDays: the writer records each name with the
// first and last day it occurs on, widening them for late rows.
func TestCallLogNamesKeepTheirDays(t *testing.T) {
	t.Parallel()
	db, _ := newTestDB(t)
	ctx := context.Background()
	day := time.Date(2026, 6, 10, 12, 0, 0, 0, time.UTC)
	if err := EnsurePartitions(ctx, db, day.AddDate(0, 0, -5), 5); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{day, day.AddDate(0, 0, 1), day.AddDate(0, 0, -4)} { // the last one late, as from a spill
		recs := storeRecords(t, []Record{sampleRecord(at, "late-caller", 1)})
		if _, err := insertBatch(ctx, db, recs); err != nil {
			t.Fatal(err)
		}
	}
	var first, last time.Time
	if err := db.QueryRow(`SELECT first_day, last_day FROM call_log_names WHERE kind = 'caller' AND name = 'late-caller'`).Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	if !first.Equal(utcDay(day.AddDate(0, 0, -4))) || !last.Equal(utcDay(day.AddDate(0, 0, 1))) {
		t.Errorf("days %s … %s", first.Format(time.DateOnly), last.Format(time.DateOnly))
	}
	if n := countRows(t, db, `SELECT count(*) FROM call_log_names WHERE kind = 'logic_model' AND name = 'gpt-4.1'`); n != 1 {
		t.Errorf("logic model names: %d", n)
	}
}

// TestRequestIDPrefixAndSuffix: the tail the list shows (with its "…"),
// the head of the id and the whole id each find the call; a part shorter
// than MinIDPart must be a whole id; LIKE's wildcards match themselves.
func TestRequestIDPrefixAndSuffix(t *testing.T) {
	t.Parallel()
	db, _ := newTestDB(t)
	ctx := context.Background()
	now := time.Date(2026, 7, 1, 8, 0, 0, 0, time.UTC)
	if err := EnsurePartitions(ctx, db, now.AddDate(0, 0, -2), 2); err != nil {
		t.Fatal(err)
	}
	var recs []Record
	for i := range 40 {
		recs = append(recs, sampleRecord(now.Add(-time.Duration(i)*time.Hour), "app", i))
	}
	recs[3].RequestID = "abc"
	recs[4].RequestID = "abc%_-caller-id"
	recs[5].RequestID = "zz-abc%_"
	recs = storeRecords(t, recs)
	if _, err := insertBatch(ctx, db, recs); err != nil {
		t.Fatal(err)
	}
	target := recs[17].RequestID
	tail := "…" + target[len(target)-12:]
	for _, tc := range []struct {
		part string
		want []string
	}{
		{tail, []string{target}},
		{target[len(target)-12:], []string{target}},
		{target, []string{target}},
		{target[:23], []string{target}},
		{"abc", []string{"abc"}},              // too short for a part: whole ids only
		{"abc%", []string{"abc%_-caller-id"}}, // % is a character, not "anything"
		{"%_", nil},                           // too short, and no id is "%_"
		{"bc%_", []string{"zz-abc%_"}},
		{"c%_-", nil},
	} {
		got := searchAll(t, db, Filter{RequestIDPart: tc.part})
		if !slices.Equal(got, tc.want) {
			t.Errorf("part %q: %v, want %v", tc.part, got, tc.want)
		}
	}
	// A part and another filter: both hold.
	if got := searchAll(t, db, Filter{RequestIDPart: tail, Caller: "someone-else"}); len(got) != 0 {
		t.Errorf("part with another caller: %v", got)
	}
}

// TestLimitColumnsRoundTrip: a refusal's limit — any kind, also one this
// code does not know — is stored and read back typed; a call without one
// reads back empty.
func TestLimitColumnsRoundTrip(t *testing.T) {
	t.Parallel()
	db, _ := newTestDB(t)
	ctx := context.Background()
	now := time.Now()
	ensureToday(t, db)
	rpm := sampleRecord(now, "app", 1)
	rpm.Status, rpm.ErrorClass, rpm.ErrorCode, rpm.HTTPStatus = StatusRejected, "rate_limited", "rate_limited", 429
	rpm.LimitKind, rpm.LimitValue, rpm.LimitResetMS = limit.KindRPM, new(int64(2)), new(int64(38_250))
	future := sampleRecord(now, "app", 2)
	future.LimitKind, future.LimitResetMS = limit.Kind("queue_full"), new(int64(500))
	plain := sampleRecord(now, "app", 3)
	recs := storeRecords(t, []Record{rpm, future, plain})
	if _, err := insertBatch(ctx, db, recs); err != nil {
		t.Fatal(err)
	}
	for _, want := range recs {
		got, err := Get(ctx, db, want.RequestID, want.At)
		if err != nil {
			t.Fatal(err)
		}
		if got.LimitKind != want.LimitKind || !eqPtr(got.LimitValue, want.LimitValue) || !eqPtr(got.LimitResetMS, want.LimitResetMS) {
			t.Errorf("%s: limit %q %v %v, want %q %v %v", want.RequestID, got.LimitKind, got.LimitValue, got.LimitResetMS,
				want.LimitKind, want.LimitValue, want.LimitResetMS)
		}
	}
}

func eqPtr(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// TestMigrationFillsAttemptsAndNames: rows and roll-ups written before
// migration 0013 become findable by their attempts and partial names.
func TestMigrationFillsAttemptsAndNames(t *testing.T) {
	t.Parallel()
	db := newEmptySchema(t)
	before, err := migrationText(func(n string) bool { return n < "0013" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(before); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 3, 3, 3, 3, 0, time.UTC)
	x, y := call("vendor-x", 1, "sk-…xxxx", "failed", "auth"), call("vendor-y", 2, "sk-…yyyy", "ok", "")
	insert := `INSERT INTO call_logs (at, request_id, caller, logic_model, provider, deployment_id, key_fingerprint, status, error_class, attempts)
		VALUES ($1, $2, 'old-caller', 'm', $3, $4, $5, $6, $7, $8)`
	rows := []struct {
		id, provider string
		dep          any
		key          string
		st           record.Status
		class        string
		trail        json.RawMessage
	}{
		{"failover", "vendor-y", 2, "sk-…yyyy", StatusOK, "", trailJSON(t, x, y)},
		{"bare", "vendor-y", 2, "sk-…yyyy", StatusOK, "", mustJSON(t, []testAttempt{x, y})},
		{"first-try", "vendor-y", 2, "sk-…yyyy", StatusOK, "", trailJSON(t, y)},
		{"odd", "", nil, "", StatusUpstreamError, "server", json.RawMessage(`{"attempts": {"outcome": "failed"}}`)},
		{"text", "", nil, "", StatusRejected, "rate_limited", json.RawMessage(`"an old reason"`)},
	}
	for _, r := range rows {
		var class any
		if r.class != "" {
			class = r.class
		}
		var provider, key any
		if r.provider != "" {
			provider, key = r.provider, r.key
		}
		if _, err := db.Exec(insert, at, r.id, provider, r.dep, key, r.st, class, string(r.trail)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO cost_rollups (day, caller, tier, logic_model, currency, requests)
		VALUES ('2026-03-01', 'old-caller', 'fast', 'm', '', 1), ('2026-03-03', 'old-caller', 'fast', '', '', 1)`); err != nil {
		t.Fatal(err)
	}
	after, err := migrationText(func(n string) bool { return n >= "0013" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(after); err != nil {
		t.Fatalf("migration 0013 on old rows: %v", err)
	}
	for _, tc := range []struct {
		f    Filter
		want []string
	}{
		{Filter{ErrorClass: "auth"}, []string{"failover", "bare"}},
		{Filter{Provider: "vendor-x"}, []string{"failover", "bare"}},
		{Filter{Deployment: 1}, []string{"failover", "bare"}},
		{Filter{Key: "sk-…xxxx"}, []string{"failover", "bare"}},
		{Filter{CallerPart: "OLD"}, []string{"bare", "failover", "first-try", "odd", "text"}},
		{Filter{LogicModelPart: "m"}, []string{"bare", "failover", "first-try", "odd", "text"}},
	} {
		got := searchAll(t, db, tc.f)
		slices.Sort(got)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.f, got, tc.want)
		}
	}
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
