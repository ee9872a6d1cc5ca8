package gateway_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"switchyard/routing/config"
	"switchyard/store/rows"
	"switchyard/web/gateway/gatewaytest"
)

// waitLiveKey waits until the instance's live key set holds key, with the
// terms ok accepts: the reload bound a key change takes.
func waitLiveKey(t *testing.T, e *gatewaytest.Env, key string, ok func(config.LiveKey) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, k := e.GW.Holder.Current().Authenticate(key); c != nil && ok(k) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the key never reached the instance's live key set")
}

func anyKey(config.LiveKey) bool { return true }

func keyOf(t *testing.T, e *gatewaytest.Env, caller string) rows.CallerKeyInfo {
	t.Helper()
	keys, err := e.Store.CallerKeys(context.Background(), caller)
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys of %s: %v", caller, err)
	}
	return keys[len(keys)-1]
}

// TestExpiredKeyIsToldExpired: a key past its expiry gets 401
// api_key_expired saying when it expired, not "invalid".
func TestExpiredKeyIsToldExpired(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	key := e.Simple()
	if res, b := post(t, e, key, "/v1/chat/completions", hello); res.StatusCode != 200 {
		t.Fatalf("fresh key: %d %s", res.StatusCode, b)
	}
	k := keyOf(t, e, "app")
	if _, err := e.Store.DB().Exec(`UPDATE caller_keys SET expires_at = '2026-01-02T03:04:05Z' WHERE id=$1`, k.ID); err != nil {
		t.Fatal(err)
	}
	waitLiveKey(t, e, key, func(k config.LiveKey) bool { return !k.ExpiresAt.IsZero() })
	res, b := post(t, e, key, "/v1/chat/completions", hello)
	code, msg := errCode(t, b)
	if res.StatusCode != 401 || code != "api_key_expired" || !strings.Contains(msg, "expired at 2026-01-02T03:04:05Z") || strings.Contains(msg, "invalid") {
		t.Fatalf("expired key: %d %s %q", res.StatusCode, code, msg)
	}
}

// TestKeyScopeRefusals: a key scoped to the fast tier and the chat door is
// refused (403 key_scope_denied, naming what it asked and what is allowed)
// for another tier, a logic model and another front door.
func TestKeyScopeRefusals(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t)
	e.Simple()
	key, _, err := e.Store.CreateCallerKeyWith(context.Background(), "app", rows.NewCallerKey{Name: "scoped", Owner: "team-a",
		Scope: config.KeyScope{Tiers: []config.TierName{config.TierFast}, Doors: []config.Door{config.DoorChat}}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	waitLiveKey(t, e, key, anyKey)
	client := sdk(e, key)
	ctx := context.Background()
	ask := func(model string) error {
		_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		return err
	}
	if err := ask("fast"); err != nil {
		t.Fatalf("in scope: %v", err)
	}
	for _, tc := range []struct{ model, want string }{
		{"standard", `tier "standard"; it allows tiers fast`},
		{"small", `logic model "small"; it allows tiers fast and logic models (none)`},
	} {
		var apiErr *openai.Error
		if err := ask(tc.model); !errors.As(err, &apiErr) || apiErr.StatusCode != 403 || apiErr.Code != "key_scope_denied" || !strings.Contains(apiErr.Message, tc.want) {
			t.Fatalf("%s: %v", tc.model, err)
		}
	}
	res, b := post(t, e, key, "/v1/responses", `{"model":"fast","input":"hi"}`)
	if code, msg := errCode(t, b); res.StatusCode != 403 || code != "key_scope_denied" || !strings.Contains(msg, `front door "responses"; it allows front doors chat_completions`) {
		t.Fatalf("front door: %d %s %q", res.StatusCode, code, msg)
	}
	// The model list shows only what the key may ask for.
	page, err := client.Models.List(ctx)
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != "fast" {
		t.Fatalf("models in scope: %+v %v", page, err)
	}
}

type shot struct {
	sent, done time.Time
	status     int
	code       string
}

// hammer sends chat requests with key until stop, from n goroutines.
func hammer(t *testing.T, e *gatewaytest.Env, key string, n int, stop time.Time, out *[]shot, mu *sync.Mutex, wg *sync.WaitGroup) {
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				s := shot{sent: time.Now()}
				res, b := post(t, e, key, "/v1/chat/completions", hello)
				s.done, s.status = time.Now(), res.StatusCode
				if s.status != 200 {
					s.code, _ = errCode(t, b)
				}
				mu.Lock()
				*out = append(*out, s)
				mu.Unlock()
			}
		}()
	}
}

// TestKeyRotationUnderLoad: while requests flow with the old key to two
// instances, rotating it with a grace period keeps the old key working on
// both until the grace instant and refuses it (401) from then on, and the
// new key has no failed request at any point.
func TestKeyRotationUnderLoad(t *testing.T) {
	t.Parallel()
	e := gatewaytest.New(t, gatewaytest.Options{KeyUseFlush: time.Hour})
	oldKey := e.Simple()
	e2 := e.Second(gatewaytest.Options{KeyUseFlush: time.Hour})
	old := keyOf(t, e, "app")
	var mu sync.Mutex
	var wg sync.WaitGroup
	var olds, news []shot
	for _, env := range []*gatewaytest.Env{e, e2} {
		hammer(t, env, oldKey, 2, time.Now().Add(6*time.Second), &olds, &mu, &wg)
	}
	time.Sleep(300 * time.Millisecond)
	rotated := time.Now()
	r, err := e.Store.RotateCallerKey(context.Background(), old.ID, 2*time.Second, "test")
	if err != nil {
		t.Fatal(err)
	}
	// The reload bound: the new key works once the instance has it.
	for _, env := range []*gatewaytest.Env{e, e2} {
		waitLiveKey(t, env, r.Plaintext, anyKey)
	}
	for _, env := range []*gatewaytest.Env{e, e2} {
		hammer(t, env, r.Plaintext, 2, time.Now().Add(4*time.Second), &news, &mu, &wg)
	}
	wg.Wait()

	var okInGrace, refusedAfter int
	for _, s := range olds {
		switch {
		case s.done.Before(r.RevokeAt):
			if s.status != 200 {
				t.Fatalf("old key refused before its grace ended: %+v (grace ends %s)", s, r.RevokeAt)
			}
			if s.sent.After(rotated) {
				okInGrace++
			}
		case !s.sent.Before(r.RevokeAt):
			if s.status != 401 || (s.code != "api_key_rotated" && s.code != "invalid_api_key") {
				t.Fatalf("old key after its grace: %+v", s)
			}
			refusedAfter++
		}
	}
	if okInGrace == 0 || refusedAfter == 0 {
		t.Fatalf("the load missed a phase: %d old-key successes in grace, %d refusals after", okInGrace, refusedAfter)
	}
	for _, s := range news {
		if s.status != 200 {
			t.Fatalf("new key failed: %+v", s)
		}
	}
	if len(news) == 0 {
		t.Fatal("no request with the new key")
	}
	// Last use: kept in memory, written by a flush.
	if err := e.GW.Uses.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	k := keyOf(t, e, "app")
	if k.ID != r.New.ID || k.LastUsedAt == nil || k.LastUsedAddr == nil || *k.LastUsedAddr != "127.0.0.1" || k.RotatedFrom == nil || *k.RotatedFrom != old.ID {
		t.Fatalf("new key after the load: %+v", k)
	}
}
