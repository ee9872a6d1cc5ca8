package store_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchyard/store"
	"switchyard/store/rows"
	"switchyard/store/storetest"
)

// appendN appends n rows by alice, one per action code "test.<i>".
func appendN(t *testing.T, st *store.Store, n int) []rows.AuditEntry {
	t.Helper()
	var out []rows.AuditEntry
	for i := range n {
		e, err := st.AppendAudit(context.Background(), rows.AuditEntry{Actor: "alice", ActorKind: rows.ActorUser, Addr: "10.0.0.1",
			Action: rows.AuditAction("test." + string(rune('a'+i))), ObjectKind: "caller", ObjectID: "7", ObjectName: "billing",
			Outcome: rows.OutcomeOK, Status: 303, Detail: rows.AuditDetail{Method: "POST", Route: "/callers/:id", Before: "  enabled: true\n", After: "  enabled: false\n"}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// tamper runs a statement with the append-only trigger off, as a table
// owner or superuser could.
func tamper(t *testing.T, st *store.Store, q string, args ...any) {
	t.Helper()
	ctx := context.Background()
	for _, s := range []string{`ALTER TABLE audit_log DISABLE TRIGGER USER`, q, `ALTER TABLE audit_log ENABLE TRIGGER USER`} {
		a := args
		if s != q {
			a = nil
		}
		if _, err := st.DB().ExecContext(ctx, s, a...); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestAuditAppendChainsRowsAndRefusesChanges(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	es := appendN(t, st, 3)
	if es[0].PrevHash != "" || es[1].PrevHash != es[0].Hash || es[2].PrevHash != es[1].Hash {
		t.Fatalf("not chained: %+v", es)
	}
	got, err := st.AuditLog(ctx, rows.AuditFilter{})
	if err != nil || len(got) != 3 || got[0].ID != es[2].ID {
		t.Fatalf("newest first: %+v, %v", got, err)
	}
	if got[0].Detail.After != "  enabled: false\n" || !got[0].At.Equal(es[2].At) {
		t.Fatalf("read back %+v, want %+v", got[0], es[2])
	}
	for _, q := range []string{`UPDATE audit_log SET actor = 'mallory'`, `DELETE FROM audit_log`, `TRUNCATE audit_log`} {
		if _, err := st.DB().ExecContext(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only refusal", q, err)
		}
	}
	c, err := st.CheckAudit(ctx, nil)
	if err != nil || c.Break != nil || c.Checked != 3 || c.HeadID != es[2].ID || c.HeadHash != es[2].Hash {
		t.Fatalf("check of a whole chain: %+v %v", c, err)
	}
}

func TestAuditCheckFindsTheFirstBrokenLink(t *testing.T) {
	cases := []struct {
		name   string
		tamper string // $1..$3: the ids of the 2nd, 3rd and 4th rows
		at     int    // index of the row reported
		kind   rows.AuditBreakKind
		other  int // index of Other, -1 for none
	}{
		{"edited", `UPDATE audit_log SET actor = 'mallory' WHERE id = $1`, 1, rows.BreakEdited, -1},
		{"edited detail", `UPDATE audit_log SET detail = '{"after":"  enabled: true\n"}' WHERE id = $2`, 2, rows.BreakEdited, -1},
		{"deleted", `DELETE FROM audit_log WHERE id = $1`, 2, rows.BreakDeleted, -1},
		{"swapped", `UPDATE audit_log SET id = -1 WHERE id = $1; UPDATE audit_log SET id = $1 WHERE id = $2; UPDATE audit_log SET id = $2 WHERE id = -1`, 1, rows.BreakReordered, 2},
		{"cut from the end", `DELETE FROM audit_log WHERE id = $3`, 2, rows.BreakTruncated, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := storetest.New(t)
			es := appendN(t, st, 4)
			q := strings.NewReplacer("$1", itoa(es[1].ID), "$2", itoa(es[2].ID), "$3", itoa(es[3].ID)).Replace(tc.tamper)
			tamper(t, st, q)
			var seen []int64
			c, err := st.CheckAudit(context.Background(), func(n int64) { seen = append(seen, n) })
			if err != nil {
				t.Fatal(err)
			}
			if c.Break == nil || c.Break.ID != es[tc.at].ID || c.Break.Kind != tc.kind {
				t.Fatalf("break %+v, want %s at row %d", c.Break, tc.kind, es[tc.at].ID)
			}
			if tc.other >= 0 && c.Break.Other != es[tc.other].ID {
				t.Errorf("other %d, want %d", c.Break.Other, es[tc.other].ID)
			}
		})
	}
}

func TestAuditLogFilters(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	es := appendN(t, st, 3)
	if _, err := st.AppendAudit(ctx, rows.AuditEntry{Actor: "token:ci", ActorKind: rows.ActorToken, Action: "caller_key.create",
		ObjectKind: "caller", ObjectID: "9", ObjectName: "50%_off", Outcome: rows.OutcomeOK, Status: 201}); err != nil {
		t.Fatal(err)
	}
	count := func(f rows.AuditFilter) int {
		got, err := st.AuditLog(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	for name, tc := range map[string]struct {
		f    rows.AuditFilter
		want int
	}{
		"actor":          {rows.AuditFilter{Actor: "token:ci"}, 1},
		"action":         {rows.AuditFilter{Action: "test.b"}, 1},
		"area":           {rows.AuditFilter{Action: "caller_key."}, 1},
		"object id":      {rows.AuditFilter{Object: "7"}, 3},
		"object name":    {rows.AuditFilter{Object: "50%"}, 1},
		"wildcard":       {rows.AuditFilter{Text: "_"}, 1},
		"text in detail": {rows.AuditFilter{Text: "ENABLED: FALSE"}, 3},
		"since":          {rows.AuditFilter{Since: es[1].At}, 3},
		"until":          {rows.AuditFilter{Until: es[1].At}, 1},
		"page back":      {rows.AuditFilter{BeforeID: es[2].ID}, 2},
		"page forward":   {rows.AuditFilter{Oldest: true, AfterID: es[0].ID, Limit: 2}, 2},
		"future":         {rows.AuditFilter{Since: time.Now().Add(time.Hour)}, 0},
	} {
		if got := count(tc.f); got != tc.want {
			t.Errorf("%s: %d rows, want %d", name, got, tc.want)
		}
	}
}

// Appends are serialised on the head row; one costs a transaction of
// three statements.
func BenchmarkAuditAppend(b *testing.B) {
	st, _ := storetest.New(b)
	ctx := context.Background()
	e := rows.AuditEntry{Actor: "alice", ActorKind: rows.ActorUser, Action: "caller.update", Outcome: rows.OutcomeOK, Status: 303,
		Detail: rows.AuditDetail{Before: strings.Repeat("  x: 1\n", 40), After: strings.Repeat("  x: 2\n", 40)}}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := st.AppendAudit(ctx, e); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
