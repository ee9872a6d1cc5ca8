package onboarding_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/config/onboarding"
)

func TestVerify(t *testing.T) {
	fake := fakevendor.New(fakevendor.Options{})
	full := httptest.NewServer(fake)
	t.Cleanup(full.Close)
	// A compatible server without a model list.
	nolist := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"not found","type":"invalid_request_error"}}`))
			return
		}
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(nolist.Close)
	v := &onboarding.Verifier{Adapters: onboarding.DefaultAdapters(), Client: &http.Client{}}
	for _, tc := range []struct {
		name  string
		probe onboarding.Probe
		key   string
		ok    bool
		class adapter.Class
		text  string
	}{
		{"listed", onboarding.Probe{Protocol: config.ProtocolOpenAI, BaseURL: full.URL + "/v1"}, "sk-good-000000001", true, "", "reachable, 3 models listed"},
		{"rejected", onboarding.Probe{Protocol: config.ProtocolOpenAI, BaseURL: full.URL + "/v1"}, "bad-key-000000001", false, adapter.ClassAuth, "key rejected (401)"},
		{"billing", onboarding.Probe{Protocol: config.ProtocolAnthropic, BaseURL: full.URL}, "broke-key-0000001", false, adapter.ClassBilling, "billing problem (402)"},
		{"gemini rejected", onboarding.Probe{Protocol: config.ProtocolGemini, BaseURL: full.URL}, "bad-key-000000001", false, adapter.ClassAuth, "key rejected"},
		{"rate limited", onboarding.Probe{Protocol: config.ProtocolOpenAI, BaseURL: full.URL + "/v1"}, "sk-busy-000000001", true, adapter.ClassRateLimited, "rate limited"},
		{"no list: chat", onboarding.Probe{Protocol: config.ProtocolOpenAI, BaseURL: nolist.URL + "/v1", Model: "my-model"}, "sk-good-000000001", true, "", "reachable: my-model answered a 1-token test"},
		{"no list: rejected", onboarding.Probe{Protocol: config.ProtocolOpenAI, BaseURL: nolist.URL + "/v1", Model: "my-model"}, "bad-key-000000001", false, adapter.ClassAuth, "key rejected (401)"},
		{"azure api-key", onboarding.Probe{Protocol: config.ProtocolAzure, BaseURL: full.URL, APIVersion: "2024-10-21"}, "azure-key-0000001", true, "", "reachable, "},
		{"azure entra", onboarding.Probe{Protocol: config.ProtocolAzure, BaseURL: full.URL, APIVersion: "2024-10-21", AuthURL: full.URL}, "entra:tenant-1:client-1:secret-0001", true, "", "reachable, "},
		{"azure entra refused", onboarding.Probe{Protocol: config.ProtocolAzure, BaseURL: full.URL, APIVersion: "2024-10-21", AuthURL: full.URL}, "entra:tenant-1:client-1:bad-secret-01", false, adapter.ClassAuth, "key rejected"},
		{"bedrock signed", onboarding.Probe{Protocol: config.ProtocolBedrock, BaseURL: full.URL, Region: "eu-west-1", Model: "anthropic.claude-3-haiku-20240307-v1:0"}, "AKIAVERIFY01:fake-secret-AKIAVERIFY01", true, "", "reachable, 1 model listed"},
		{"bedrock wrong secret", onboarding.Probe{Protocol: config.ProtocolBedrock, BaseURL: full.URL, Region: "eu-west-1", Model: "anthropic.claude-3-haiku-20240307-v1:0"}, "AKIAVERIFY01:not-the-secret", false, adapter.ClassAuth, "key rejected (403)"},
		{"unreachable", onboarding.Probe{Protocol: config.ProtocolOpenAI, BaseURL: "http://127.0.0.1:1/v1"}, "sk-good-000000001", false, adapter.ClassNetwork, "cannot connect: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "rate limited" {
				fake.SetRules(fakevendor.Rule{Key: tc.key, Fault: fakevendor.Fault{Status: http.StatusTooManyRequests}})
				defer fake.SetRules()
			}
			got := v.Verify(t.Context(), tc.probe, tc.key)
			if got.OK != tc.ok || got.Class != tc.class || !strings.HasPrefix(got.Text, tc.text) {
				t.Errorf("verdict = %+v, want ok=%v class=%q text %q…", got, tc.ok, tc.class, tc.text)
			}
			if strings.Contains(got.Text, tc.key) {
				t.Errorf("verdict text shows the key: %q", got.Text)
			}
		})
	}
}

// VerifyAll checks a long pasted list a few keys at a time: the vendor never
// sees more than the bound at once, and it does see that many (the keys are
// checked in parallel, not one by one).
func TestVerifyAllBoundsConcurrentCalls(t *testing.T) {
	for _, tc := range []struct {
		name        string
		concurrency int
		want        int
	}{
		{"default", 0, onboarding.DefaultConcurrency},
		{"two", 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			inFlight, most, calls := 0, 0, 0
			reached := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				inFlight++
				calls++
				if inFlight > most {
					most = inFlight
					if most == tc.want {
						close(reached)
					}
				}
				mu.Unlock()
				// Hold the call until the bound is reached, so an unbounded
				// VerifyAll would pile every key up here.
				select {
				case <-reached:
				case <-time.After(2 * time.Second):
				}
				time.Sleep(20 * time.Millisecond)
				mu.Lock()
				inFlight--
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m1","object":"model"}]}`))
			}))
			t.Cleanup(srv.Close)
			v := &onboarding.Verifier{Adapters: onboarding.DefaultAdapters(), Client: &http.Client{}, Concurrency: tc.concurrency}
			keys := make([]string, 12)
			for i := range keys {
				keys[i] = fmt.Sprintf("sk-good-%09d", i)
			}
			got := v.VerifyAll(t.Context(), onboarding.Probe{Protocol: config.ProtocolOpenAI, BaseURL: srv.URL + "/v1"}, keys)
			for i, vd := range got {
				if !vd.OK || vd.Fingerprint != config.KeyFingerprint(keys[i]) {
					t.Errorf("verdict %d = %+v, want OK for key %d", i, vd, i)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if calls != len(keys) {
				t.Errorf("vendor saw %d calls, want %d", calls, len(keys))
			}
			if most != tc.want {
				t.Errorf("at most %d calls in flight at once, want exactly %d", most, tc.want)
			}
		})
	}
}
