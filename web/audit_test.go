package web_test

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/audit"
	"switchyard/routing/config"
	"switchyard/store/rows"
	"switchyard/web/webtest"
)

// TestEveryChangingRouteIsAudited: a console or admin-API route that is
// not a plain read has a row in audit.Routes (recorded, or marked as
// changing nothing), and every row of the table is a real route.
func TestEveryChangingRouteIsAudited(t *testing.T) {
	env := webtest.New(t)
	routes := map[string]bool{}
	for _, r := range env.Echo.Routes() {
		routes[r.Method+" "+r.Path] = true
		console, api := consoleRoute(r)
		if r.Path == "/login" || r.Path == "/logout" {
			console = true
		}
		if (!console && !api) || r.Method == http.MethodGet || r.Method == echo.RouteNotFound {
			continue
		}
		if !audit.Listed(r.Method, r.Path) {
			t.Errorf("%s %s changes something but has no row in handlers/audit.Routes", r.Method, r.Path)
		}
	}
	for k := range audit.Routes {
		if !routes[k] {
			t.Errorf("audit.Routes lists %s, which is no route", k)
		}
	}
}

// auditRows are every row, oldest first.
func auditRows(t *testing.T, env *webtest.Env) []rows.AuditEntry {
	t.Helper()
	list, err := env.Store.AuditLog(context.Background(), rows.AuditFilter{Oldest: true})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// Each action category the audit covers produces exactly one row with its
// code, actor and outcome; a configuration change carries the draft's
// lines before and after; no password, provider key or token is in any
// row; and the chain of the rows is whole.
func TestAuditRecordsEachActionOnce(t *testing.T) {
	env := webtest.New(t)
	ctx := context.Background()
	admin := env.Login(t, "root", rows.RoleAdmin)
	viewer := env.Login(t, "peek", rows.RoleViewer)
	anon := env.Anonymous(t)
	secrets := []string{"password-for-tests", "wrong-password-XYZ", "watcher-secret-pw1", "reset-secret-pw22", "sk-live-SECRET-0123456789"}

	userID := func(name string) string {
		us, _ := env.Store.Users(ctx)
		for _, u := range us {
			if u.Username == name {
				return strconv.FormatInt(u.ID, 10)
			}
		}
		t.Fatalf("no user %s", name)
		return ""
	}
	var providerID, tokenID string
	steps := []struct {
		name    string
		do      func()
		action  rows.AuditAction
		actor   string
		outcome rows.AuditOutcome
		object  string // want in the row's object kind, id or name
	}{
		{"failed sign-in", func() { anon.PostForm("/login", url.Values{"username": {"root"}, "password": {"wrong-password-XYZ"}}) }, "session.sign_in", "root", rows.OutcomeRefused, "root"},
		{"user created", func() {
			admin.PostForm("/settings/users", url.Values{"username": {"watcher"}, "password": {"watcher-secret-pw1"}, "role": {"viewer"}})
		}, "user.create", "root", rows.OutcomeOK, "watcher"},
		{"role changed", func() { admin.PostForm("/settings/users/"+userID("watcher")+"/role", url.Values{"role": {"admin"}}) }, "user.role", "root", rows.OutcomeOK, "user"},
		{"password reset", func() {
			admin.PostForm("/settings/users/"+userID("watcher")+"/password", url.Values{"password": {"reset-secret-pw22"}})
		}, "user.password_reset", "root", rows.OutcomeOK, ""},
		{"user disabled", func() { admin.PostForm("/settings/users/"+userID("watcher")+"/disable", nil) }, "user.disable", "root", "", ""},
		{"lockout cleared", func() {
			admin.PostForm("/settings/lockouts/clear", url.Values{"kind": {"user"}, "subject": {"watcher"}})
		}, "lockout.clear", "root", "", ""},
		{"token created", func() {
			_, doc := admin.PostForm("/settings/tokens", url.Values{"token_name": {"ci"}, "token_role": {"admin"}})
			secrets = append(secrets, strings.TrimSpace(webtest.TestID(doc, "token-plaintext").Text()))
			toks, _ := env.Store.AdminTokens(ctx)
			tokenID = strconv.FormatInt(toks[0].ID, 10)
		}, "admin_token.create", "root", rows.OutcomeOK, "ci"},
		{"token revoked", func() { admin.PostForm("/settings/tokens/"+tokenID+"/revoke", nil) }, "admin_token.revoke", "root", rows.OutcomeOK, ""},
		{"provider created", func() {
			admin.PostForm("/providers", url.Values{"name": {"vendor-a"}, "protocol": {"openai"}, "base_url": {"https://vendor.test/v1"}, "timeout_ms": {"60000"}, "enabled": {"on"}})
			snap, _, _ := env.Store.Draft(ctx)
			providerID = strconv.FormatInt(snap.Providers[0].ID, 10)
		}, "provider.create", "root", rows.OutcomeOK, "vendor-a"},
		{"provider key added", func() {
			admin.PostForm("/providers/"+providerID+"/keys", url.Values{"label": {"main"}, "secret": {"sk-live-SECRET-0123456789"}})
		}, "provider_key.create", "root", rows.OutcomeOK, "main"},
		{"viewer refused", func() { viewer.PostForm("/providers/"+providerID+"/delete", nil) }, "provider.delete", "peek", rows.OutcomeRefused, "provider"},
		{"publish", func() { admin.PostForm("/publish", url.Values{"message": {"first"}}) }, "config.publish", "root", "", ""},
		{"export", func() { admin.Get("/config/export") }, "config.export", "root", rows.OutcomeOK, ""},
		{"sign-out", func() { viewer.PostForm("/logout", nil) }, "session.sign_out", "", rows.OutcomeOK, ""},
	}
	for _, s := range steps {
		before := len(auditRows(t, env))
		s.do()
		list := auditRows(t, env)
		if len(list) != before+1 {
			t.Errorf("%s: %d new rows, want 1", s.name, len(list)-before)
			continue
		}
		e := list[len(list)-1]
		if e.Action != s.action || e.Actor != s.actor || (s.outcome != "" && e.Outcome != s.outcome) || e.Addr == "" {
			t.Errorf("%s: row %+v, want %s by %q, %s", s.name, e, s.action, s.actor, s.outcome)
		}
		if s.object != "" && e.ObjectKind != s.object && e.ObjectID != s.object && e.ObjectName != s.object {
			t.Errorf("%s: object %s/%s/%s, want %s", s.name, e.ObjectKind, e.ObjectID, e.ObjectName, s.object)
		}
	}

	list := auditRows(t, env)
	var created *rows.AuditEntry
	for i := range list {
		if list[i].Action == "provider.create" {
			created = &list[i]
		}
	}
	if created == nil || !strings.Contains(created.Detail.After, "name: vendor-a") || strings.Contains(created.Detail.Before, "vendor-a") {
		t.Errorf("the provider's creation has no after: %+v", created)
	}
	var dump string
	if err := env.Store.DB().QueryRowContext(ctx, `SELECT string_agg(row_to_json(a)::text, E'\n') FROM audit_log a`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if s == "" || strings.Contains(dump, s) {
			t.Errorf("a secret %q is in the audit trail (or was not captured)", s)
		}
	}
	if chk, err := env.Store.CheckAudit(ctx, nil); err != nil || chk.Break != nil || chk.Checked != int64(len(list)) {
		t.Fatalf("chain: %+v, %v", chk, err)
	}
}

// The admin API records its changes by token, and exports the trail as
// JSON lines or CSV, oldest first, to admin tokens only.
func TestAuditAdminAPI(t *testing.T) {
	env := webtest.New(t)
	ctx := context.Background()
	tok, _, err := env.Store.CreateAdminToken(ctx, "ci", rows.RoleAdmin, "test")
	if err != nil {
		t.Fatal(err)
	}
	read, _, _ := env.Store.CreateAdminToken(ctx, "reader", rows.RoleViewer, "test")
	call := func(method, path, token, body string) (int, string) {
		req, _ := http.NewRequest(method, env.Server.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, res.Body)
		return res.StatusCode, b.String()
	}
	if code, body := call("POST", "/admin/api/tenants", tok, `{"name":"payments"}`); code != http.StatusCreated {
		t.Fatalf("create tenant: %d %s", code, body)
	}
	call("POST", "/admin/api/tenants", "sya-not-a-token", `{"name":"x"}`)
	if code, _ := call("GET", "/admin/api/audit", read, ""); code != http.StatusForbidden {
		t.Errorf("a viewer token exported the audit trail: %d", code)
	}
	code, body := call("GET", "/admin/api/audit?format=jsonl", tok, "")
	lines := strings.Split(strings.TrimSpace(body), "\n")
	if code != http.StatusOK || len(lines) != 3 || !strings.Contains(lines[0], `"action":"tenant.create"`) || !strings.Contains(lines[0], `"actor":"token:ci"`) ||
		!strings.Contains(lines[1], `"outcome":"refused"`) || !strings.Contains(lines[2], `"action":"audit.export"`) || !strings.Contains(lines[2], `"actor":"token:reader"`) {
		t.Fatalf("jsonl export %d:\n%s", code, body)
	}
	code, body = call("GET", "/admin/api/audit?format=csv&action=tenant.create", tok, "")
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || code != http.StatusOK || len(recs) != 3 || recs[0][0] != "id" || recs[1][7] != "1" || !strings.Contains(recs[1][15], "name: payments") {
		t.Fatalf("csv export %d (%v):\n%s", code, err, body)
	}
	if code, _ := call("GET", "/admin/api/audit?since=yesterday", tok, ""); code != http.StatusBadRequest {
		t.Errorf("a bad since: %d", code)
	}
}

// seedRoutable fills the draft with a provider (its key secret), a model,
// a route group and a caller, so it publishes.
func seedRoutable(t *testing.T, env *webtest.Env, secret string) (callerID int64) {
	t.Helper()
	st, ctx := env.Store, t.Context()
	must := func(id int64, err error) int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	pid := must(st.CreateProvider(ctx, config.Provider{Name: "openai", Protocol: config.ProtocolOpenAI, BaseURL: "https://api.openai.com/v1", Enabled: true, TimeoutMS: 30000}))
	if _, err := st.AddProviderKey(ctx, pid, "main", secret); err != nil {
		t.Fatal(err)
	}
	mid := must(st.CreateLogicModel(ctx, config.LogicModel{Code: "small", Kind: config.KindChat}))
	must(st.CreateDeployment(ctx, mid, config.Deployment{Provider: "openai", UpstreamModel: "gpt-4o-mini", Weight: 100, Enabled: true}))
	must(st.CreateRouteGroup(ctx, config.RouteGroup{Name: "default"}))
	snap, _, _ := st.Draft(ctx)
	for _, tr := range snap.RouteGroups[0].Tiers {
		must(st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: "small", Weight: 100}))
	}
	return must(st.CreateCaller(ctx, config.Caller{Name: "app", RouteGroup: "default", PriorityClass: config.ClassInteractive, Enabled: true}))
}

// Caller keys, publish, import and rollback are one row each; the caller
// key's plaintext and the provider key's secret are in none.
func TestAuditRecordsKeysPublishImportRollback(t *testing.T) {
	env := webtest.New(t)
	const providerSecret = "sk-provider-SECRET-9876543210"
	callerID := seedRoutable(t, env, providerSecret)
	admin := env.Login(t, "root", rows.RoleAdmin)
	var callerKey string
	last := func() rows.AuditEntry {
		list := auditRows(t, env)
		return list[len(list)-1]
	}
	_, doc := admin.PostForm("/callers/"+strconv.FormatInt(callerID, 10)+"/keys", url.Values{"name": {"ci"}})
	callerKey = strings.TrimSpace(webtest.TestID(doc, "caller-key-plaintext").Text())
	if e := last(); e.Action != "caller_key.create" || e.ObjectName != "ci" || !strings.HasPrefix(e.Detail.Note, "key #") || callerKey == "" {
		t.Fatalf("caller key created: %+v (key %q)", e, callerKey)
	}
	keys, _ := env.Store.CallerKeys(t.Context(), "app")
	admin.PostForm("/caller-keys/"+strconv.FormatInt(keys[0].ID, 10)+"/revoke", nil)
	if e := last(); e.Action != "caller_key.revoke" || e.Outcome != rows.OutcomeOK {
		t.Fatalf("caller key revoked: %+v", e)
	}
	admin.PostForm("/publish", url.Values{"message": {"first"}})
	if e := last(); e.Action != "config.publish" || e.Outcome != rows.OutcomeOK || !strings.Contains(e.Detail.Note, "version 1") {
		t.Fatalf("published: %+v", e)
	}
	_, _, text := admin.GetRaw("/config/export")
	text = strings.Replace(text, "tenants: []", "tenants:\n  - name: imported-team", 1)
	before := len(auditRows(t, env))
	admin.PostForm("/config/import/apply", url.Values{"text": {text}})
	if e, n := last(), len(auditRows(t, env)); n != before+1 || e.Action != "config.import" || e.Outcome != rows.OutcomeOK || !strings.Contains(e.Detail.After, "imported-team") {
		t.Fatalf("imported (%d rows): %+v", n-before, e)
	}
	admin.PostForm("/publish", url.Values{"message": {"second"}})
	admin.PostForm("/versions/1/rollback", url.Values{"message": {"back"}})
	if e := last(); e.Action != "config.rollback" || e.ObjectID != "1" || e.Outcome != rows.OutcomeOK || !strings.Contains(e.Detail.Before, "imported-team") {
		t.Fatalf("rolled back: %+v", e)
	}
	var dump string
	if err := env.Store.DB().QueryRowContext(t.Context(), `SELECT string_agg(row_to_json(a)::text, E'\n') FROM audit_log a`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{providerSecret, callerKey, "password-for-tests"} {
		if strings.Contains(dump, s) {
			t.Errorf("the secret %q is in the audit trail", s)
		}
	}
}
