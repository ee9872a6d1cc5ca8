package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/storetest"
)

// chatWith sends one chat completion with key and answers the status and body.
func chatWith(t *testing.T, base, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"fast","messages":[{"role":"user","content":"hello"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// waitChat retries until a request with key answers want (instances pick
// up a publish or a key change within the reload bound).
func waitChat(t *testing.T, base, key string, want int, what string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := chatWith(t, base, key)
		if code == want {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d %s, want %d", what, code, body, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRollbackSuspendsAndRestoresACallersKey: as an operator would. A key
// made on the caller's page works at once and leaves the draft clean; the
// caller carries traffic; the rollback to a version without it is
// previewed on a publish page that names the caller and its traffic; once
// published, the key is refused with a reason naming the absent caller;
// rolling forward makes the same key work again; revoking it leaves the
// draft clean and refuses it at once.
func TestRollbackSuspendsAndRestoresACallersKey(t *testing.T) {
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	st := seedPublished(t, dsn, "http://"+fakeAddr) // v1: caller app only
	ctx := context.Background()
	if _, err := st.CreateCaller(ctx, config.Caller{Name: "reports", RouteGroup: "main", PriorityClass: config.ClassInteractive, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "seed", Message: "reports joins", Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }}); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dsn)
	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.p.OnDialog(func(d playwright.Dialog) { _ = d.Accept() })
	u.login("admin", s.Admin)

	// A key made on the caller's page works at once; the draft stays live.
	u.goto_("/callers")
	u.click(u.id("caller-reports").GetByTestId("caller-link"), "open caller reports")
	u.fill(u.id("caller-key-name"), "nightly", "key name")
	u.click(u.id("caller-key-create"), "create key")
	key := strings.TrimSpace(u.text(u.id("caller-key-plaintext"), "new key"))
	if n, _ := u.id("draft-banner").Count(); n != 0 {
		t.Fatal("making a key made the draft differ from live")
	}
	for range 3 {
		waitChat(t, s.URL, key, http.StatusOK, "the new key")
	}

	// The rollback to v1 is previewed on a publish page naming reports.
	u.goto_("/versions/1")
	u.click(u.id("rollback-preview-open"), "preview the rollback")
	u.see(u.id("rollback-preview"), "the rollback preview")
	u.see(u.id("impact"), "the impact preview")
	row := u.id("removed-reports")
	deadline := time.Now().Add(10 * time.Second)
	for got := strings.TrimSpace(u.text(row.GetByTestId("removed-requests"), "reports' traffic")); got != "3"; got = strings.TrimSpace(u.text(row.GetByTestId("removed-requests"), "reports' traffic")) {
		if time.Now().After(deadline) {
			t.Fatalf("reports' traffic in the preview: %q, want 3", got)
		}
		time.Sleep(300 * time.Millisecond) // the call log is written behind the answer
		u.goto_("/versions/1/rollback")
	}
	if keys := u.text(row.GetByTestId("removed-keys"), "reports' keys"); !strings.Contains(keys, key[:len(store.CallerKeyPrefix)+4]) || !strings.Contains(keys, "nightly") {
		t.Fatalf("suspended keys: %q", keys)
	}
	if n, _ := st.LatestVersionNumber(ctx); n != 2 {
		t.Fatalf("the preview published: live v%d", n)
	}
	u.fill(u.id("rollback-message"), "reports misbehaves", "rollback message")
	u.click(u.id("rollback-submit"), "publish the rollback")
	u.see(u.id("version-3"), "the rollback in history")

	body := waitChat(t, s.URL, key, http.StatusUnauthorized, "the key after the rollback")
	if !strings.Contains(body, `caller \"reports\" is absent from the live version 3`) {
		t.Fatalf("401 reason: %s", body)
	}

	// Rolling forward brings reports back, and its key with it.
	u.goto_("/versions/2/rollback")
	u.see(u.id("rollback-removes-none"), "nothing removed")
	u.fill(u.id("rollback-message"), "reports is fixed", "roll-forward message")
	u.click(u.id("rollback-submit"), "publish the roll-forward")
	u.see(u.id("version-4"), "the roll-forward in history")
	waitChat(t, s.URL, key, http.StatusOK, "the key after rolling forward")

	// Revoking takes effect at once and leaves the draft alone.
	u.goto_("/callers")
	u.click(u.id("caller-reports").GetByTestId("caller-link"), "open caller reports")
	u.see(u.id("caller-key-created"), "the key's audit")
	u.click(u.p.Locator(`[data-testid^="caller-key-revoke-"]`).First(), "revoke the key")
	u.see(u.id("caller-keys-notice"), "revoked")
	if n, _ := u.id("draft-banner").Count(); n != 0 {
		t.Fatal("revoking a key made the draft differ from live")
	}
	if body := waitChat(t, s.URL, key, http.StatusUnauthorized, "the revoked key"); !strings.Contains(body, "invalid or revoked") {
		t.Fatalf("revoked key reason: %s", body)
	}
}
