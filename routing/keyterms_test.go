package routing

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
)

type useRec struct {
	mu   sync.Mutex
	uses map[int64]string
}

func (u *useRec) CallerKeyUsed(id int64, _ time.Time, addr string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.uses[id] = addr
}

// TestKeyTermsInTheJourney: the data plane checks a key's expiry, its
// rotation grace and its scope from the snapshot alone, tells each refusal
// by its code, and records the use of keys that authenticate.
func TestKeyTermsInTheJourney(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	keys := config.LiveKeys{
		config.HashCallerKey("sy-plain"):   {ID: 1, Caller: "c"},
		config.HashCallerKey("sy-expired"): {ID: 2, Caller: "c", ExpiresAt: now.Add(-time.Hour)},
		config.HashCallerKey("sy-grace"):   {ID: 3, Caller: "c", RevokeAt: now.Add(time.Second)},
		config.HashCallerKey("sy-rotated"): {ID: 4, Caller: "c", RevokeAt: now},
		config.HashCallerKey("sy-scoped"):  {ID: 5, Caller: "c", Scope: config.KeyScope{Tiers: []config.TierName{config.TierFast}, Doors: []config.Door{config.DoorChat}}},
	}
	rt := world(t, nil).WithCallerKeys(keys)
	uses := &useRec{uses: map[int64]string{}}
	j := &Journey{Live: staticLive{rt}, Exec: &Executor{Adapters: map[config.Protocol]adapter.Adapter{config.ProtocolOpenAI: stubAdapter{}}, Now: func() time.Time { return now }},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: func() time.Time { return now }, KeyUse: uses}
	serve := func(ep Endpoint, key, model string) *Answer {
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
		if ep == EndpointEmbeddings {
			body = `{"model":"` + model + `","input":"hi"}`
		}
		a := j.Serve(context.Background(), Request{Endpoint: ep, Path: "/v1/x", Authorization: "Bearer " + key, ClientAddr: "192.0.2.7:5000",
			Body: strings.NewReader(body), BodyLen: int64(len(body))})
		a.Done(nil)
		return a
	}
	for _, tc := range []struct {
		name, key, model string
		ep               Endpoint
		status           int
		code, says       string
	}{
		{"plain", "sy-plain", "standard", EndpointChat, 200, "", ""},
		{"expired", "sy-expired", "standard", EndpointChat, 401, "api_key_expired", "API key expired at 2026-12-07T11:00:00Z"},
		{"in grace", "sy-grace", "standard", EndpointChat, 200, "", ""},
		{"grace over", "sy-rotated", "standard", EndpointChat, 401, "api_key_rotated", "grace period ended at 2026-12-07T12:00:00Z"},
		{"scope: tier", "sy-scoped", "fast", EndpointChat, 200, "", ""},
		{"scope: other tier", "sy-scoped", "deep", EndpointChat, 403, "key_scope_denied", `tier "deep"; it allows tiers fast and logic models (none)`},
		{"scope: logic model", "sy-scoped", "main", EndpointChat, 403, "key_scope_denied", `logic model "main"`},
		{"scope: front door", "sy-scoped", "fast", EndpointEmbeddings, 403, "key_scope_denied", `front door "embeddings"; it allows front doors chat_completions`},
		{"unknown", "sy-nobody", "standard", EndpointChat, 401, "invalid_api_key", "invalid or revoked"},
	} {
		a := serve(tc.ep, tc.key, tc.model)
		body := strings.ReplaceAll(string(a.Body), `\"`, `"`)
		if a.Status != tc.status || !strings.Contains(body, tc.code) || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %s", tc.name, a.Status, a.Body)
		}
		if tc.status == http.StatusUnauthorized && a.Header.Get("x-should-retry") != "false" {
			t.Errorf("%s: a key refusal invites a retry", tc.name)
		}
	}
	if len(uses.uses) != 3 || uses.uses[1] != "192.0.2.7:5000" || uses.uses[2] != "" || uses.uses[4] != "" {
		t.Fatalf("recorded uses %v: want the keys that authenticated only", uses.uses)
	}
}
