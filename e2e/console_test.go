package e2e

import (
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// field is the input or select inside a components.Field wrapper.
func (u *ui) field(name string) playwright.Locator {
	return u.p.Locator(`[data-testid="field-` + name + `"] input, [data-testid="field-` + name + `"] select, [data-testid="field-` + name + `"] textarea`).First()
}

func (u *ui) addProvider(name, baseURL string, keys ...string) {
	u.t.Helper()
	u.goto_("/providers")
	u.click(u.id("provider-new"), "add provider")
	u.fill(u.field("name"), name, "provider name")
	u.selectOption(u.field("protocol"), "openai", "protocol")
	u.fill(u.field("base_url"), baseURL, "base URL")
	u.click(u.id("provider-save"), "save provider")
	panel := u.id("provider-" + name)
	u.see(panel, "provider panel "+name)
	for i, k := range keys {
		u.fill(panel.GetByTestId("key-secret"), k, "key secret")
		u.fill(panel.GetByTestId("key-label"), "key "+string(rune('A'+i)), "key label")
		u.click(panel.GetByTestId("key-add"), "add key")
		u.see(panel.Locator(`td.mono:has-text("`+k[len(k)-4:]+`")`), "fingerprint of key "+k[len(k)-4:])
	}
}

func (u *ui) addDeployment(model, provider, upstream, weight string) {
	u.t.Helper()
	u.goto_("/logic-models")
	u.click(u.id("model-"+model).GetByTestId("deployment-new"), "new deployment")
	u.selectOption(u.field("provider"), provider, "deployment provider")
	u.fill(u.id("deployment-upstream-model"), upstream, "upstream model")
	u.fill(u.id("deployment-form-weight"), weight, "weight")
	u.click(u.id("deployment-save"), "save deployment")
	u.see(u.id("model-"+model), "model panel")
}

func TestConsoleBuildsTheWholeConfiguration(t *testing.T) {
	s := startServer(t, "")
	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)

	// A provider with two keys, and a second provider.
	u.addProvider("vendor-a", s.FakeURL+"/v1", "sk-vendor-a-secret-key-0001", "sk-vendor-a-secret-key-0002")
	u.addProvider("vendor-b", s.FakeURL+"/v1", "sk-vendor-b-secret-key-0003")
	html, _ := u.p.Content()
	if strings.Contains(html, "secret-key-0001") {
		t.Fatal("a provider secret is shown in the console")
	}

	// A logic model with two deployments weighted 70/30 on two providers.
	u.goto_("/logic-models")
	u.click(u.id("model-new"), "new logic model")
	u.fill(u.id("model-code"), "chat-main", "code")
	u.click(u.id("model-save"), "save model")
	u.see(u.id("model-chat-main"), "the new logic model")
	u.addDeployment("chat-main", "vendor-a", "fake-a", "70")
	u.addDeployment("chat-main", "vendor-b", "fake-b", "30")
	if got := strings.TrimSpace(u.text(u.id("model-chat-main").GetByTestId("weight-sum-value"), "weight sum")); got != "100" {
		t.Fatalf("weight sum %q", got)
	}

	// A route group with candidates in all three tiers.
	u.goto_("/route-groups")
	u.click(u.id("group-new"), "new group")
	u.fill(u.id("group-name"), "main", "group name")
	u.click(u.id("group-save"), "save group")
	for _, tier := range []string{"fast", "standard", "deep"} {
		tierBox := u.id("tier-main-" + tier)
		u.see(tierBox, "tier "+tier)
		if open, _ := tierBox.GetByTestId("cand-add-" + tier).GetAttribute("open"); open == "" {
			if ok, _ := tierBox.GetByTestId("cand-add-model").IsVisible(); !ok {
				u.click(tierBox.GetByTestId("cand-add-"+tier).Locator("summary"), "open add candidate "+tier)
			}
		}
		u.selectOption(tierBox.GetByTestId("cand-add-model"), "chat-main", "candidate model")
		u.click(tierBox.GetByTestId("cand-add-submit"), "add candidate "+tier)
		u.see(u.id("cand-main-"+tier+"-chat-main"), "candidate tag in "+tier)
	}
	u.see(u.id("same-models-warning"), "same models warning (all three tiers equal)")

	// A caller with quotas and an API key.
	u.goto_("/callers")
	u.click(u.id("caller-new"), "new caller")
	u.fill(u.id("caller-name"), "contracts", "caller name")
	u.selectOption(u.field("route_group"), "main", "route group")
	u.fill(u.field("limits.fast.rpm"), "120", "fast rpm")
	u.fill(u.field("limits.standard.tpm"), "50000", "standard tpm")
	u.fill(u.field("limits.deep.daily_tokens"), "2000000", "deep daily tokens")
	u.fill(u.id("caller-budget-input"), "300", "budget")
	u.click(u.id("caller-save"), "save caller")
	u.see(u.id("caller-detail"), "caller detail")
	u.click(u.id("caller-key-create"), "create key")
	key := strings.TrimSpace(u.text(u.id("caller-key-plaintext"), "plaintext key"))
	if !strings.HasPrefix(key, "sy-") {
		t.Fatalf("caller key %q", key)
	}

	// Reload every page and find all of it.
	u.goto_("/providers")
	u.see(u.id("provider-vendor-a"), "provider a after reload")
	if n, _ := u.id("provider-vendor-a").Locator("tbody tr").Count(); n != 2 {
		t.Fatalf("vendor-a has %d keys after reload", n)
	}
	u.goto_("/logic-models")
	if n, _ := u.id("model-chat-main").Locator(`[data-testid^="deployment-row-"]`).Count(); n != 2 {
		t.Fatalf("chat-main has %d deployments after reload", n)
	}
	u.goto_("/route-groups")
	for _, tier := range []string{"fast", "standard", "deep"} {
		u.see(u.id("cand-main-"+tier+"-chat-main"), "candidate after reload in "+tier)
	}
	u.goto_("/callers")
	row := u.id("caller-contracts")
	u.see(row, "caller after reload")
	if lim := u.text(row.GetByTestId("caller-limits"), "limits"); !strings.Contains(lim, "120") {
		t.Fatalf("caller limits after reload: %q", lim)
	}
	if html, _ := u.p.Content(); strings.Contains(html, key) {
		t.Fatal("the caller key is shown again after creation")
	}

	// A viewer sees no edit controls, and a direct POST is refused.
	u.goto_("/settings")
	u.fill(u.id("user-username"), "watcher", "viewer name")
	u.fill(u.id("user-password"), "watcher-password-1", "viewer password")
	u.selectOption(u.field("role"), "viewer", "viewer role")
	u.click(u.id("user-create"), "create viewer")
	u.see(u.id("user-watcher"), "viewer listed")

	v := &ui{t: t, p: newPage(t), base: s.URL}
	v.login("watcher", "watcher-password-1")
	for path, control := range map[string]string{"/providers": "provider-new", "/logic-models": "model-new", "/route-groups": "group-new", "/callers": "caller-new"} {
		v.goto_(path)
		if n, _ := v.id(control).Count(); n != 0 {
			t.Fatalf("viewer sees %s on %s", control, path)
		}
	}
	v.goto_("/route-groups")
	if n, _ := v.p.Locator(`[data-testid="cand-remove"], [data-testid="cand-add-form"]`).Count(); n != 0 {
		t.Fatal("viewer sees candidate controls")
	}
	status, err := v.p.Evaluate(`async () => {
		const h = JSON.parse(document.body.getAttribute('hx-headers'));
		const r = await fetch('/providers', {method: 'POST', headers: {...h, 'Content-Type': 'application/x-www-form-urlencoded'}, body: 'name=sneaky&protocol=openai&base_url=https%3A%2F%2Fx.example&timeout_ms=1000'});
		return r.status;
	}`)
	v.must(err, "viewer fetch")
	if status != 403 {
		t.Fatalf("viewer's direct POST answered %v", status)
	}
}
