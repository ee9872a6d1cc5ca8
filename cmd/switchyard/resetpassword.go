package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"switchyard/store"
	"switchyard/store/redis/connect"
	"switchyard/store/redis/loginguard"
	"switchyard/store/rows"
)

const resetUsage = `usage: switchyard reset-password [-password-stdin] <username>

Gives a console user a new password, ends their sessions and revokes the
admin API tokens they created, for an admin who is locked out. It needs only the database (SWITCHYARD_DATABASE_URL) and
does not start the server; it also lifts a sign-in lockout of that user in
Redis (SWITCHYARD_REDIS_URL, SWITCHYARD_REDIS_PREFIX) when Redis answers.
Without -password-stdin it generates the password and prints it once, and
the user must change it at their next sign-in. When single sign-on has
switched local passwords off, it switches them back on (break-glass), so
the new password can be used.
`

// resetPassword is the reset-password command: args are the words after
// the command's name; out gets the new password, diag the notes.
func resetPassword(ctx context.Context, args []string, in io.Reader, out, diag io.Writer) error {
	fs := flag.NewFlagSet("reset-password", flag.ContinueOnError)
	fs.SetOutput(diag)
	fromStdin := fs.Bool("password-stdin", false, "read the new password from the first line of standard input instead of generating one")
	fs.Usage = func() { fmt.Fprint(diag, resetUsage) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || strings.TrimSpace(fs.Arg(0)) == "" {
		fs.Usage()
		return errors.New("reset-password: name exactly one user")
	}
	username := strings.TrimSpace(fs.Arg(0))
	password := rows.RandomPassword()
	if *fromStdin {
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reset-password: read the password: %w", err)
		}
		password = strings.TrimRight(line, "\r\n")
	}
	if fe := rows.ValidatePassword(password); len(fe) > 0 {
		return fmt.Errorf("reset-password: the password %s; nothing was changed", fe["password"])
	}

	st, err := store.Open(ctx, env("SWITCHYARD_DATABASE_URL", defaultDatabaseURL), nil)
	if err != nil {
		return fmt.Errorf("reset-password: %w", err)
	}
	defer st.Close()
	// A generated password is seen by whoever reads the output: the user
	// replaces it at sign-in. One read from stdin was chosen by its sender.
	r, err := st.ResetPasswordByName(ctx, username, password, !*fromStdin)
	switch {
	case errors.Is(err, store.ErrNotFound):
		names := "none"
		if users, lerr := st.Users(ctx); lerr == nil && len(users) > 0 {
			list := make([]string, len(users))
			for i, u := range users {
				list[i] = u.Username + " (" + u.Role + ")"
			}
			names = strings.Join(list, ", ")
		}
		return fmt.Errorf("reset-password: there is no console user %q; the users are: %s", username, names)
	case errors.Is(err, store.ErrUserDisabled):
		return fmt.Errorf("reset-password: user %q is disabled; an admin disabled them, and only a new user can be created for them", username)
	case err != nil:
		return fmt.Errorf("reset-password: %w", err)
	}
	clearLockout(ctx, username, diag)
	breakGlass(ctx, st, diag)

	ended := resetDone(r)
	recordCLI(ctx, st, rows.AuditEntry{Action: rows.AuditUserPasswordReset, ObjectKind: "user", ObjectID: strconv.FormatInt(r.UserID, 10),
		ObjectName: r.Username, Detail: rows.AuditDetail{Note: "switchyard reset-password" + ended}}, diag)
	if *fromStdin {
		fmt.Fprintf(out, "The password of %s is reset%s.\n", r.Username, ended)
		return nil
	}
	fmt.Fprintf(out, "New password of %s%s (shown once; only its hash is stored; they choose their own at the next sign-in):\n%s\n", r.Username, ended, password)
	return nil
}

// clearLockout lifts a sign-in lockout of username, best effort: the
// lockout ends by itself anyway.
func clearLockout(ctx context.Context, username string, diag io.Writer) {
	rdb, err := connect.New(env("SWITCHYARD_REDIS_URL", defaultRedisURL))
	if err != nil {
		fmt.Fprintf(diag, "note: no sign-in lockout was cleared (SWITCHYARD_REDIS_URL: %v)\n", err)
		return
	}
	defer rdb.Close()
	g := loginguard.New(rdb, loginguard.Options{Prefix: env("SWITCHYARD_REDIS_PREFIX", defaultRedisPrefix), Timeout: 2 * time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err := g.Clear(ctx, loginguard.User, username); err != nil {
		fmt.Fprintf(diag, "note: Redis did not answer, so a sign-in lockout of %s (if any) was not cleared; it ends by itself: %v\n", username, err)
	}
}

// breakGlass switches local passwords back on when single sign-on had
// switched them off, so the reset password can be used: the admin signs
// in, mends the single-sign-on settings and switches them off again.
func breakGlass(ctx context.Context, st *store.Store, diag io.Writer) {
	on, err := st.EnableLocalPasswords(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(diag, "note: local passwords could not be switched back on (%v); if single sign-on switched them off, the new password is refused\n", err)
	case on:
		fmt.Fprintln(diag, "note: password sign-in was switched off (single sign-on); it is switched back on for every user. Switch it off again under Users & tokens → Sign-in once single sign-on works.")
	}
}

// resetDone says what the reset ended besides the password: " (2
// session(s) ended, 1 admin API token(s) revoked)", or "".
func resetDone(r store.PasswordReset) string {
	var parts []string
	if r.SessionsEnded > 0 {
		parts = append(parts, fmt.Sprintf("%d session(s) ended", r.SessionsEnded))
	}
	if r.TokensRevoked > 0 {
		parts = append(parts, fmt.Sprintf("%d admin API token(s) revoked", r.TokensRevoked))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
