package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"switchyard/routing/alert"
	"switchyard/store/storetest"
	"switchyard/web/worker"
)

// findings answers the budget rules with what holds now.
type findings struct {
	mu  sync.Mutex
	now []alert.Finding
}

func (f *findings) set(fs ...alert.Finding) { f.mu.Lock(); f.now = fs; f.mu.Unlock() }

func (f *findings) Findings(_ context.Context, r alert.Rule) ([]alert.Finding, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Kind != alert.KindBudget || r.Params.Percent != 80 {
		return nil, nil
	}
	return f.now, nil
}

// A webhook that fails gets the message again after the back-off, once it
// answers; a finding that keeps holding sends nothing more; its end sends
// one resolution.
func TestAlerterRetriesThenDeliversOnce(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	var mu sync.Mutex
	var got []alert.Payload
	failures := 1
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if failures > 0 {
			failures--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var p alert.Payload
		_ = json.Unmarshal(b, &p)
		got = append(got, p)
	}))
	defer hook.Close()
	if _, err := st.CreateAlertChannel(ctx, "hook", alert.ShapeGeneric, hook.URL); err != nil {
		t.Fatal(err)
	}
	src := &findings{}
	a := &worker.Alerter{Store: st, Source: src}
	src.set(alert.Finding{Subject: alert.Subject{Kind: alert.SubjectCaller, Name: "app"}, Value: 84})

	now := time.Now()
	if fired, _, err := a.Pass(ctx, now); err != nil || fired != 1 {
		t.Fatalf("pass: fired %d (%v)", fired, err)
	}
	if sent, failed, err := a.Deliver(ctx, now); err != nil || sent != 0 || failed != 1 {
		t.Fatalf("first delivery: sent %d failed %d (%v)", sent, failed, err)
	}
	if sent, failed, _ := a.Deliver(ctx, now.Add(time.Second)); sent+failed != 0 {
		t.Fatal("retried before the back-off")
	}
	later := now.Add(alert.Backoff(1) + time.Second)
	if fired, _, _ := a.Pass(ctx, later); fired != 0 {
		t.Fatal("fired again while the finding holds")
	}
	if sent, _, _ := a.Deliver(ctx, later); sent != 1 {
		t.Fatalf("after the back-off: sent %d", sent)
	}
	src.set()
	if _, resolved, _ := a.Pass(ctx, later.Add(time.Second)); resolved != 1 {
		t.Fatal("no resolution")
	}
	_, _, _ = a.Deliver(ctx, later.Add(time.Second))
	_, _, _ = a.Deliver(ctx, later.Add(time.Hour))
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Status != alert.EventFiring || got[0].Subject.Name != "app" || got[1].Status != alert.EventResolved || got[0].DedupKey == got[1].DedupKey {
		t.Fatalf("messages: %+v", got)
	}
}
