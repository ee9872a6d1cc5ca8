package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"

	"switchyard/store"
	"switchyard/store/rows"
	"switchyard/views/pages/auditlog"
)

const auditUsage = `usage: switchyard audit verify

Walks the whole audit trail (SWITCHYARD_DATABASE_URL) and checks that each
row still has its hash and points to the row before it. Prints how many
rows were checked and the last row's hash (keep a copy elsewhere to anchor
the chain); exits 1 at the first broken link, naming the row and whether it
was edited, deleted, reordered or cut from the end. It does not start the
server.
`

// auditCommand is the audit command: args are the words after its name.
func auditCommand(ctx context.Context, args []string, out, diag io.Writer) error {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(diag)
	fs.Usage = func() { fmt.Fprint(diag, auditUsage) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) != "verify" {
		fs.Usage()
		return errors.New("audit: the one subcommand is verify")
	}
	st, err := store.Open(ctx, env("SWITCHYARD_DATABASE_URL", defaultDatabaseURL), nil)
	if err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	defer st.Close()
	chk, err := st.CheckAudit(ctx, func(n int64) { fmt.Fprintf(diag, "\rchecked %d row(s)", n) })
	fmt.Fprintln(diag)
	if err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	if b := chk.Break; b != nil {
		v := auditlog.Verify{Checked: chk.Checked, Broken: true, BreakID: b.ID, BreakKind: string(b.Kind), Other: b.Other}
		return fmt.Errorf("audit verify: the chain is broken at row %d (%s). %s %d row(s) before it are whole", b.ID, b.Kind, auditlog.BreakWords(v), chk.Checked)
	}
	fmt.Fprintf(out, "Audit chain whole: %d row(s) checked; last row %d, hash %s\n", chk.Checked, chk.HeadID, chk.HeadHash)
	return nil
}

// recordCLI appends a command's action to the audit trail, best effort:
// the action is done, so a trail that cannot be written is a note.
func recordCLI(ctx context.Context, st *store.Store, e rows.AuditEntry, diag io.Writer) {
	e.ActorKind, e.Outcome = rows.ActorCLI, rows.OutcomeOK
	if u, err := user.Current(); err == nil {
		e.Actor = u.Username
	}
	if h, err := os.Hostname(); err == nil {
		e.Addr = h
	}
	if _, err := st.AppendAudit(ctx, e); err != nil {
		fmt.Fprintf(diag, "note: the audit trail did not record this: %v\n", err)
	}
}
