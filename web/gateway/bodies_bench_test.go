package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/web/gateway/gatewaytest"
)

// BenchmarkLargeBodiesRSS sends bursts of 16 concurrent 4 MB /v1/messages
// bodies (120,000 short messages each, the shape that amplified memory
// most) to an instance whose body budget (SWITCHYARD_MAX_BODY_BYTES_IN_FLIGHT)
// is 32 MB, and reports the process's peak RSS above its resting RSS per MB
// of body bytes in flight (rss/inflight), the peak itself (peak-MB), the
// most body bytes charged at once (inflight-MB), the requests the bound
// refused (503/op) and the RSS above rest 3 s after the burst
// (after-MB). The upstream is a stub that discards what it is sent, so
// only the gateway's memory (and this client's bodies) is counted.
// Run: go test -run '^$' -bench LargeBodiesRSS -benchtime 3x ./web/gateway/
func BenchmarkLargeBodiesRSS(b *testing.B) {
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"fake-small","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	b.Cleanup(stub.Close)
	const budget = 32 << 20
	e := gatewaytest.New(b, gatewaytest.Options{BodyBytesInFlight: budget})
	e.FakeURL = stub.URL
	key := e.Simple()
	body := messagesBody(4 << 20)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	const conc = 16
	var peak, inflight, after, refused float64
	b.ResetTimer()
	for range b.N {
		runtime.GC()
		rest := rssMB()
		stop := make(chan struct{})
		var samples sync.WaitGroup
		var maxRSS, maxIn float64
		samples.Go(func() {
			for {
				maxRSS = max(maxRSS, rssMB())
				maxIn = max(maxIn, float64(e.GW.Journey.BodyBytes.InFlight())/(1<<20))
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
			}
		})
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range conc {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/messages", strings.NewReader(body))
				req.Header.Set("x-api-key", key)
				req.Header.Set("anthropic-version", "2023-06-01")
				res, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusServiceUnavailable {
					mu.Lock()
					refused++
					mu.Unlock()
				} else if res.StatusCode != http.StatusOK {
					b.Errorf("status %d", res.StatusCode)
				}
			})
		}
		wg.Wait()
		close(stop)
		samples.Wait()
		time.Sleep(3 * time.Second)
		peak += maxRSS - rest
		inflight += maxIn
		after += rssMB() - rest
	}
	n := float64(b.N)
	b.ReportMetric(peak/n, "peak-MB")
	b.ReportMetric(inflight/n, "inflight-MB")
	b.ReportMetric(peak/max(inflight, 1), "rss/inflight")
	b.ReportMetric(after/n, "after-MB")
	b.ReportMetric(refused/n, "503/op")
}

// messagesBody is a /v1/messages body of about size bytes of short turns.
func messagesBody(size int) string {
	var sb strings.Builder
	sb.WriteString(`{"model":"standard","max_tokens":16,"messages":[`)
	for i := 0; sb.Len() < size; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"role":%q,"content":"turn %d"}`, role, i)
	}
	sb.WriteString(`,{"role":"user","content":"end"}]}`)
	return sb.String()
}

// rssMB is this process's resident set size in MB.
func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, res int64
	_, _ = fmt.Sscanf(string(b), "%d %d", &size, &res)
	return float64(res*int64(os.Getpagesize())) / (1 << 20)
}
