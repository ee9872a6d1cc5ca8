// Command fakeupstream runs the fake LLM vendor (OpenAI, Anthropic and
// Gemini protocols) for tests, benchmarks and the sandbox.
//
//	fakeupstream -addr 127.0.0.1:9090 -reply-chunks 5 -latency 20ms
//
// Fault flags apply to every request no rule matches; rules can be loaded
// from a JSON file (-rules) and changed at runtime with PUT /_fake/rules.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"switchyard/e2e/fakevendor"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fakeupstream:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then shuts down gracefully: in-flight waits and
// streams are cancelled and the server is given 5 s to finish.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fakeupstream", flag.ContinueOnError)
	var (
		addr      = fs.String("addr", "127.0.0.1:9090", "listen address (port 0 picks a free port)")
		models    = fs.String("models", "", "comma-separated models to serve (default: any name)")
		rulesFile = fs.String("rules", "", "JSON file with an array of rules")
		opts      fakevendor.Options
		f         = &opts.Fault
	)
	fs.IntVar(&opts.ReplyChunks, "reply-chunks", 5, "content chunks per reply")
	fs.IntVar(&opts.Dimension, "dimension", 1536, "default embedding dimension")
	fs.IntVar(&f.Status, "status", 0, "answer every request with this HTTP status and the protocol's error body")
	fs.DurationVar(&f.RetryAfter, "retry-after", 0, "Retry-After on -status errors")
	fs.DurationVar(&f.Latency, "latency", 0, "wait before responding")
	fs.DurationVar(&f.FirstChunkDelay, "first-chunk-delay", 0, "stream: wait before the first content chunk")
	fs.DurationVar(&f.InterChunkDelay, "inter-chunk-delay", 0, "stream: wait between chunks")
	fs.IntVar(&f.CutAfterChunks, "cut-after", 0, "stream: drop the connection after N content chunks (negative: before any)")
	fs.IntVar(&f.ErrorAfterChunks, "error-after", 0, "stream: send the protocol's error event after N content chunks (negative: before any)")
	fs.BoolVar(&f.ContentFilter, "content-filter", false, "answer with the protocol's content-filter outcome")
	fs.IntVar(&f.OversizedLine, "oversized-line", 0, "stream: make the first content data line this many bytes")
	fs.BoolVar(&f.NoUsage, "no-usage", false, "omit token usage")
	fs.IntVar(&f.FailTimes, "fail-times", 0, "apply the fault flags to the first N requests only")
	fs.BoolVar(&f.ShuffleEmbeddings, "shuffle", false, "return OpenAI embedding items in random order")
	fs.IntVar(&f.CachedTokens, "cached-tokens", 0, "report this many cached prompt tokens")
	fs.BoolVar(&f.FinishEveryChunk, "finish-every-chunk", false, "stream: put the finish reason on every content chunk (as Gemini does)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := f.Validate(); err != nil {
		return err
	}
	if *models != "" {
		opts.Models = strings.Split(*models, ",")
	}
	if *rulesFile != "" {
		b, err := os.ReadFile(*rulesFile)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &opts.Rules); err != nil {
			return fmt.Errorf("rules %s: %w", *rulesFile, err)
		}
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	// Requests derive from serveCtx so waits and streams end at shutdown.
	serveCtx, cancelServe := context.WithCancel(context.Background())
	defer cancelServe()
	srv := &http.Server{
		Handler:           fakevendor.New(opts),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return serveCtx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "fakeupstream listening on http://%s\n", ln.Addr())

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	cancelServe()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
