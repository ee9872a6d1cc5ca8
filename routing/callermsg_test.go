package routing

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/frontdoor"
	"switchyard/routing/reason"
)

// vendorText is what a vendor might say, with a masked key inside.
const vendorText = "Incorrect API key provided: sk-*****XYZW. This model's maximum context length is 8192 tokens."

// failedTrail is one failed attempt as the executor records it: our key
// fingerprint and the vendor's whole message.
func failedTrail(class adapter.Class, status int) *Trail {
	return &Trail{Attempts: []Attempt{{Model: "gpt-fast", Deployment: "gpt-fast on openai (gpt-4o-mini)", Provider: "openai",
		Key: "sk-…XYZW", Outcome: "failed", Class: class, Status: status, Reason: vendorText}}}
}

func explicitPlan(code string) *Plan {
	return &Plan{Target: Target{Explicit: &config.RModel{Code: code}}}
}

// leaks lists what must never reach a caller told in our words.
var leaks = []string{"Incorrect API key", "maximum context length", "XYZW", "sk-", "…", "*****"}

func TestCallerToldPerClass(t *testing.T) {
	tests := []struct {
		class      adapter.Class
		upstream   int
		status     int
		code, typ  string
		vendorPass bool
	}{
		{adapter.ClassAuth, 401, http.StatusServiceUnavailable, "no_available_model", "api_error", false},
		{adapter.ClassBilling, 402, http.StatusServiceUnavailable, "no_available_model", "api_error", false},
		{adapter.ClassRateLimited, 429, http.StatusTooManyRequests, "rate_limited", "rate_limit_error", false},
		{adapter.ClassServer, 500, http.StatusBadGateway, "upstream_error", "api_error", false},
		{adapter.ClassTimeout, 0, http.StatusGatewayTimeout, "timeout", "api_error", false},
		{adapter.ClassNetwork, 0, http.StatusBadGateway, "upstream_error", "api_error", false},
		{adapter.Class("something_new"), 418, http.StatusBadGateway, "upstream_error", "api_error", false},
		{adapter.ClassBadRequest, 400, http.StatusBadRequest, "invalid_request", "invalid_request_error", true},
		{adapter.ClassContentFilter, 400, http.StatusBadRequest, "content_filtered", "invalid_request_error", true},
	}
	for _, tt := range tests {
		t.Run(string(tt.class), func(t *testing.T) {
			ue := &adapter.Error{Class: tt.class, Status: tt.upstream, Message: vendorText}
			f := final(ue, explicitPlan("gpt-fast"), failedTrail(tt.class, tt.upstream))
			if f.Status != tt.status || string(f.Code) != tt.code || frontdoor.ErrorType(f.Status) != tt.typ {
				t.Fatalf("status %d code %s type %s, want %d %s %s", f.Status, f.Code, frontdoor.ErrorType(f.Status), tt.status, tt.code, tt.typ)
			}
			msg := f.Text("req-123")
			if !strings.Contains(msg, "(request id req-123)") {
				t.Errorf("no request id: %q", msg)
			}
			if tt.vendorPass {
				// The caller caused it: the vendor's words, scrubbed.
				if !strings.Contains(msg, "This model's maximum context length is 8192 tokens.") || !strings.Contains(msg, "Incorrect API key provided: [redacted].") {
					t.Errorf("vendor message not passed on scrubbed: %q", msg)
				}
				if strings.Contains(msg, "XYZW") || strings.Contains(msg, "sk-") {
					t.Errorf("key-like text reached the caller: %q", msg)
				}
				if !f.NoRetry {
					t.Error("a caller-caused failure must ask not to retry")
				}
				return
			}
			want := "the upstream for logic model gpt-fast failed: " + UpstreamCode(tt.class) + " (request id req-123)"
			if !strings.HasPrefix(msg, want) {
				t.Errorf("message %q\nwant prefix %q", msg, want)
			}
			for _, l := range leaks {
				if strings.Contains(msg, l) {
					t.Errorf("message %q contains %q", msg, l)
				}
			}
		})
	}
	if got := UpstreamCode(adapter.Class("something_new")); got != "upstream_unknown" {
		t.Errorf("an unknown class is %q", got)
	}
}

func TestCallerToldMidStreamPerClass(t *testing.T) {
	for _, tt := range []struct {
		err        error
		want       string
		vendorPass bool
	}{
		{&adapter.Error{Class: adapter.ClassServer, Message: vendorText}, "the upstream for logic model gpt-fast failed after the answer started: upstream_server (request id r1)", false},
		{&adapter.Error{Class: adapter.ClassAuth, Status: 401, Message: vendorText}, "the upstream for logic model gpt-fast failed after the answer started: upstream_auth (request id r1)", false},
		{&adapter.Error{Class: adapter.ClassRateLimited, Message: vendorText}, "the upstream for logic model gpt-fast failed after the answer started: upstream_rate_limited (request id r1)", false},
		{errors.New("read tcp 10.0.0.1:443: connection reset by peer " + vendorText), "the upstream for logic model gpt-fast failed after the answer started: upstream_network (request id r1)", false},
		{&adapter.Error{Class: adapter.ClassContentFilter, Message: vendorText}, "the vendor's content filter stopped the answer: Incorrect API key provided: [redacted]. This model's maximum context length is 8192 tokens. (request id r1)", true},
		{&adapter.Error{Class: adapter.ClassBadRequest, Message: vendorText}, "the vendor refused the request after the answer started: Incorrect API key provided: [redacted]. This model's maximum context length is 8192 tokens. (request id r1)", true},
	} {
		got := toldMidStream(tt.err, "gpt-fast").Text("r1")
		if got != tt.want {
			t.Errorf("%v:\n got %q\nwant %q", tt.err, got, tt.want)
		}
		if !tt.vendorPass && strings.Contains(got, "10.0.0.1") {
			t.Errorf("transport text reached the caller: %q", got)
		}
	}
}

func TestCallerToldNamesTheChainInOurWords(t *testing.T) {
	p := &Plan{Target: Target{Tier: config.TierStandard}}
	tr := &Trail{
		Skips: []Skip{{Model: "backup", Deployment: "pa/bk-a", Reason: reason.Reason{Code: reason.LoadUnavailable, Detail: "dial tcp 10.1.2.3:6379: refused"}}},
		Attempts: []Attempt{
			{Model: "main", Deployment: "main on pa (m-a)", Provider: "pa", Key: "sk-…AAAA", Outcome: "failed", Class: "auth", Status: 401, Reason: vendorText},
			{Model: "main", Deployment: "main on pa (m-a)", Provider: "pa", Key: "sk-…BBBB", Outcome: "failed", Class: "auth", Status: 401, Reason: vendorText},
			{Model: "main", Deployment: "main on pb (m-b)", Provider: "pb", Outcome: "skipped", Skip: &reason.Reason{Code: reason.BreakerOpen}},
			{Model: "canary", Deployment: "canary on pb (c-b)", Provider: "pb", Key: "sk-…CCCC", Outcome: "failed", Class: "server", Status: 503, Reason: "overloaded " + vendorText},
		},
	}
	f := final(&adapter.Error{Class: adapter.ClassServer, Status: 503, Message: "overloaded " + vendorText}, p, tr)
	got := f.Text("r2")
	want := "the upstream for logic model canary on tier standard failed: upstream_server (request id r2); the chain: " +
		"backup on pa/bk-a: skipped, load counter unavailable; main on pa/m-a: auth (HTTP 401) with 2 keys; " +
		"main on pb/m-b: skipped, breaker open; canary on pb/c-b: server (HTTP 503)"
	if got != want {
		t.Fatalf("\n got %q\nwant %q", got, want)
	}

	// Nothing to try, and a spent budget: the chain, no vendor words.
	nm := toldChain(ToldNoModel, p, &Trail{Skips: tr.Skips}, 0).Text("r3")
	if nm != "no model is available for tier standard (request id r3); the chain: backup on pa/bk-a: skipped, load counter unavailable" {
		t.Errorf("no model: %q", nm)
	}
	bs := toldChain(ToldBudgetSpent, explicitPlan("main"), tr, 3).Text("")
	if !strings.HasPrefix(bs, "the request's time budget ran out after 3 attempt(s) for logic model main; the chain: ") {
		t.Errorf("budget: %q", bs)
	}
	for _, s := range []string{nm, bs} {
		for _, l := range append(leaks, "10.1.2.3") {
			if strings.Contains(s, l) {
				t.Errorf("%q contains %q", s, l)
			}
		}
	}
	// A tier with no candidates says so.
	empty := &Plan{Target: Target{Tier: config.TierDeep}, Tier: &config.RTier{}, Group: &config.RGroup{Name: "retail"}}
	if got := toldChain(ToldNoModel, empty, &Trail{}, 0).Text(""); got != "no model is available for tier deep; tier deep of route group retail has no candidates" {
		t.Errorf("empty tier: %q", got)
	}
}

func TestCallerToldDimensionMismatchInOurWords(t *testing.T) {
	dm := &DimensionMismatch{Deployment: "emb on pa (e-a)", Model: "emb", Got: 1536, Want: 8}
	ue := &adapter.Error{Class: adapter.ClassServer, Message: dm.Error(), Err: dm}
	tr := &Trail{Attempts: []Attempt{{Model: "emb", Deployment: "emb on pa (e-a)", Provider: "pa", Key: "sk-…AAAA", Outcome: "failed", Class: "server", Reason: dm.Error()}}}
	got := final(ue, explicitPlan("emb"), tr).Text("r4")
	want := "the upstream for logic model emb failed: upstream_server (request id r4); deployment emb on pa (e-a) returned a 1536-dimensional vector for input 0; logic model emb expects 8; the chain: emb on pa/e-a: server"
	if got != want {
		t.Fatalf("\n got %q\nwant %q", got, want)
	}
}
