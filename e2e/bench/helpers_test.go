//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The harness shared by the benchmarks of this package (run with `make
// bench`): processes, free ports, RSS, the in-process fixed-rate and
// closed-loop drivers, percentiles. The external drivers (wrk, loadgen)
// are in external_test.go.

var (
	rate    = envInt("BENCH_RATE", 1000)           // req/s of the fixed-rate phases
	phase   = envDur("BENCH_PHASE", 5*time.Second) // length of each fixed-rate phase
	rounds  = envInt("BENCH_ROUNDS", 3)            // direct/gateway phases alternate this many times
	workers = envInt("BENCH_WORKERS", 64)          // closed-loop throughput concurrency
	streams = envInt("BENCH_STREAMS", 1000)        // concurrent streams for the RSS check
	// how long after the streams close the RSS is read again
	afterStreams = envDur("BENCH_AFTER_STREAMS", time.Minute)
	bodyChat     = `{"model":"standard","messages":[{"role":"user","content":"benchmark"}]}`
)

func envInt(k string, d int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return d
}

func envDur(k string, d time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return d
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startProc(t *testing.T, bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), out.String())
		}
	})
	return cmd
}

func waitOK(t *testing.T, url string) {
	for i := 0; i < 300; i++ {
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s not ready", url)
}

func rssKB(pid int) int { return statusKB(pid, "VmRSS") }

// statusKB is one kB field of /proc/<pid>/status (VmRSS, RssAnon, RssFile).
func statusKB(pid int, field string) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), field+":") {
			n, _ := strconv.Atoi(strings.Fields(sc.Text())[1])
			return n
		}
	}
	return 0
}

type target struct {
	name, url, key string
	hdr            map[string]string
}

func (tg target) request(ctx context.Context, body string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tg.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tg.key)
	for k, v := range tg.hdr {
		req.Header.Set(k, v)
	}
	return req
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute}}

// fixedRate sends rate req/s for d (open loop) and returns latencies.
func fixedRate(tg target, rate int, d time.Duration, body string, ttfb bool) ([]time.Duration, int) {
	var mu sync.Mutex
	lat := make([]time.Duration, 0, int(float64(rate)*d.Seconds()))
	var errs atomic.Int64
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= d {
			break
		}
		if w := time.Until(at); w > 0 {
			time.Sleep(w)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			res, err := client.Do(tg.request(context.Background(), body))
			if err != nil {
				errs.Add(1)
				return
			}
			var el time.Duration
			if ttfb {
				buf := make([]byte, 1)
				_, _ = io.ReadFull(res.Body, buf)
				el = time.Since(t0)
				_, _ = io.Copy(io.Discard, res.Body)
			} else {
				_, _ = io.Copy(io.Discard, res.Body)
				el = time.Since(t0)
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				errs.Add(1)
				return
			}
			mu.Lock()
			lat = append(lat, el)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat, int(errs.Load())
}

func pct(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// closedLoop runs n workers as fast as they go for d and returns req/s.
func closedLoop(tg target, n int, d time.Duration) float64 {
	var done atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				res, err := client.Do(tg.request(context.Background(), bodyChat))
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == 200 && ctx.Err() == nil {
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return float64(done.Load()) / d.Seconds()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Microseconds())/1000) }

func redisURL() string {
	if v := os.Getenv("SWITCHYARD_TEST_REDIS_URL"); v != "" {
		return v
	}
	return "redis://127.0.0.1:6379/0"
}
