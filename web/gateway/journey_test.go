package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"switchyard/e2e/fakevendor"
	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/routing/limit"
	"switchyard/routing/reason"
	"switchyard/store/calllog"
	"switchyard/web/gateway/gatewaytest"
)

// reply is one answer as a test sees it, however it was obtained.
type journeyReply struct {
	status int
	header http.Header
	body   []byte
	trail  *routing.Trail   // only when the journey was called directly
	refuse *routing.Refusal // only when the journey was called directly
}

// via sends a chat request as the caller with key and returns the answer.
type via func(t *testing.T, e *gatewaytest.Env, key, body string) journeyReply

// overHTTP goes through the listener, echo and the data-plane handler.
func overHTTP(t *testing.T, e *gatewaytest.Env, key, body string) journeyReply {
	res, b := post(t, e, key, "/v1/chat/completions", body)
	return journeyReply{status: res.StatusCode, header: res.Header, body: b}
}

// direct calls routing.Journey without any HTTP framework, reading a
// stream the way the handler does.
func direct(t *testing.T, e *gatewaytest.Env, key, body string) journeyReply {
	t.Helper()
	a := e.GW.Journey.Serve(context.Background(), routing.Request{Endpoint: routing.EndpointChat, Path: "/v1/chat/completions",
		Authorization: "Bearer " + key, Body: strings.NewReader(body)})
	defer a.Done(nil)
	r := journeyReply{status: a.Status, header: a.Header, body: a.Body, trail: a.Trail, refuse: a.Refusal}
	if a.Stream != nil {
		var buf bytes.Buffer
		for {
			ev, err := a.Stream.Next()
			if err == io.EOF {
				break
			}
			buf.Write(ev)
		}
		r.body = buf.Bytes()
	}
	return r
}

// TestJourneyDirectAndOverHTTPAgree runs the failover, skip-reason and limit
// cases of the request journey twice — through HTTP and by calling the
// journey directly — and expects the same answers.
func TestJourneyDirectAndOverHTTPAgree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		send via
	}{{"http", overHTTP}, {"direct", direct}} {
		t.Run(tc.name, func(t *testing.T) {
			e := gatewaytest.New(t)
			key := chainWorld(t, e)
			_, limited := e.Build().Caller(config.Caller{Name: "limited", RouteGroup: "default",
				Limits: []config.TierLimit{{Tier: config.TierStandard, RPM: 1}}})
			e.Publish("limited caller")

			t.Run("failover", func(t *testing.T) {
				e.Fake.Reset()
				e.Fake.SetRules(fakevendor.Rule{Model: "up-primary", Fault: fakevendor.Fault{Status: 500}})
				r := tc.send(t, e, key, hello)
				if r.status != 200 || r.header.Get("X-Switchyard-Model") != "backup" || r.header.Get("X-Switchyard-Attempts") != "2" {
					t.Fatalf("failover: %d %v %s", r.status, r.header, r.body)
				}
				if r.trail != nil && (len(r.trail.Attempts) != 2 || r.trail.Attempts[0].Class != "server" || r.trail.Attempts[1].Outcome != "ok") {
					t.Fatalf("trail: %+v", r.trail.Attempts)
				}
			})

			t.Run("stream fails over before the first chunk", func(t *testing.T) {
				r := tc.send(t, e, key, `{"model":"standard","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
				if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" || r.header.Get("X-Switchyard-Model") != "backup" {
					t.Fatalf("stream: %d %v", r.status, r.header)
				}
				if !bytes.HasSuffix(r.body, []byte("data: [DONE]\n\n")) || !bytes.Contains(r.body, []byte(`"chat.completion.chunk"`)) {
					t.Fatalf("stream body: %s", r.body)
				}
			})

			t.Run("limit", func(t *testing.T) {
				e.Fake.Reset()
				if r := tc.send(t, e, limited, hello); r.status != 200 {
					t.Fatalf("first request: %d %s", r.status, r.body)
				}
				r := tc.send(t, e, limited, hello)
				code, msg := errCode(t, r.body)
				if r.status != http.StatusTooManyRequests || code != "rate_limited" || r.header.Get("Retry-After") == "" ||
					!strings.Contains(msg, "1 requests per minute") {
					t.Fatalf("second request: %d %s %q %v", r.status, code, msg, r.header)
				}
				if r.refuse != nil && (r.refuse.Limit != limit.KindRPM || r.refuse.Value != 1 || r.refuse.RetryAfter <= 0) {
					t.Fatalf("refusal: %+v", r.refuse)
				}
				if tc.name == "direct" && r.refuse == nil {
					t.Fatal("the direct journey did not name the refusing limit")
				}
			})

			t.Run("skip reasons", func(t *testing.T) {
				e.Fake.Reset()
				e.Fake.SetRules(fakevendor.Rule{Fault: fakevendor.Fault{Status: 401}})
				// The first request quarantines every key on the way...
				if r := tc.send(t, e, key, hello); r.status != http.StatusServiceUnavailable {
					t.Fatalf("all keys refused: %d %s", r.status, r.body)
				}
				// ...so the next one has nothing to try and says why.
				r := tc.send(t, e, key, hello)
				code, msg := errCode(t, r.body)
				if r.status != http.StatusServiceUnavailable || code != "no_available_model" ||
					!strings.Contains(msg, "primary on p1/up-primary: skipped, all keys quarantined") ||
					!strings.Contains(msg, "backup on p2/up-backup: skipped, all keys quarantined") {
					t.Fatalf("nothing to try: %d %s %q", r.status, code, msg)
				}
				if r.trail != nil {
					if len(r.trail.Skips) != 2 {
						t.Fatalf("skips: %+v", r.trail.Skips)
					}
					for _, s := range r.trail.Skips {
						if s.Reason.Code != reason.KeysQuarantined {
							t.Errorf("skip %s: %+v, want keys_quarantined", s.Model, s.Reason)
						}
					}
				}
				for _, id := range []int64{1, 2, 3} {
					_ = e.GW.Keys.Reenable(context.Background(), id)
				}
			})
		})
	}
}

// An SDK closes the connection as soon as it reads [DONE]; the request's
// context may then be cancelled before the journey's bookkeeping runs. A
// stream that was written whole is still a success: logged ok and stored
// for idempotent replay, not recorded as a client cancellation.
func TestStreamCompleteThenClientHangsUpIsStillOK(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := e.Simple()
	ctx, cancel := context.WithCancel(context.Background())
	a := e.GW.Journey.Serve(ctx, routing.Request{Endpoint: routing.EndpointChat, Path: "/v1/chat/completions",
		Authorization: "Bearer " + key, IdempotencyKey: "hang-up-after-done",
		Body: strings.NewReader(`{"model":"fast","stream":true,"messages":[{"role":"user","content":"hi"}]}`)})
	if a.Stream == nil {
		t.Fatalf("not a stream: %d %s", a.Status, a.Body)
	}
	var last []byte
	for {
		ev, err := a.Stream.Next()
		if err == io.EOF {
			break
		}
		last = append(last[:0], ev...)
	}
	if !bytes.Contains(last, []byte("[DONE]")) {
		t.Fatalf("the stream did not end with [DONE]: %q", last)
	}
	cancel() // the client hangs up after reading [DONE] ...
	a.Done(nil)
	// ... and the call is still a success.
	waitCallLogs(t, e, calllog.Filter{RequestID: a.RequestID}, 1)
	rows := rowsFor(t, e.Store.DB(), a.RequestID)
	if len(rows) != 1 || rows[0].Status.String != "ok" {
		t.Fatalf("call-log rows %+v, want one ok row", rows)
	}
	again := e.GW.Journey.Serve(context.Background(), routing.Request{Endpoint: routing.EndpointChat, Path: "/v1/chat/completions",
		Authorization: "Bearer " + key, IdempotencyKey: "hang-up-after-done",
		Body: strings.NewReader(`{"model":"fast","stream":true,"messages":[{"role":"user","content":"hi"}]}`)})
	defer again.Done(nil)
	if again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the complete stream was not stored for replay: %d %v", again.Status, again.Header)
	}
}
