package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
)

// seedPublished builds a small configuration straight in the database and
// publishes it as version 1.
func seedPublished(t *testing.T, dsn, fakeURL string) *store.Store {
	t.Helper()
	key, _ := secrets.ParseKey(storetest.TestKey)
	sealer, _ := secrets.NewSealer(key)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, sealer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(); err != nil {
		t.Fatal(err)
	}
	pid, _ := st.CreateProvider(ctx, config.Provider{Name: "fake", Protocol: config.ProtocolOpenAI, BaseURL: fakeURL + "/v1", Enabled: true, TimeoutMS: 30000})
	if _, err := st.AddProviderKey(ctx, pid, "main", "sk-e2e-provider-key-0001"); err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"small", "big"} {
		mid, _ := st.CreateLogicModel(ctx, config.LogicModel{Code: code, Kind: config.KindChat})
		if _, err := st.CreateDeployment(ctx, mid, config.Deployment{Provider: "fake", UpstreamModel: "fake-" + code, Weight: 100, Enabled: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateRouteGroup(ctx, config.RouteGroup{Name: "main"}); err != nil {
		t.Fatal(err)
	}
	snap, _, _ := st.Draft(ctx)
	for _, tr := range snap.RouteGroups[0].Tiers {
		model := "small"
		if tr.Name == config.TierDeep {
			model = "big"
		}
		if _, err := st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: model, Weight: 100}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateCaller(ctx, config.Caller{Name: "app", RouteGroup: "main", PriorityClass: config.ClassInteractive, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "seed", Message: "first version", Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }}); err != nil {
		t.Fatal(err)
	}
	return st
}

var storeEnv = adapter.Support()

func TestDryRunRefusesPublishThenDiffAndRollback(t *testing.T) {
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	seedPublished(t, dsn, "http://"+fakeAddr)
	s := startServer(t, dsn)
	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.p.OnDialog(func(d playwright.Dialog) { _ = d.Accept() })
	u.login("admin", s.Admin)

	// Empty the deep tier.
	u.goto_("/route-groups")
	u.click(u.id("cand-main-deep-big").GetByTestId("cand-remove"), "remove the deep candidate")
	u.see(u.id("tier-main-deep").GetByTestId("empty-tier"), "deep tier flagged empty")

	// The dry-run names tier_empty and links to that tier.
	u.click(u.id("nav-dryrun"), "open dry-run")
	finding := u.id("finding-tier_empty")
	u.see(finding, "tier_empty finding")
	if href, _ := finding.GetByTestId("finding-link").GetAttribute("href"); href != "/route-groups#tier-main-deep" {
		t.Fatalf("tier_empty links to %q", href)
	}
	u.fill(u.id("publish-message"), "try with an empty tier", "publish message")
	u.click(u.id("publish-submit"), "publish")
	u.see(u.id("publish-error"), "publish refused")

	// Follow the finding's link and fix the tier there.
	u.click(u.id("finding-tier_empty").GetByTestId("finding-link"), "follow the finding")
	if !strings.HasSuffix(u.p.URL(), "#tier-main-deep") {
		t.Fatalf("finding link went to %s", u.p.URL())
	}
	deep := u.id("tier-main-deep")
	if ok, _ := deep.GetByTestId("cand-add-model").IsVisible(); !ok {
		u.click(deep.GetByTestId("cand-add-deep").Locator("summary"), "open add candidate")
	}
	u.selectOption(deep.GetByTestId("cand-add-model"), "small", "candidate")
	u.click(deep.GetByTestId("cand-add-submit"), "add candidate")
	u.see(u.id("cand-main-deep-small"), "deep tier fixed")

	u.click(u.id("nav-dryrun"), "dry-run again")
	u.see(u.id("dryrun-clean"), "clean dry-run")
	u.fill(u.id("publish-message"), "deep tier on small", "publish message")
	u.click(u.id("publish-submit"), "publish")
	u.see(u.id("version-2"), "version 2 in history")

	// The diff between the two versions.
	u.click(u.id("version-2").GetByTestId("diff-prev"), "diff with v1")
	diff := u.text(u.id("diff"), "diff")
	if !strings.Contains(diff, "logic_model: small") || !strings.Contains(diff, "logic_model: big") {
		t.Fatalf("diff misses the change:\n%s", diff)
	}

	// Roll back to v1; the rollback is the newest version.
	u.goto_("/versions/1")
	u.click(u.id("rollback-preview-open"), "preview the rollback")
	u.see(u.id("rollback-preview"), "rollback preview")
	u.fill(u.id("rollback-message"), "deep back on big", "rollback message")
	u.click(u.id("rollback-submit"), "roll back")
	top := u.p.Locator(`[data-testid="versions"] tbody tr`).First()
	u.see(top, "top of history")
	if id, _ := top.GetAttribute("data-testid"); id != "version-3" {
		t.Fatalf("top of history is %s", id)
	}
	if txt, _ := top.TextContent(); !strings.Contains(txt, "rollback to v1") || !strings.Contains(txt, "deep back on big") {
		t.Fatalf("top row: %q", txt)
	}
	// The draft was reset to v1: big is back in deep.
	u.goto_("/route-groups")
	u.see(u.id("cand-main-deep-big"), "big back in deep after rollback")
}
