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
	"sync/atomic"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/web/gateway/gatewaytest"
)

// BenchmarkLargeBodiesRSS sends bursts of 16 concurrent 4 MB /v1/messages
// bodies (120,000 short messages each, the shape that amplified memory
// most) to an instance whose body budget (SWITCHYARD_MAX_BODY_BYTES_IN_FLIGHT)
// is 32 MB, and reports the process's peak RSS above its resting RSS per MB
// of body bytes in flight (rss/inflight), the peak itself (peak-MB), the
// most body bytes charged at once (inflight-MB), the requests the bound
// refused (503/op) and the RSS above rest 3 s after the burst
// (after-MB), rest being the RSS before the first burst. The upstream is a stub that discards what it is sent, so
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
	// Rest is taken once: taken per iteration it would start from what the
	// previous burst left and hide the growth.
	rest := settledRSS(2 * time.Second)
	b.ResetTimer()
	for range b.N {
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

// BenchmarkBodyBurstRSS sends the shape that amplified memory most, 9 MB
// bodies of 300,000 tiny turns: 8 at once to /v1/messages translated for an
// OpenAI-protocol deployment (messages), 8 at once to /v1/messages passed
// natively to an Anthropic-protocol one (messages-native), then 16 at once
// to /v1/chat/completions, with a body budget large enough to admit them
// all. Per burst it reports the peak RSS above the resting RSS measured
// once before any burst (peak-MB), per MB of body bytes in flight at that
// moment's maximum (rss/inflight; the target is at most 3, and at most
// 2.5 for the translated messages burst, whose OpenAI body is written
// straight from the caller's), the RSS
// above rest 10 s after the burst with nothing forced (idle-after-MB: what
// an instance gone idle keeps; the body budget's burst-end collection lets
// the runtime return the rest), and after a GC cycle forced here and 5 s
// more (after-MB). The upstream discards what
// it is sent, so only the gateway's memory (and this client's one body)
// is counted.
// Run: go test -run '^$' -bench BodyBurstRSS -benchtime 2x ./web/gateway/
func BenchmarkBodyBurstRSS(b *testing.B) {
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/messages") {
			_, _ = io.WriteString(w, `{"id":"msg_x","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"fake-small","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	b.Cleanup(stub.Close)
	e := gatewaytest.New(b, gatewaytest.Options{BodyBytesInFlight: 512 << 20})
	e.FakeURL = stub.URL
	key := e.Simple()
	// A caller whose group serves on an Anthropic-protocol deployment:
	// its /v1/messages bodies pass natively, never translated.
	nb := e.Build()
	nb.Provider("claude", config.ProtocolAnthropic, "", "sk-ant-key-0000-0009")
	nb.Model(config.LogicModel{Code: "claude", Kind: config.KindChat}, config.Deployment{Provider: "claude", UpstreamModel: "claude-x", Weight: 100, Enabled: true,
		Prices: config.Prices{InputMicros: config.Unit, OutputMicros: config.Unit, Currency: "USD"}, Capabilities: config.Capabilities{Tools: true, Vision: true, Thinking: true}})
	native := []config.Candidate{{LogicModel: "claude", Weight: 100}}
	nb.Group("native", map[config.TierName][]config.Candidate{config.TierFast: native, config.TierStandard: native, config.TierDeep: native})
	_, nativeKey := nb.Caller(config.Caller{Name: "native-app", RouteGroup: "native"})
	e.Publish("native world")
	body := tinyTurnsBody(300_000)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	bursts := []struct {
		name, path, key string
		conc            int
	}{{"messages", "/v1/messages", key, 8}, {"messages-native", "/v1/messages", nativeKey, 8}, {"chat", "/v1/chat/completions", key, 16}}
	rest := settledRSS(2 * time.Second)
	b.Logf("body %.1f MB of 300,000 turns; resting RSS %.0f MB", float64(len(body))/(1<<20), rest)
	peak := make([]float64, len(bursts))
	ratio := make([]float64, len(bursts))
	after := make([]float64, len(bursts))
	idle := make([]float64, len(bursts))
	b.ResetTimer()
	for range b.N {
		for i, burst := range bursts {
			maxRSS, maxIn := burstRSS(b, client, e.URL+burst.path, burst.key, body, burst.conc, func() float64 {
				return float64(e.GW.Journey.BodyBytes.InFlight()) / (1 << 20)
			})
			peak[i] += maxRSS - rest
			ratio[i] += (maxRSS - rest) / max(maxIn, 1)
			idle[i] += lowestRSS(10*time.Second) - rest
			after[i] += settledRSS(5*time.Second) - rest
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			// What stays is the runtime's idle heap, not live data: it
			// goes back to the system as the scavenger returns it.
			b.Logf("%s: heap in use %d MB, idle %d MB, returned %d MB", burst.name, ms.HeapInuse>>20, ms.HeapIdle>>20, ms.HeapReleased>>20)
		}
	}
	n := float64(b.N)
	for i, burst := range bursts {
		b.ReportMetric(peak[i]/n, burst.name+"-peak-MB")
		b.ReportMetric(ratio[i]/n, burst.name+"-rss/inflight")
		b.ReportMetric(idle[i]/n, burst.name+"-idle-after-MB")
		b.ReportMetric(after[i]/n, burst.name+"-after-MB")
	}
}

// burstRSS sends conc copies of body at once and returns the process's
// peak RSS (MB) and the most body bytes in flight (MB) while they ran.
func burstRSS(b *testing.B, client *http.Client, url, key, body string, conc int, inflight func() float64) (float64, float64) {
	stop := make(chan struct{})
	var samples sync.WaitGroup
	var maxRSS, maxIn float64
	samples.Go(func() {
		for {
			maxRSS = max(maxRSS, rssMB())
			maxIn = max(maxIn, inflight())
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range conc {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("x-api-key", key)
			req.Header.Set("anthropic-version", "2023-06-01")
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			switch res.StatusCode {
			case http.StatusOK:
			case http.StatusServiceUnavailable:
				refused.Add(1)
			default:
				b.Errorf("%s: status %d", url, res.StatusCode)
			}
		})
	}
	wg.Wait()
	close(stop)
	samples.Wait()
	if n := refused.Load(); n > 0 {
		b.Errorf("%s: %d of %d refused; the budget should admit the burst", url, n, conc)
	}
	return maxRSS, maxIn
}

// settledRSS is the lowest RSS (MB) seen within wait after a GC cycle,
// while the runtime returns what the cycle freed to the system.
func settledRSS(wait time.Duration) float64 {
	runtime.GC()
	return lowestRSS(wait)
}

// lowestRSS is the lowest RSS (MB) seen within wait.
func lowestRSS(wait time.Duration) float64 {
	low := rssMB()
	for end := time.Now().Add(wait); time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
		low = min(low, rssMB())
	}
	return low
}

// tinyTurnsBody is a body of n turns of one character each, read alike by
// /v1/messages and /v1/chat/completions.
func tinyTurnsBody(n int) string {
	var sb strings.Builder
	sb.WriteString(`{"model":"standard","max_tokens":16,"messages":[`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		if i%2 == 0 {
			sb.WriteString(`{"role":"user","content":"t"}`)
		} else {
			sb.WriteString(`{"role":"assistant","content":"a"}`)
		}
	}
	sb.WriteString(`,{"role":"user","content":"end"}]}`)
	return sb.String()
}
