package gateway_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"switchyard/e2e/fakevendor"
	"switchyard/web/gateway/gatewaytest"
)

// The shutdown cut reaches streams in flight whether the data plane is
// served under DataPlane.BaseContext (as cmd/switchyard serves it: nothing
// per request) or without it (each request then watches the cut itself):
// each stream ends with a shutting_down error event, and the cut counts
// them.
func TestCutEndsStreamsInFlight(t *testing.T) {
	e := gatewaytest.New(t)
	key := e.Simple()
	e.Fake.SetRules(fakevendor.Rule{Model: "fake-small", Fault: fakevendor.Fault{InterChunkDelay: 200 * time.Millisecond, ReplyChunks: 100}})
	plain := httptest.NewServer(e.GW.Server.Echo) // no BaseContext
	t.Cleanup(plain.Close)

	type end struct {
		base string
		last string
	}
	ends := make(chan end, 2)
	started := make(chan struct{}, 2)
	for _, base := range []string{e.URL, plain.URL} {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
				strings.NewReader(`{"model":"standard","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Authorization", "Bearer "+key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				started <- struct{}{}
				ends <- end{base, err.Error()}
				return
			}
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			last, signalled := "", false
			for sc.Scan() {
				if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					last = line
					if !signalled && strings.Contains(line, `"content"`) {
						signalled = true
						started <- struct{}{}
					}
				}
			}
			if !signalled {
				started <- struct{}{}
			}
			ends <- end{base, last}
		}()
	}
	for range 2 {
		<-started
	}
	if n := e.GW.InFlight(); n != 2 {
		t.Fatalf("%d requests in flight, want the 2 streams", n)
	}
	e.GW.CutInFlight()
	for range 2 {
		select {
		case got := <-ends:
			if !strings.Contains(got.last, `"shutting_down"`) {
				t.Errorf("stream via %s ended with %q, want a shutting_down error event", got.base, got.last)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a stream was not cut")
		}
	}
	if n := e.GW.Data.CutCount(); n != 2 {
		t.Errorf("cut count %d, want 2", n)
	}
}
