package storetest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// PgBouncerBinary finds the pgbouncer executable: on PATH, else where the
// Debian package puts it (/usr/sbin is not on every user's PATH).
func PgBouncerBinary() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	const debian = "/usr/sbin/pgbouncer"
	if _, err := os.Stat(debian); err == nil {
		return debian, nil
	}
	return "", fmt.Errorf("pgbouncer is required for this test (`make test` installs it: apt-get install -y pgbouncer)")
}

// PgBouncer starts a PgBouncer of the test's own, in transaction pooling
// mode, in front of the server dsn names, and returns dsn rewritten to go
// through it. The pooler is small (a few server connections for many
// clients), so concurrent clients really do share backends between
// transactions. It runs from a temporary directory, logs into the test log
// and is stopped when the test ends; the PostgreSQL server is only
// connected to, never configured.
func PgBouncer(t testing.TB, dsn string) string {
	t.Helper()
	bin, err := PgBouncerBinary()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		t.Fatalf("storetest: pgbouncer needs a URL DSN, got %q", dsn)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	if host == "" {
		host = "127.0.0.1"
	}
	listenPort, args := pgBouncerConfig(t, u, host, port)
	exited, showLog := startPgBouncer(t, bin, args)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(listenPort))
	waitListening(t, addr, exited, showLog)
	pooled := *u
	pooled.Host = addr
	return pooled.String()
}

// pgBouncerConfig writes a transaction-mode configuration in front of
// host:port for u's user into a temporary directory and returns the port
// it listens on and PgBouncer's arguments.
func pgBouncerConfig(t testing.TB, u *url.URL, host, port string) (int, []string) {
	t.Helper()
	userName := u.User.Username()
	password, hasPassword := u.User.Password()

	dir, err := os.MkdirTemp("", "switchyard-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	listenPort := freePort(t)
	auth := "trust"
	if hasPassword {
		auth = "md5" // the client proves the password; the userlist's plain copy logs in to the server
	}
	ini := strings.Join([]string{
		"[databases]",
		// Any database name: each test's fresh database passes through.
		"* = host=" + host + " port=" + port,
		"[pgbouncer]",
		"listen_addr = 127.0.0.1",
		"listen_port = " + strconv.Itoa(listenPort),
		"unix_socket_dir =",
		"auth_type = " + auth,
		"auth_file = " + filepath.Join(dir, "userlist.txt"),
		"pool_mode = transaction",
		"default_pool_size = 3",
		"max_client_conn = 500",
		"server_login_retry = 1",
		"log_connections = 0",
		"log_disconnections = 0",
		"",
	}, "\n")
	userlist := fmt.Sprintf("%q %q\n", userName, password)
	for name, body := range map[string]string{"pgbouncer.ini": ini, "userlist.txt": userlist} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{filepath.Join(dir, "pgbouncer.ini")}
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root; -u makes it drop to an
		// unprivileged user, which must be able to read the directory.
		runAs := "postgres"
		if _, err := user.Lookup(runAs); err != nil {
			runAs = "nobody"
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		args = append([]string{"-u", runAs}, args...)
	}
	return listenPort, args
}

// startPgBouncer runs PgBouncer until the test ends (its log shown when the
// test failed); exited closes when it exits.
func startPgBouncer(t testing.TB, bin string, args []string) (exited chan struct{}, showLog func() string) {
	t.Helper()
	var logMu sync.Mutex
	var logBuf bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout = &lockedWriter{mu: &logMu, w: &logBuf}
	cmd.Stderr = cmd.Stdout
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("storetest: start pgbouncer: %v", err)
	}
	exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGINT) // immediate shutdown
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	showLog = func() string {
		logMu.Lock()
		defer logMu.Unlock()
		return logBuf.String()
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("pgbouncer log:\n%s", showLog())
		}
	})

	return exited, showLog
}

// waitListening waits until PgBouncer accepts connections on addr.
func waitListening(t testing.TB, addr string, exited chan struct{}, showLog func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("storetest: pgbouncer exited at start:\n%s", showLog())
		case <-ctx.Done():
			t.Fatalf("storetest: pgbouncer did not listen on %s:\n%s", addr, showLog())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
