//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// External load drivers: both paths (direct and through the gateway) are
// driven by the same programs in processes of their own, so neither path's
// figure is capped by a driver sharing its process.
//   - wrk (Debian's, installed by bench.sh) for closed-loop maximum
//     throughput, with a Lua script for the POST body and headers;
//   - loadgen (this package's loadgen/, built by bench.sh into bin/) for
//     open-loop fixed-rate latency and stream timings.

// loadResult is loadgen's JSON answer.
type loadResult struct {
	OK, Errors int
	Statuses   map[string]int
	Latency    loadPct
	FirstByte  *loadPct
	Content    *loadPct
	MaxLagUS   int64
}

type loadPct struct{ P50US, P90US, P99US int64 }

func us(v int64) time.Duration { return time.Duration(v) * time.Microsecond }

// loadgen runs the open-loop driver against tg at rate req/s for d.
func loadgen(t *testing.T, bin string, tg target, body string, rate int, d time.Duration, stream bool) loadResult {
	t.Helper()
	r, err := runLoadgen(bin, tg, body, rate, d, stream)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runLoadgen is loadgen for a goroutine other than the test's.
func runLoadgen(bin string, tg target, body string, rate int, d time.Duration, stream bool) (loadResult, error) {
	args := []string{"-url", tg.url, "-key", tg.key, "-body", body, "-rate", strconv.Itoa(rate), "-duration", d.String()}
	if stream {
		args = append(args, "-stream")
	}
	var r loadResult
	out, err := exec.Command(filepath.Join(bin, "loadgen"), args...).Output()
	if err != nil {
		return r, fmt.Errorf("loadgen %s: %w", tg.name, err)
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("loadgen %s: %w: %s", tg.name, err, out)
	}
	return r, nil
}

// wrkScript writes the Lua script that makes wrk POST body with tg's key.
func wrkScript(t *testing.T, tg target, body string) string {
	t.Helper()
	q := func(s string) string { return strconv.Quote(s) } // a Go quoted ASCII string is a Lua string
	script := "wrk.method = \"POST\"\nwrk.body = " + q(body) + "\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.headers[\"Authorization\"] = " + q("Bearer "+tg.key) + "\n"
	path := filepath.Join(t.TempDir(), tg.name+".lua")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var (
	wrkRPS    = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses:\s+([0-9]+)`)
	wrkErrors = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// wrk runs closed-loop load with conns connections for d and returns the
// successful requests per second and the failed ones.
func wrk(t *testing.T, tg target, body string, conns int, d time.Duration) (float64, int) {
	t.Helper()
	threads := min(2, conns)
	out, err := exec.Command("wrk", "-t", strconv.Itoa(threads), "-c", strconv.Itoa(conns), "-d", fmt.Sprintf("%ds", max(1, int(d.Seconds()))),
		"-s", wrkScript(t, tg, body), tg.url).CombinedOutput()
	if err != nil {
		t.Fatalf("wrk %s: %v\n%s", tg.name, err, out)
	}
	m := wrkRPS.FindSubmatch(out)
	if m == nil {
		t.Fatalf("wrk %s: no Requests/sec in\n%s", tg.name, out)
	}
	rps, _ := strconv.ParseFloat(string(m[1]), 64)
	failed := 0
	if m := wrkNon2xx.FindSubmatch(out); m != nil {
		failed, _ = strconv.Atoi(string(m[1]))
	}
	if m := wrkErrors.FindSubmatch(out); m != nil {
		for _, g := range m[1:] {
			n, _ := strconv.Atoi(string(g))
			failed += n
		}
	}
	// Requests/sec counts failures too; keep the successful ones.
	total := rps * d.Seconds()
	if total > 0 && failed > 0 {
		rps *= max(0, total-float64(failed)) / total
	}
	return rps, failed
}

// cpuTicks is the user+system CPU time of a process in clock ticks.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces) start after ")".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// clockTick is the kernel's USER_HZ, 100 on Linux.
const clockTick = 10 * time.Millisecond

// peakRSS resets the process's peak RSS (so the next reading covers only
// what follows) and returns a function that reads it. Without permission
// to reset it, it samples VmRSS every 10 ms instead.
func peakRSS(pid int) func() int {
	if os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0o200) == nil {
		return func() int { return statusKB(pid, "VmHWM") }
	}
	stop := make(chan struct{})
	peak := make(chan int, 1)
	go func() {
		hi := rssKB(pid)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				peak <- hi
				return
			case <-tick.C:
				hi = max(hi, rssKB(pid))
			}
		}
	}()
	return func() int { close(stop); return <-peak }
}

// median of the values.
func median[T int64 | float64 | time.Duration](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		var zero T
		return zero
	}
	return s[len(s)/2]
}

// adminCall sends a request to the admin API and returns the status and body.
func adminCall(t *testing.T, base, token, method, path, contentType string, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	return res.StatusCode, buf.Bytes()
}

// liveVersion reads the version an instance serves from its metrics.
func liveVersion(base string) int64 {
	res, err := http.Get(base + "/metrics")
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "switchyard_config_version "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int64(f)
		}
	}
	return 0
}

// waitLive waits until the instance serves version n and returns how long
// that took.
func waitLive(t *testing.T, base string, n int64) time.Duration {
	t.Helper()
	t0 := time.Now()
	for liveVersion(base) < n {
		if time.Since(t0) > 2*time.Minute {
			t.Fatalf("version %d did not go live", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(t0)
}
