package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/store/storetest"
)

// TestAgentModelNameServedThroughAnAlias: Claude Code asks for
// claude-opus-5-5, which the gateway does not know. The operator adds the
// alias claude-opus-* → deep on the route group page, publishes it, and the
// same request is answered by the deep tier; its call log shows the alias.
func TestAgentModelNameServedThroughAnAlias(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	seed := seedPublish(t, dsn, "http://"+fakeAddr, true)
	s := startServer(t, dsn)

	ask := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"claude-opus-5-5","messages":[{"role":"user","content":"refactor this"}]}`))
		req.Header.Set("Authorization", "Bearer "+seed.appKey)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := ask(); res.StatusCode != http.StatusNotFound {
		t.Fatalf("before the alias: %d, want 404 model_not_found", res.StatusCode)
	}

	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)
	u.goto_("/route-groups")
	aliases := u.id("aliases-main")
	u.see(aliases.GetByTestId("aliases-empty"), "no aliases yet")
	u.click(aliases.GetByTestId("alias-add").Locator("summary"), "open the add form")
	u.fill(aliases.GetByTestId("alias-add-pattern"), "claude opus", "a pattern with a space")
	u.selectOption(aliases.GetByTestId("alias-add-target"), "tier:deep", "served by deep")
	u.click(aliases.GetByTestId("alias-add-submit"), "add the alias")
	u.see(aliases.GetByTestId("error-pattern"), "the pattern refused next to its field")
	u.fill(aliases.GetByTestId("alias-add-pattern"), "claude-opus-*", "the pattern")
	u.click(aliases.GetByTestId("alias-add-submit"), "add the alias")
	row := aliases.GetByTestId("alias-row")
	u.see(row, "the alias in the list")
	pattern, _ := row.GetAttribute("data-pattern")
	target := strings.Join(strings.Fields(u.text(row.GetByTestId("alias-target"), "alias target")), " ")
	if pattern != "claude-opus-*" || target != "→ tier deep" {
		t.Fatalf("alias row: %q %q", pattern, target)
	}
	u.see(u.id("draft-banner"), "the draft differs from live")

	// Dry-run and publish, as any change.
	u.click(u.id("nav-dryrun"), "open dry-run")
	u.fill(u.id("publish-message"), "aliases for coding agents", "publish message")
	u.click(u.id("publish-submit"), "publish")
	u.see(u.id("version-2"), "version 2 in history")

	// Every instance switches within the reload bound: the request is now
	// answered by the deep tier.
	var res *http.Response
	for deadline := time.Now().Add(5 * time.Second); ; {
		if res = ask(); res.StatusCode == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Switchyard-Tier") != "deep" || res.Header.Get("X-Switchyard-Model") != "big" {
		t.Fatalf("after the publish: %d tier %q model %q", res.StatusCode, res.Header.Get("X-Switchyard-Tier"), res.Header.Get("X-Switchyard-Model"))
	}
	id := res.Header.Get("X-Request-Id")
	db := s.sql(t)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var alias string
		_ = db.QueryRowContext(context.Background(), `SELECT coalesce(model_alias, '') FROM call_logs WHERE request_id = $1`, id).Scan(&alias)
		if alias == "claude-opus-*" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("call log of %s: model_alias %q", id, alias)
		}
		time.Sleep(50 * time.Millisecond)
	}
	u.goto_("/call-logs/" + id)
	got := strings.Join(strings.Fields(u.text(u.id("calllog-field-requested-model"), "requested model")), " ")
	if got != "claude-opus-5-5 → alias claude-opus-* → deep" {
		t.Fatalf("call log detail: %q", got)
	}
}
