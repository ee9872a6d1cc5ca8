// Package traces proves the gateway's OpenTelemetry traces end to end: the
// real switchyard binary exports to a real Jaeger (built from its Go
// module by e2e/scripts/jaeger-deps.sh), and the test reads the traces back
// through Jaeger's query API. No browser: it has its own TestMain.
package traces

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var binDir, jaegerBin string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	jaegerBin = os.Getenv("SWITCHYARD_JAEGER")
	if jaegerBin == "" {
		jaegerBin, _ = filepath.Abs("../../.cache/bin/jaeger")
	}
	if _, err := os.Stat(jaegerBin); err != nil {
		fmt.Fprintf(os.Stderr, "traces: no Jaeger at %s (run ./e2e/scripts/jaeger-deps.sh or set SWITCHYARD_JAEGER; make e2e-deps does it): %v\n", jaegerBin, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "switchyard-traces-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	for _, cmd := range []string{"switchyard", "fakeupstream"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, cmd), "../../cmd/"+cmd).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "traces: build %s: %v\n%s", cmd, err, out)
			return 1
		}
	}
	return m.Run()
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// proc is a running binary whose output is printed when the test fails.
type proc struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.out.String()
	if len(s) > 6000 {
		s = "…" + s[len(s)-6000:]
	}
	return s
}

// start runs path with args and env; it is interrupted when the test ends.
func start(t *testing.T, name, path string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(path, args...)}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("---- %s output ----\n%s", name, p.log())
		}
	})
	return p
}

// waitOK polls url until it answers 200.
func waitOK(t *testing.T, url string, p *proc) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s not answering after 60s\n%s", url, p.log())
}

// jaeger is a Jaeger all-in-one (in-memory storage) on free ports.
type jaeger struct {
	otlpHTTP, otlpGRPC, query string
}

const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %[3]s
    grpc:
      endpoint: %[4]s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[2]s
      http:
        endpoint: %[1]s
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

func startJaeger(t *testing.T) jaeger {
	t.Helper()
	j := jaeger{otlpHTTP: freePort(t), otlpGRPC: freePort(t), query: freePort(t)}
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, j.otlpHTTP, j.otlpGRPC, j.query, freePort(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "jaeger", jaegerBin, nil, "--config", cfg)
	waitOK(t, "http://"+j.query+"/api/services", p)
	return j
}
