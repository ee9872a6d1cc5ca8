package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/playwright-community/playwright-go"

	"switchyard/routing"
	"switchyard/routing/config"
	"switchyard/routing/record"
	"switchyard/store"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
	"switchyard/views/pages/versions"
)

// publishSeed is the installation the publish scenarios start from: two
// providers on the fake vendor; "small" on both (50/50, only fake-a
// sees images), "big" on fake-a; route group main (fast and standard
// small, deep big); callers app and vision-app; an unused embedding model.
type publishSeed struct {
	st                 *store.Store
	appKey, visionKey  string
	appID              int64
	smallA, smallB     int64
	small, big, emb    int64
	group              int64
	fast, deep         int64
	fakeA, fakeB       int64
	deepCand, fastCand int64
}

func seedPublish(t *testing.T, dsn, fakeURL string, publish bool) publishSeed {
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
	must := storetest.Must[int64](t)
	var s publishSeed
	s.st = st
	s.fakeA = must(st.CreateProvider(ctx, config.Provider{Name: "fake-a", Protocol: config.ProtocolOpenAI, BaseURL: fakeURL + "/v1", Enabled: true, TimeoutMS: 30000}))
	s.fakeB = must(st.CreateProvider(ctx, config.Provider{Name: "fake-b", Protocol: config.ProtocolOpenAI, BaseURL: fakeURL + "/v1", Enabled: true, TimeoutMS: 30000}))
	for i, p := range []int64{s.fakeA, s.fakeB} {
		if _, err := st.AddProviderKey(ctx, p, "main", fmt.Sprintf("sk-e2e-publish-key-000%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	prices := config.Prices{InputMicros: 1_000_000, OutputMicros: 4_000_000, Currency: "USD"}
	s.small = must(st.CreateLogicModel(ctx, config.LogicModel{Code: "small", Kind: config.KindChat}))
	s.smallA = must(st.CreateDeployment(ctx, s.small, config.Deployment{Provider: "fake-a", UpstreamModel: "fake-small", Weight: 50, Enabled: true, Prices: prices, Capabilities: config.Capabilities{Vision: true}}))
	s.smallB = must(st.CreateDeployment(ctx, s.small, config.Deployment{Provider: "fake-b", UpstreamModel: "fake-small", Weight: 50, Enabled: true, Prices: prices}))
	s.big = must(st.CreateLogicModel(ctx, config.LogicModel{Code: "big", Kind: config.KindChat}))
	must(st.CreateDeployment(ctx, s.big, config.Deployment{Provider: "fake-a", UpstreamModel: "fake-big", Weight: 100, Enabled: true, Prices: prices}))
	s.emb = must(st.CreateLogicModel(ctx, config.LogicModel{Code: "emb", Kind: config.KindEmbedding, EmbeddingDimension: 8}))
	must(st.CreateDeployment(ctx, s.emb, config.Deployment{Provider: "fake-a", UpstreamModel: "fake-emb", Weight: 100, Enabled: true}))
	s.group = must(st.CreateRouteGroup(ctx, config.RouteGroup{Name: "main"}))
	snap, _, _ := st.Draft(ctx)
	for _, tr := range snap.RouteGroups[0].Tiers {
		model := "small"
		if tr.Name == config.TierDeep {
			model, s.deep = "big", tr.ID
		}
		id := must(st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: model, Weight: 100}))
		switch tr.Name {
		case config.TierFast:
			s.fast, s.fastCand = tr.ID, id
		case config.TierDeep:
			s.deepCand = id
		}
	}
	s.appID = must(st.CreateCaller(ctx, config.Caller{Name: "app", RouteGroup: "main", PriorityClass: config.ClassInteractive, Enabled: true,
		MonthlyBudgetMicros: 100 * config.Unit, BudgetCurrency: "USD"}))
	must(st.CreateCaller(ctx, config.Caller{Name: "vision-app", RouteGroup: "main", PriorityClass: config.ClassInteractive, Enabled: true}))
	s.appKey, _, _ = st.CreateCallerKey(ctx, "app", "e2e", "e2e")
	s.visionKey, _, _ = st.CreateCallerKey(ctx, "vision-app", "e2e", "e2e")
	if publish {
		if _, err := st.Publish(ctx, store.PublishInput{Author: "seed", Message: "first version", Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// pixel is a 1×1 PNG, enough to make a request need vision.
const pixel = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

// TestImpactPreviewShowsTheShiftAndBlocksLosingACaller generates traffic
// through the data plane with the OpenAI SDK, then parks the deployment
// that serves images: the dry-run shows the text traffic moving to fake-b
// and vision-app losing all of its fast traffic, and publishing is refused
// until the operator types main/fast. The published version carries the
// acknowledgement, the diff says what changed in words, and the data plane
// then answers vision-app exactly as the preview said.
func TestImpactPreviewShowsTheShiftAndBlocksLosingACaller(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	seed := seedPublish(t, dsn, "http://"+fakeAddr, true)
	s := startServer(t, dsn)
	ctx := context.Background()

	client := func(key string) openai.Client {
		return openai.NewClient(option.WithBaseURL(s.URL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
	}
	app, vision := client(seed.appKey), client(seed.visionKey)
	send := func(c openai.Client, model string, msg openai.ChatCompletionMessageParamUnion) error {
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{msg}})
		return err
	}
	image := openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
		openai.TextContentPart("what is this?"), openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: pixel})})
	for i := range 6 {
		if err := send(app, "fast", openai.UserMessage(fmt.Sprintf("hello %d", i))); err != nil {
			t.Fatalf("app fast: %v", err)
		}
	}
	for range 2 {
		if err := send(app, "deep", openai.UserMessage("think hard")); err != nil {
			t.Fatalf("app deep: %v", err)
		}
	}
	for range 4 {
		if err := send(vision, "fast", image); err != nil {
			t.Fatalf("vision-app fast: %v", err)
		}
	}
	db := s.sql(t)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		_ = db.QueryRow(`SELECT count(*) FROM call_logs WHERE status = 'ok'`).Scan(&n)
		if n == 12 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 12 call-log rows written", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var visionNeeds int
	_ = db.QueryRow(`SELECT count(*) FROM call_logs WHERE caller = 'vision-app' AND needs & 2 = 2`).Scan(&visionNeeds)
	if visionNeeds != 4 {
		t.Fatalf("the call log recorded vision for %d of vision-app's 4 requests", visionNeeds)
	}

	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)
	// Park small on fake-a: it keeps its share (50), the others need no re-weighting.
	u.goto_("/logic-models")
	u.click(u.id(fmt.Sprintf("deployment-row-%d", seed.smallA)).GetByTestId("deployment-park"), "park small on fake-a")
	u.see(u.id(fmt.Sprintf("deployment-row-%d", seed.smallA)).GetByTestId("deployment-unpark"), "parked, with unpark offered")
	if n, _ := u.id("weight-sum-warning").Count(); n != 0 {
		t.Fatal("parking one deployment flagged the weights of the other")
	}

	u.click(u.id("nav-dryrun"), "open dry-run")
	u.see(u.id("dryrun-needs-ack"), "needs-acknowledgement banner")
	lost := u.id("lost-vision-app-fast")
	u.see(lost, "vision-app's lost fast traffic")
	txt := u.text(lost, "lost row")
	if !strings.Contains(txt, "no_available_model") || !strings.Contains(txt, "4 of 4") || !strings.Contains(txt, "all of its working traffic") || !strings.Contains(txt, "vision") {
		t.Fatalf("lost row: %q", txt)
	}
	if n, _ := lost.Locator(`[data-reason="lacks_capability"]`).Count(); n != 1 {
		t.Fatal("the typed skip reason lacks_capability is not shown")
	}
	shift := func(key string) (string, string) {
		row := u.id("shift-" + key)
		b, _ := row.GetAttribute("data-before")
		a, _ := row.GetAttribute("data-after")
		return b, a
	}
	// Live: app's 6 fast requests split 50/50, vision-app's 4 only on
	// fake-a; draft: app's 6 on fake-b, vision-app's none.
	if b, a := shift("small/fake-a/fake-small"); b != "7.0" || a != "0" {
		t.Errorf("small on fake-a: %s → %s, want 7.0 → 0", b, a)
	}
	if b, a := shift("small/fake-b/fake-small"); b != "3.0" || a != "6.0" {
		t.Errorf("small on fake-b: %s → %s, want 3.0 → 6.0", b, a)
	}
	if b, a := shift("fake-a"); b != "9.0" || a != "2.0" {
		t.Errorf("provider fake-a: %s → %s", b, a)
	}
	u.see(u.id("impact-providers-chart").Locator("svg"), "provider chart")
	u.see(u.id("cost-USD"), "cost per day")

	// Publishing is refused until main/fast is acknowledged by name.
	u.fill(u.id("publish-message"), "take fake-a out of small", "publish message")
	u.click(u.id("publish-submit"), "publish")
	u.see(u.id("publish-error"), "publish refused")
	if msg := u.text(u.id("publish-error"), "refusal"); !strings.Contains(msg, "main/fast") {
		t.Fatalf("refusal: %q", msg)
	}
	u.fill(u.id("ack-main-fast"), "main/fast", "type the acknowledgement")
	u.click(u.id("publish-submit"), "publish anyway")
	u.see(u.id("version-2"), "version 2 in history")
	if txt := u.text(u.id("version-2").GetByTestId("version-acknowledged"), "acknowledgement badge"); !strings.Contains(txt, "main/fast") {
		t.Fatalf("history badge: %q", txt)
	}

	// The diff: what changed in words above the text, no ids.
	u.click(u.id("version-2").GetByTestId("diff-prev"), "diff with v1")
	summary := u.text(u.id("diff-semantic"), "semantic summary")
	if !strings.Contains(summary, "parked deployment fake-a/fake-small of logic model small") {
		t.Fatalf("semantic summary: %q", summary)
	}
	if diff := u.text(u.id("diff"), "diff"); strings.Contains(diff, "id: ") {
		t.Fatalf("the diff shows database ids:\n%s", diff)
	}

	// The data plane now answers vision-app as the preview said.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := send(vision, "fast", image)
		var apiErr *openai.Error
		if errors.As(err, &apiErr) && apiErr.StatusCode == 503 && apiErr.Code == "no_available_model" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("vision-app after the publish: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := send(app, "fast", openai.UserMessage("still there?")); err != nil {
		t.Fatalf("app's fast traffic must still be served: %v", err)
	}
}

// fixCheck is a finding's expected fix: the control on the page its link
// opens.
type fixCheck struct {
	check   string
	mutate  func(s *config.Snapshot)
	control string // CSS selector, within the highlighted element
}

// TestEveryFindingLinksToTheControlThatFixesIt walks the link of every
// dry-run check (each id in config.Checks, and the impact preview's) in the
// browser: the target page holds the control for that object, inside the
// highlighted element, visible.
func TestEveryFindingLinksToTheControlThatFixesIt(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewDatabase(t)
	seed := seedPublish(t, dsn, "http://127.0.0.1:1", false)
	// Two aliases on main, whose rows the alias findings link to.
	for _, a := range []config.ModelAlias{{Pattern: "claude-opus-*", Tier: config.TierDeep}, {Pattern: "claude-haiku-4-5", Tier: config.TierFast}} {
		if _, err := seed.st.AddModelAlias(context.Background(), seed.group, a); err != nil {
			t.Fatal(err)
		}
	}
	base, _, err := seed.st.Draft(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tier := func(s *config.Snapshot, name config.TierName) *config.Tier { return s.RouteGroups[0].Tier(name) }
	model := func(s *config.Snapshot, code string) *config.LogicModel {
		for i := range s.LogicModels {
			if s.LogicModels[i].Code == code {
				return &s.LogicModels[i]
			}
		}
		t.Fatalf("no model %s", code)
		return nil
	}
	tierControls := `[data-testid="cand-edit"], [data-testid="cand-add-model"]`
	aliasControls := `[data-testid="alias-edit"]`
	cases := []fixCheck{
		{"tier_timeout", func(s *config.Snapshot) { tier(s, config.TierFast).TimeoutMS = 0 }, `[data-testid="tier-timeout-ms"]`},
		{"tier_empty", func(s *config.Snapshot) { tier(s, config.TierDeep).Candidates = nil }, `[data-testid="cand-add-model"]`},
		// A provider that cannot serve (disabling or parking the deployment
		// is tier_unservable's acknowledgement instead).
		{"no_usable_deployment", func(s *config.Snapshot) {
			for i := range s.Providers {
				if s.Providers[i].Name == model(s, "big").Deployments[0].Provider {
					s.Providers[i].Enabled = false
				}
			}
		}, `[data-testid="deployment-enable"], [data-testid="deployment-disable"]`},
		{"weights_sum", func(s *config.Snapshot) { model(s, "small").Deployments[0].Weight = 10 }, `[data-testid="deployment-weight"]`},
		{"unknown_provider", func(s *config.Snapshot) { model(s, "big").Deployments[0].Provider = "ghost" }, `select[name="provider"]`},
		{"protocol_unimplemented", func(s *config.Snapshot) { s.Providers[1].Protocol = "cohere" }, `select[name="protocol"]`},
		{"embedding_dimension_missing", func(s *config.Snapshot) { model(s, "emb").EmbeddingDimension = 0 }, `input[name="embedding_dimension"]`},
		{"embedding_dimension_mismatch", func(s *config.Snapshot) {
			s.LogicModels = append(s.LogicModels, config.LogicModel{Code: "emb2", Kind: config.KindEmbedding, EmbeddingDimension: 16,
				Deployments: []config.Deployment{{Provider: "fake-a", UpstreamModel: "e2", Weight: 100, Enabled: true}}})
			ft := tier(s, config.TierFast)
			ft.Candidates = append(ft.Candidates, config.Candidate{LogicModel: "emb", Priority: 2, Weight: 100}, config.Candidate{LogicModel: "emb2", Priority: 3, Weight: 100})
		}, tierControls},
		{"unknown_reference", func(s *config.Snapshot) { s.Callers[0].RouteGroup = "ghost" }, `select[name="route_group"]`},
		{config.CheckBudgetCurrencyMismatch, func(s *config.Snapshot) {
			for i := range s.Callers {
				if s.Callers[i].Name == "app" {
					s.Callers[i].BudgetCurrency = "EUR"
				}
			}
		}, `input[name="budget_currency"]`},
		{"same_model_all_tiers", func(s *config.Snapshot) { tier(s, config.TierDeep).Candidates[0].LogicModel = "small" }, tierControls},
		{"unused_logic_model", nil, `[data-testid="model-delete"]`}, // emb is in no tier
		{config.CheckTierUnservable, func(s *config.Snapshot) { tier(s, config.TierDeep).Candidates[0].Parked = true }, tierControls},
		{"step_down_target", func(s *config.Snapshot) {
			// deep steps down to standard, whose only candidate is parked.
			tier(s, config.TierStandard).Candidates[0].Parked = true
			s.RouteGroups[0].Degradation = &config.Degradation{StepDown: []config.StepDown{{Tier: config.TierDeep, To: config.TierStandard, P95MS: 1000}}}
		}, `select[name="degradation.step_down.deep.to"]`},
		{"mixed_kinds", func(s *config.Snapshot) {
			ft := tier(s, config.TierFast)
			ft.Candidates = append(ft.Candidates, config.Candidate{LogicModel: "emb", Priority: 2, Weight: 100})
		}, tierControls},
		{config.CheckAliasTarget, func(s *config.Snapshot) {
			s.RouteGroups[0].Aliases[0] = config.ModelAlias{Pattern: "claude-opus-*", LogicModel: "emb"}
		}, aliasControls},
		{config.CheckAliasDuplicate, func(s *config.Snapshot) { s.RouteGroups[0].Aliases[0].Pattern = "claude-haiku-4-5" }, aliasControls},
		{config.CheckAliasShadowed, func(s *config.Snapshot) {
			s.RouteGroups[0].Aliases[0].Pattern, s.RouteGroups[0].Aliases[1].Pattern = "claude-*", "claude-haiku-*"
		}, aliasControls},
		{config.CheckAliasOverridden, func(s *config.Snapshot) { s.RouteGroups[0].Aliases[1].Pattern = "small" }, aliasControls},
	}
	var links []struct{ check, href, control string }
	for _, tc := range cases {
		snap := config.Clone(base)
		if tc.mutate != nil {
			tc.mutate(&snap)
		}
		var f *config.Finding
		for _, x := range config.DryRun(snap, storeEnv).Findings {
			if x.Check == tc.check {
				f = &x
				break
			}
		}
		if f == nil {
			t.Fatalf("the %s mutation produced no %s finding", tc.check, tc.check)
		}
		links = append(links, struct{ check, href, control string }{tc.check, versions.Link(*f), tc.control})
	}
	// The impact preview's findings: deep's traffic lost, part of fast's.
	live, _ := routing.CompileForReplay(base)
	draftSnap := config.Clone(base)
	tier(&draftSnap, config.TierDeep).Candidates[0].Parked = true
	model(&draftSnap, "small").Deployments[0].Capabilities.Vision = false
	draft, _ := routing.CompileForReplay(draftSnap)
	im, err := routing.Replay(live, draft, []routing.TrafficShape{
		{CallerID: seed.appID, Caller: "app", Model: "deep", Requests: 3, Served: 3},
		{CallerID: seed.appID, Caller: "app", Model: "fast", Requests: 3, Served: 3},
		{CallerID: seed.appID, Caller: "app", Model: "fast", Needs: record.NeedVision, Requests: 1, Served: 1},
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	lost, partly := im.Findings()
	if len(lost) != 1 || len(partly) != 1 {
		t.Fatalf("impact findings: %+v %+v", lost, partly)
	}
	links = append(links, struct{ check, href, control string }{routing.CheckTrafficLost, versions.Link(lost[0]), tierControls},
		struct{ check, href, control string }{routing.CheckTrafficPartlyLost, versions.Link(partly[0]), tierControls})

	// Every check is walked.
	walked := map[string]bool{}
	for _, l := range links {
		walked[l.check] = true
	}
	// The cloud-settings finding links to a field the provider form shows
	// only for an Azure, Bedrock or Vertex AI provider, and this walk's
	// draft has none; providers/TestFormShowsTheSavedKindsFields covers it.
	walked[config.CheckCloudSettings] = true
	for _, c := range config.Checks {
		if !walked[c.ID] {
			t.Errorf("check %s has no link walk", c.ID)
		}
	}

	s := startServer(t, dsn)
	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)
	for _, l := range links {
		u.goto_(l.href)
		_ = u.p.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateLoad})
		res, err := u.p.Evaluate(`([control]) => {
			const id = decodeURIComponent(location.hash.slice(1));
			const el = document.getElementById(id);
			if (!el) return "no element #" + id;
			const lit = [el, el.closest(".field"), el.closest("tr"), el.closest(".tier"), el.closest(".panel")]
				.filter(Boolean).find(x => { const s = getComputedStyle(x); return s.outlineStyle === "solid" && s.outlineWidth === "3px"; });
			if (!lit) return "#" + id + " is not highlighted";
			const c = lit.matches(control) ? lit : lit.querySelector(control);
			if (!c) return "no " + control + " inside the highlighted " + lit.tagName + "#" + (lit.id || "");
			const r = c.getBoundingClientRect();
			if (r.width === 0 || r.height === 0) return control + " is not visible";
			return "ok";
		}`, []any{l.control})
		if err != nil || res != "ok" {
			t.Errorf("%s → %s: %v %v", l.check, l.href, res, err)
		}
	}
}

// TestTakingADeploymentOutOfServiceAndTheWeightsLink: disabling one of
// two deployments trips no weight rule; a new deployment's form proposes a
// weight and rebalances the other; a wrong weight's dry-run finding links
// to the highlighted panel whose inline weight fixes it.
func TestTakingADeploymentOutOfServiceAndTheWeightsLink(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	seed := seedPublish(t, dsn, "http://"+fakeAddr, true)
	s := startServer(t, dsn)
	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)

	u.goto_("/logic-models")
	rowB := u.id(fmt.Sprintf("deployment-row-%d", seed.smallB))
	u.click(rowB.GetByTestId("deployment-disable"), "disable small on fake-b")
	u.see(rowB.GetByTestId("deployment-enable"), "small on fake-b disabled")
	panel := u.id("model-small")
	u.see(panel.GetByTestId("weight-out-of-service"), "the disabled share shown as out of service")
	if n, _ := panel.GetByTestId("weight-sum-warning").Count(); n != 0 {
		t.Fatal("disabling a deployment tripped the weights rule")
	}
	u.click(u.id("nav-dryrun"), "dry-run")
	u.see(u.id("dryrun-clean"), "clean dry-run with a deployment disabled")

	// A new deployment: the form proposes an even share and rebalances.
	u.goto_("/logic-models")
	u.click(u.id("model-small").GetByTestId("deployment-new"), "add a deployment")
	if w, _ := u.id("deployment-form-weight").InputValue(); w != "50" {
		t.Fatalf("proposed weight %q", w)
	}
	if on, _ := u.id("deployment-rebalance").IsChecked(); !on {
		t.Fatal("rebalancing the other is not proposed")
	}
	u.selectOption(u.field("provider"), "fake-b", "provider")
	u.fill(u.id("deployment-upstream-model"), "fake-small-2", "upstream model")
	u.click(u.id("deployment-save"), "save")
	u.see(u.id("model-small"), "back on the list")
	if v := u.text(u.id("model-small").GetByTestId("weight-sum-value"), "sum"); v != "100" {
		t.Fatalf("weights in service sum to %s after the proposal", v)
	}

	// Break the sum, follow the finding's link, fix it where it lands.
	rowA := u.id(fmt.Sprintf("deployment-row-%d", seed.smallA))
	u.fill(rowA.GetByTestId("deployment-weight"), "10", "weight 10")
	u.click(rowA.GetByTestId("deployment-weight-save"), "set weight")
	u.see(u.id("model-small").GetByTestId("weight-sum-warning"), "sum warning")
	u.click(u.id("nav-dryrun"), "dry-run")
	u.click(u.id("finding-weights_sum").GetByTestId("finding-link"), "follow weights_sum")
	if want := fmt.Sprintf("/logic-models#model-%d", seed.small); !strings.HasSuffix(u.p.URL(), want) {
		t.Fatalf("weights_sum link went to %s, want %s", u.p.URL(), want)
	}
	outline, _ := u.id("model-small").Evaluate(`el => getComputedStyle(el).outlineStyle`, nil)
	if outline != "solid" {
		t.Fatalf("the logic model's panel is not highlighted (outline %v)", outline)
	}
	rowA = u.id(fmt.Sprintf("deployment-row-%d", seed.smallA))
	u.fill(rowA.GetByTestId("deployment-weight"), "50", "weight 50")
	u.click(rowA.GetByTestId("deployment-weight-save"), "set weight")
	u.must(u.id("model-small").GetByTestId("weight-sum-warning").WaitFor(playwright.LocatorWaitForOptions{State: playwright.WaitForSelectorStateDetached}), "warning gone")
}
