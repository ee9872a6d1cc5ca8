package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"switchyard/store"
	"switchyard/store/rows"
	"switchyard/store/storetest"
)

// `switchyard audit verify` passes a whole chain, names the first broken
// row (and so exits non-zero) after a row is edited behind the trigger's
// back; a password reset from the command line is one row, by a cli actor.
func TestAuditVerifyCommand(t *testing.T) {
	st, dsn := storetest.New(t)
	t.Setenv("SWITCHYARD_DATABASE_URL", dsn)
	t.Setenv("SWITCHYARD_REDIS_URL", "redis://127.0.0.1:1/0") // no lockout to clear
	ctx := context.Background()
	if _, err := st.CreateUser(ctx, "admin", "forgotten-password", store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	var out, diag bytes.Buffer
	if err := resetPassword(ctx, []string{"admin"}, nil, &out, &diag); err != nil {
		t.Fatalf("%v\n%s", err, diag.String())
	}
	list, err := st.AuditLog(ctx, rows.AuditFilter{})
	if err != nil || len(list) != 1 {
		t.Fatalf("audit rows after the reset: %+v, %v", list, err)
	}
	if e := list[0]; e.ActorKind != rows.ActorCLI || e.Action != rows.AuditUserPasswordReset || e.ObjectName != "admin" || e.Outcome != rows.OutcomeOK {
		t.Errorf("the reset's row: %+v", e)
	}
	newPassword := strings.TrimSpace(out.String()[strings.LastIndex(strings.TrimSpace(out.String()), "\n")+1:])
	if newPassword == "" || strings.Contains(list[0].Detail.Note, newPassword) {
		t.Errorf("the new password %q is in the row %+v", newPassword, list[0])
	}
	if _, err := st.AppendAudit(ctx, rows.AuditEntry{Actor: "ops", ActorKind: rows.ActorUser, Action: "caller.update", Outcome: rows.OutcomeOK}); err != nil {
		t.Fatal(err)
	}

	out.Reset()
	if err := auditCommand(ctx, []string{"verify"}, &out, &diag); err != nil {
		t.Fatalf("verify of a whole chain: %v", err)
	}
	if !strings.Contains(out.String(), "2 row(s) checked") {
		t.Errorf("output %q", out.String())
	}

	for _, q := range []string{`ALTER TABLE audit_log DISABLE TRIGGER USER`, `UPDATE audit_log SET actor = 'someone-else' WHERE id = ` + itoa(list[0].ID), `ALTER TABLE audit_log ENABLE TRIGGER USER`} {
		if _, err := st.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	err = auditCommand(ctx, []string{"verify"}, &out, &diag)
	if err == nil || !strings.Contains(err.Error(), "broken at row "+itoa(list[0].ID)+" (edited)") {
		t.Fatalf("verify after an edit: %v", err)
	}
	if err := auditCommand(ctx, []string{"check"}, &out, &diag); err == nil {
		t.Error("an unknown subcommand was accepted")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
