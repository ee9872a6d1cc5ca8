// Command loadgen is the open-loop load driver of `make bench`: it sends
// requests at a fixed rate for a fixed time, each at its scheduled moment
// whether or not earlier ones have answered (so a slow server is not given
// a gentler load, as a closed loop would), from its own process, and prints
// the latency percentiles as JSON.
//
//	loadgen -url http://127.0.0.1:8080/v1/chat/completions -key sk-... -rate 1000 -duration 8s
//
// With -stream it reads server-sent events and reports, besides the whole
// response, the time to the first byte of the body and to the first event
// that carries content (an OpenAI chunk with a non-empty delta.content), so
// a stream that sends its role chunk at once and its content later is
// measured by when the caller can show something.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

type result struct {
	OK, Errors int
	Statuses   map[int]int `json:",omitempty"`
	Latency    percentiles
	FirstByte  *percentiles `json:",omitempty"`
	Content    *percentiles `json:",omitempty"` // time to the first content chunk
	MaxLagUS   int64        // how late the driver sent its most delayed request
}

type percentiles struct{ P50US, P90US, P99US int64 }

func pcts(d []time.Duration) percentiles {
	if len(d) == 0 {
		return percentiles{}
	}
	slices.Sort(d)
	at := func(p float64) int64 { return d[min(len(d)-1, int(p*float64(len(d))))].Microseconds() }
	return percentiles{P50US: at(.5), P90US: at(.9), P99US: at(.99)}
}

func main() {
	var (
		url      = flag.String("url", "", "endpoint to POST to")
		key      = flag.String("key", "", "bearer token")
		body     = flag.String("body", `{"model":"standard","messages":[{"role":"user","content":"benchmark"}]}`, "request body")
		rate     = flag.Int("rate", 1000, "requests per second")
		duration = flag.Duration("duration", 8*time.Second, "how long to send")
		stream   = flag.Bool("stream", false, "read the answer as server-sent events and time its first content")
		timeout  = flag.Duration("timeout", 30*time.Second, "per-request timeout")
	)
	flag.Parse()
	if *url == "" || *rate <= 0 {
		fmt.Fprintln(os.Stderr, "loadgen: -url and a positive -rate are required")
		os.Exit(2)
	}
	client := &http.Client{Timeout: *timeout, Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
	n := int(float64(*rate) * duration.Seconds())
	ld := &load{client: client, url: *url, key: *key, payload: []byte(*body), stream: *stream,
		lat: make([]time.Duration, n), ttfb: make([]time.Duration, n), ttfc: make([]time.Duration, n), status: make([]int, n)}
	var maxLag atomic.Int64
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(*rate)
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if w := time.Until(at); w > 0 {
			time.Sleep(w)
		}
		if lag := time.Since(at); lag > time.Duration(maxLag.Load()) {
			maxLag.Store(int64(lag))
		}
		wg.Go(func() { ld.send(i) })
	}
	wg.Wait()
	r := ld.result()
	r.MaxLagUS = time.Duration(maxLag.Load()).Microseconds()
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

// load is one run: what to send, and each request's timings and status.
type load struct {
	client          *http.Client
	url, key        string
	payload         []byte
	stream          bool
	lat, ttfb, ttfc []time.Duration
	status          []int
}

// send sends request i and records its status and timings.
func (ld *load) send(i int) {
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, ld.url, bytes.NewReader(ld.payload))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+ld.key)
	t0 := time.Now()
	res, err := ld.client.Do(req)
	if err != nil {
		ld.status[i] = -1
		return
	}
	defer res.Body.Close()
	ld.status[i] = res.StatusCode
	if !ld.stream {
		_, _ = io.Copy(io.Discard, res.Body)
		ld.lat[i] = time.Since(t0)
		return
	}
	br := bufio.NewReaderSize(res.Body, 16<<10)
	if _, err := br.Peek(1); err == nil {
		ld.ttfb[i] = time.Since(t0)
	}
	for {
		line, err := br.ReadSlice('\n')
		if ld.ttfc[i] == 0 && hasContent(line) {
			ld.ttfc[i] = time.Since(t0)
		}
		if err != nil {
			break
		}
	}
	ld.lat[i] = time.Since(t0)
}

// result counts the run: successes' percentiles, failures by status.
func (ld *load) result() result {
	var r result
	r.Statuses = map[int]int{}
	var okLat, okTTFB, okTTFC []time.Duration
	for i := range ld.status {
		if ld.status[i] != http.StatusOK || (ld.stream && ld.ttfc[i] == 0) {
			r.Errors++
			r.Statuses[ld.status[i]]++
			continue
		}
		r.OK++
		okLat = append(okLat, ld.lat[i])
		if ld.stream {
			okTTFB, okTTFC = append(okTTFB, ld.ttfb[i]), append(okTTFC, ld.ttfc[i])
		}
	}
	r.Latency = pcts(okLat)
	if ld.stream {
		fb, fc := pcts(okTTFB), pcts(okTTFC)
		r.FirstByte, r.Content = &fb, &fc
	}
	return r
}

// hasContent reports an SSE data line whose chunk carries text.
func hasContent(line []byte) bool {
	data, ok := bytes.CutPrefix(line, []byte("data: "))
	if !ok || !bytes.Contains(data, []byte(`"content"`)) {
		return false
	}
	var chunk struct {
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal(bytes.TrimSpace(data), &chunk) != nil {
		return false
	}
	for _, c := range chunk.Choices {
		if c.Delta.Content != "" {
			return true
		}
	}
	return false
}
