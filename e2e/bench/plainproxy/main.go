// Command plainproxy is the floor `make bench` measures the gateway
// against: one HTTP hop through Go's net/http with nothing else — no
// authentication, routing, limits, call log or metrics. It reads the
// caller's body, sends it with the caller's Authorization header to one
// upstream over a pooled client set up like the gateway's, and copies the
// answer back (a stream event by event, flushed). What the gateway adds on
// top of this figure is its own work; what this adds to the direct path is
// the price of any Go proxy on the machine.
//
// With -hold it answers a stream as the gateway does: nothing (not even
// the status line) until the vendor's first content arrives, so that a
// proxy could still switch to another vendor until then; what that costs
// a caller's first content is the difference between the two floors.
//
//	plainproxy -addr 127.0.0.1:9200 -upstream http://127.0.0.1:9090 [-hold]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"
)

// firstContent finds an OpenAI chat chunk's first content: a delta whose
// content is not empty.
var firstContent = regexp.MustCompile(`"delta":\{[^}]*"content":"[^"]`)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	upstream := flag.String("upstream", "", "base URL requests are forwarded to (their path appended)")
	hold := flag.Bool("hold", false, "hold a stream's answer, head and all, until its first content")
	flag.Parse()
	if *upstream == "" {
		fmt.Fprintln(os.Stderr, "plainproxy: -upstream is required")
		os.Exit(2)
	}
	base := strings.TrimRight(*upstream, "/")
	// The gateway's upstream client settings (web/gateway.UpstreamClient).
	client := &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 512,
		IdleConnTimeout:     90 * time.Second,
	}}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "plainproxy:", err)
		os.Exit(1)
	}
	fmt.Printf("plainproxy listening on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: proxy(client, base, *hold), ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "plainproxy:", err)
		os.Exit(1)
	}
}

// proxy forwards each request to base with client and copies the answer
// back; with hold, a stream's answer waits for its first content.
func proxy(client *http.Client, base string, hold bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.Path, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header["Authorization"] = r.Header["Authorization"]
		req.Header["Content-Type"] = r.Header["Content-Type"]
		res, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		w.Header()["Content-Type"] = res.Header["Content-Type"]
		if res.ContentLength >= 0 {
			w.Header()["Content-Length"] = res.Header["Content-Length"]
		}
		if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			w.WriteHeader(res.StatusCode)
			_, _ = io.Copy(w, res.Body)
			return
		}
		relay(w, res, hold)
	}
}

// relay copies a stream as it comes, each read flushed; with hold, nothing
// (not even the status line) goes before the first content.
func relay(w http.ResponseWriter, res *http.Response, hold bool) {
	f := http.NewResponseController(w)
	buf := make([]byte, 4<<10)
	var head []byte // what is held until the first content
	if !hold {
		w.WriteHeader(res.StatusCode) // sent with the first events
	}
	for {
		n, err := res.Body.Read(buf)
		out := buf[:n]
		if hold {
			head = append(head, out...)
			if !firstContent.Match(head) && err == nil {
				continue
			}
			w.WriteHeader(res.StatusCode)
			hold, out = false, head
		}
		if len(out) > 0 {
			if _, werr := w.Write(out); werr != nil {
				return
			}
			_ = f.Flush()
		}
		if err != nil {
			return
		}
	}
}
