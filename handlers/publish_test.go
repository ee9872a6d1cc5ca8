package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/webtest"
)

// logCalls writes n call-log rows of one shape, as the journey would have.
func logCalls(t *testing.T, env *webtest.Env, callerID int64, caller, model, status string, n, prompt, completion int) {
	t.Helper()
	_, err := env.Store.DB().ExecContext(t.Context(), `
		INSERT INTO call_logs (at, request_id, caller_id, caller, requested_model, tier, status, prompt_tokens, completion_tokens, needs, fields)
		SELECT now() - make_interval(secs => i), 'req-' || $2 || '-' || $3 || '-' || $4 || '-' || i, $1, $2, $3, $3, $4, $5, $6, 0, 0
		FROM generate_series(1, $7) AS i`, callerID, caller, model, status, prompt, completion, n)
	if err != nil {
		t.Fatal(err)
	}
}

func candidateOf(t *testing.T, env *webtest.Env, tier config.TierName) config.Candidate {
	snap, _, _ := env.Store.Draft(t.Context())
	return snap.RouteGroups[0].Tier(tier).Candidates[0]
}

// TestPublishParkedTierNeedsTypedAcknowledgement: with deep traffic in the
// call log, parking deep's only candidate shows the lost caller in the
// impact preview and refuses the publish until the operator types
// default/deep; the acknowledgement is on the version afterwards. The admin
// API enforces the same.
func TestPublishParkedTierNeedsTypedAcknowledgement(t *testing.T) {
	t.Parallel()
	env := webtest.New(t)
	seedDraft(t, env.Store)
	ctx := t.Context()
	cid, err := env.Store.CreateCaller(ctx, config.Caller{Name: "app", RouteGroup: "default", PriorityClass: config.ClassInteractive, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	api := newAPI(t, env, store.RoleAdmin)
	if code, body := api.do("POST", "/publish", []byte(`{"message":"first"}`)); code != http.StatusCreated {
		t.Fatalf("first publish: %d %s", code, body)
	}
	logCalls(t, env, cid, "app", "deep", "ok", 20, 100, 50)
	logCalls(t, env, cid, "app", "fast", "ok", 10, 10, 5)

	deep := candidateOf(t, env, config.TierDeep)
	if err := env.Store.SetCandidateParked(ctx, deep.ID, true); err != nil {
		t.Fatal(err)
	}
	admin := env.Login(t, "ops", store.RoleAdmin)
	_, doc := admin.Get("/dry-run")
	if webtest.TestID(doc, "dryrun-needs-ack").Length() != 1 {
		t.Fatal("no needs-acknowledgement banner")
	}
	f := webtest.TestID(doc, "finding-tier_unservable")
	if f.AttrOr("data-severity", "") != "acknowledge" || !strings.Contains(f.Find(`[data-testid="finding-severity"]`).Text(), "unless acknowledged") {
		t.Fatalf("tier_unservable severity: %q", f.Text())
	}
	if href := f.Find(`[data-testid="finding-link"]`).AttrOr("href", ""); href != "/route-groups#tier-default-deep" {
		t.Fatalf("tier_unservable links to %q", href)
	}
	if webtest.TestID(doc, "finding-traffic_lost").Length() != 1 {
		t.Fatal("no traffic_lost finding")
	}
	lost := webtest.TestID(doc, "lost-app-deep")
	if lost.Length() != 1 || !strings.Contains(lost.Text(), "no_available_model") || lost.Find(`[data-testid="lost-all"]`).Length() != 1 ||
		lost.Find(`[data-reason="candidate_parked"]`).Length() != 1 || !strings.Contains(lost.Text(), "20 of 20") {
		t.Fatalf("lost row: %q", lost.Text())
	}
	if s := webtest.TestID(doc, "shift-small/openai/gpt-4o-mini"); s.AttrOr("data-before", "") != "30" || s.AttrOr("data-after", "") != "10" {
		t.Fatalf("traffic shift: %s → %s", s.AttrOr("data-before", ""), s.AttrOr("data-after", ""))
	}
	if webtest.TestID(doc, "impact-deployments-chart").Find("svg rect").Length() != 2 {
		t.Fatal("no chart of the shift")
	}
	if !strings.Contains(webtest.TestID(doc, "diff-semantic").Text(), "parked candidate small in route group default, tier deep") {
		t.Fatalf("semantic summary: %q", webtest.TestID(doc, "diff-semantic").Text())
	}
	input := webtest.TestID(doc, "ack-default-deep")
	if input.AttrOr("name", "") != "acknowledge" {
		t.Fatal("no acknowledgement input for default/deep")
	}
	rev := doc.Find(`input[name="revision"]`).AttrOr("value", "")

	for _, tc := range []struct {
		typed []string
		want  string
	}{
		{[]string{""}, "Type default/deep"},
		{[]string{"default/fast"}, "Type default/deep"},
		{[]string{"deep"}, "must be route-group/tier"},
		{[]string{"default/deep", "default/fast"}, "needs no acknowledgement"},
	} {
		res, doc := admin.PostForm("/publish", url.Values{"revision": {rev}, "message": {"park deep"}, "acknowledge": tc.typed})
		if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "publish-error").Text(), tc.want) {
			t.Fatalf("typed %q: %d %q", tc.typed, res.StatusCode, webtest.TestID(doc, "publish-error").Text())
		}
	}
	if n, _ := env.Store.LatestVersionNumber(ctx); n != 1 {
		t.Fatalf("a refused publish stored version %d", n)
	}
	res, _ := admin.PostForm("/publish", url.Values{"revision": {rev}, "message": {"park deep"}, "acknowledge": {" default/deep "}})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("acknowledged publish: %d", res.StatusCode)
	}
	_, doc = admin.Get("/versions")
	if !strings.Contains(webtest.TestID(doc, "version-2").Find(`[data-testid="version-acknowledged"]`).Text(), "default/deep") {
		t.Fatal("history does not show the acknowledgement")
	}
	_, doc = admin.Get("/versions/2")
	if got := webtest.TestID(doc, "version-acknowledgement"); got.Length() != 2 || !strings.Contains(got.Text(), "deep of route group default will answer 503") {
		t.Fatalf("version detail: %q", got.Text())
	}

	// The admin API: park fast too. The dry-run names what to acknowledge.
	fast := candidateOf(t, env, config.TierFast)
	if err := env.Store.SetCandidateParked(ctx, fast.ID, true); err != nil {
		t.Fatal(err)
	}
	code, body := api.do("POST", "/dry-run", nil)
	var dr struct {
		Blocking    bool     `json:"blocking"`
		Errors      int      `json:"errors"`
		Acknowledge []string `json:"acknowledge"`
		Carried     []struct {
			Ack     string `json:"ack"`
			Version int64  `json:"version"`
			By      string `json:"by"`
		} `json:"carried"`
		Findings []config.Finding `json:"findings"`
		Impact   struct {
			Available bool `json:"available"`
			Replay    struct {
				Lost []struct {
					Caller  string `json:"caller"`
					Tier    string `json:"tier"`
					Served  int64  `json:"served"`
					AllLost bool   `json:"all_lost"`
				} `json:"lost"`
			} `json:"replay"`
		} `json:"impact"`
	}
	if err := json.Unmarshal(body, &dr); err != nil || code != http.StatusOK {
		t.Fatalf("dry-run: %d %s", code, body)
	}
	// Deep's traffic was lost already by v2 (live), acknowledged there by
	// ops: only fast is new and asks, deep is carried over.
	if !dr.Blocking || dr.Errors != 0 || !slices.Equal(dr.Acknowledge, []string{"default/fast"}) || !dr.Impact.Available ||
		len(dr.Carried) != 1 || dr.Carried[0].Ack != "default/deep" || dr.Carried[0].Version != 2 || dr.Carried[0].By != "ops" ||
		len(dr.Impact.Replay.Lost) != 1 || dr.Impact.Replay.Lost[0].Tier != "fast" || dr.Impact.Replay.Lost[0].Served != 10 || !dr.Impact.Replay.Lost[0].AllLost {
		t.Fatalf("dry-run answer: %s", body)
	}
	code, body = api.do("POST", "/publish", []byte(`{"message":"park fast","acknowledge":["default/deep"]}`))
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), "acknowledgement_required") || !strings.Contains(string(body), `"ack":"default/fast"`) {
		t.Fatalf("publish without the fast ack: %d %s", code, body)
	}
	code, body = api.do("POST", "/publish", []byte(`{"message":"park fast","acknowledge":["nonsense"]}`))
	if code != http.StatusBadRequest || !strings.Contains(string(body), "route-group/tier") {
		t.Fatalf("malformed ack: %d %s", code, body)
	}
	code, body = api.do("POST", "/publish", []byte(`{"message":"park fast","acknowledge":["default/fast","default/deep"]}`))
	if code != http.StatusCreated || !strings.Contains(string(body), `"acknowledged":[`) {
		t.Fatalf("acknowledged API publish: %d %s", code, body)
	}

	// Rolling back to v2 (deep parked, fast serving again) is a publish
	// like any other: default/deep, acknowledged on live v3, is shown as
	// such on the rollback's publish page and carried over, not asked.
	_, doc = admin.Get("/versions/2")
	if href, _ := webtest.TestID(doc, "rollback-preview-open").Attr("href"); href != "/versions/2/rollback" {
		t.Fatalf("the version page does not lead to the rollback preview: %q", href)
	}
	_, doc = admin.Get("/versions/2/rollback")
	form := webtest.TestID(doc, "rollback-form")
	if form.Find(`[data-testid="ack-default-deep"]`).Length() != 0 || !strings.Contains(form.Find(`[data-testid="ack-default-deep-standing"]`).Text(), "acknowledged on v3") {
		t.Fatalf("the rollback form must show default/deep as acknowledged on v3: %q", form.Text())
	}
	res, _ = admin.PostForm("/versions/2/rollback", url.Values{"message": {"back to v2"}})
	if n, _ := env.Store.LatestVersionNumber(ctx); res.StatusCode != http.StatusOK || n != 4 {
		t.Fatalf("rollback carrying default/deep: %d, live v%d", res.StatusCode, n)
	}
}

// TestPublishDoesNotReaskAnAcknowledgementOfLive: default/deep acknowledged
// on v2, then a caller added in the draft. The publish page shows deep as
// acknowledged on v2 by ops, with no input, and publishes with nothing
// typed, recording it again carried over; parking fast as well asks for
// default/fast only.
func TestPublishDoesNotReaskAnAcknowledgementOfLive(t *testing.T) {
	t.Parallel()
	env := webtest.New(t)
	seedDraft(t, env.Store)
	ctx := t.Context()
	admin := env.Login(t, "ops", store.RoleAdmin)
	publish := func(msg string, acks ...string) (*http.Response, *goquery.Document) {
		t.Helper()
		_, doc := admin.Get("/dry-run")
		rev := doc.Find(`input[name="revision"]`).AttrOr("value", "")
		return admin.PostForm("/publish", url.Values{"revision": {rev}, "message": {msg}, "acknowledge": acks})
	}
	if _, err := env.Store.CreateCaller(ctx, config.Caller{Name: "app", RouteGroup: "default", PriorityClass: config.ClassInteractive, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if res, _ := publish("first"); res.StatusCode != http.StatusOK {
		t.Fatalf("first publish: %d", res.StatusCode)
	}
	if err := env.Store.SetCandidateParked(ctx, candidateOf(t, env, config.TierDeep).ID, true); err != nil {
		t.Fatal(err)
	}
	if res, _ := publish("park deep", "default/deep"); res.StatusCode != http.StatusOK {
		t.Fatalf("acknowledged publish: %d", res.StatusCode)
	}
	if _, err := env.Store.CreateCaller(ctx, config.Caller{Name: "reports", RouteGroup: "default", PriorityClass: config.ClassNormal, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	_, doc := admin.Get("/dry-run")
	standing := webtest.TestID(doc, "ack-default-deep-standing")
	if webtest.TestID(doc, "ack-default-deep").Length() != 0 || !strings.Contains(standing.Text(), "acknowledged on v2") || !strings.Contains(standing.Text(), "by ops") {
		t.Fatalf("deep must read as acknowledged on v2 by ops, without an input: %q", webtest.TestID(doc, "publish-form").Text())
	}
	if webtest.TestID(doc, "dryrun-needs-ack").Length() != 0 || webtest.TestID(doc, "dryrun-acks-standing").Length() != 1 {
		t.Fatal("the banner must say nothing is left to acknowledge")
	}
	if res, _ := publish("add reports"); res.StatusCode != http.StatusOK {
		t.Fatalf("publish with nothing typed: %d", res.StatusCode)
	}
	v, err := env.Store.Version(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if acked := v.CheckResults().Acknowledged; len(acked) != 1 || acked[0].Ack.String() != "default/deep" || acked[0].CarriedFrom != 2 || acked[0].By != "ops" {
		t.Fatalf("v3 must record deep carried over from v2: %+v", acked)
	}
	if _, doc := admin.Get("/versions/3"); !strings.Contains(webtest.TestID(doc, "version-ack-carried").Text(), "acknowledged on v2 by ops") {
		t.Fatalf("v3's page must say where deep was acknowledged: %q", webtest.TestID(doc, "version-acknowledgements").Text())
	}

	if err := env.Store.SetCandidateParked(ctx, candidateOf(t, env, config.TierFast).ID, true); err != nil {
		t.Fatal(err)
	}
	_, doc = admin.Get("/dry-run")
	if webtest.TestID(doc, "ack-default-fast").AttrOr("name", "") != "acknowledge" || webtest.TestID(doc, "ack-default-deep-standing").Length() != 1 {
		t.Fatalf("fast must ask, deep stay carried: %q", webtest.TestID(doc, "publish-form").Text())
	}
	res, doc := publish("park fast")
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(webtest.TestID(doc, "publish-error").Text(), "Type default/fast below") {
		t.Fatalf("publish without the fast ack: %d %q", res.StatusCode, webtest.TestID(doc, "publish-error").Text())
	}
	if res, _ := publish("park fast", "default/fast"); res.StatusCode != http.StatusOK {
		t.Fatalf("fast acknowledged: %d", res.StatusCode)
	}
}

// TestDiffShowsWhatChangedAndHidesIDChurn: a candidate removed and added
// again is a new row with a new id and nothing else new; the diff of the
// two versions says nothing changed, and a real change reads as a sentence
// above the text.
func TestDiffShowsWhatChangedAndHidesIDChurn(t *testing.T) {
	t.Parallel()
	env := webtest.New(t)
	tiers := seedDraft(t, env.Store)
	ctx := t.Context()
	admin := env.Login(t, "ops", store.RoleAdmin)
	publish := func(msg string) {
		t.Helper()
		if _, err := env.Store.Publish(ctx, store.PublishInput{Author: "t", Message: msg, Check: func(s config.Snapshot) config.Result { return config.DryRun(s, webtest.Implemented) }}); err != nil {
			t.Fatal(err)
		}
	}
	publish("first")
	deep := candidateOf(t, env, config.TierDeep)
	if err := env.Store.RemoveCandidate(ctx, deep.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.AddCandidate(ctx, tiers[config.TierDeep], config.Candidate{LogicModel: deep.LogicModel, Priority: deep.Priority, Weight: deep.Weight}); err != nil {
		t.Fatal(err)
	}
	publish("same deep candidate, new row")
	if err := env.Store.UpdateTier(ctx, tiers[config.TierFast], 7000, 2000); err != nil {
		t.Fatal(err)
	}
	publish("fast 7 s")
	_, doc := admin.Get("/versions/diff?from=1&to=2")
	if webtest.TestID(doc, "diff-identical").Length() != 1 || webtest.TestID(doc, "diff-semantic").Length() != 0 {
		t.Fatalf("id churn shown as a change: %q", webtest.TestID(doc, "diff").Text())
	}
	_, doc = admin.Get("/versions/diff?from=1&to=2&ids=show")
	if webtest.TestID(doc, "diff-summary").Length() != 1 || !strings.Contains(webtest.TestID(doc, "diff").Text(), "id: ") {
		t.Fatal("ids=show does not show the raw text")
	}
	_, doc = admin.Get("/versions/diff?from=2&to=3")
	changes := webtest.TestID(doc, "change")
	if changes.Length() != 2 || !strings.Contains(changes.Text(), "changed tier fast of route group default: timeout_ms 15000 → 7000") ||
		!strings.Contains(changes.Text(), "first_chunk_timeout_ms 5000 → 2000") {
		t.Fatalf("semantic summary: %q", changes.Text())
	}
	if strings.Contains(webtest.TestID(doc, "diff").Text(), "id: ") {
		t.Fatal("ids in the default diff")
	}
}

// TestNewDeploymentKeepsTheWeightsRule: the form proposes a weight that
// keeps the sum (the rest of 100, or an even share with the others
// rebalanced in the same save), and Park takes one out of service without
// re-weighting the others.
func TestNewDeploymentKeepsTheWeightsRule(t *testing.T) {
	t.Parallel()
	env := webtest.New(t)
	seedDraft(t, env.Store)
	ctx := t.Context()
	pid, _ := env.Store.CreateProvider(ctx, config.Provider{Name: "backup", Protocol: config.ProtocolOpenAI, BaseURL: "https://backup.example/v1", Enabled: true, TimeoutMS: 30000})
	if _, err := env.Store.AddProviderKey(ctx, pid, "k", "sk-test-backup-key-0001"); err != nil {
		t.Fatal(err)
	}
	snap, _, _ := env.Store.Draft(ctx)
	m := snap.LogicModels[0]
	admin := env.Login(t, "ops", store.RoleAdmin)
	_, doc := admin.Get("/logic-models/" + itoa(m.ID) + "/deployments/new")
	if w := webtest.TestID(doc, "deployment-form-weight").AttrOr("value", ""); w != "50" {
		t.Fatalf("proposed weight %q, want an even 50", w)
	}
	box := webtest.TestID(doc, "deployment-rebalance")
	if _, on := box.Attr("checked"); !on || !strings.Contains(webtest.TestID(doc, "check-rebalance").Text(), "openai gpt-4o-mini 100 → 50") {
		t.Fatalf("rebalance offer: %q", webtest.TestID(doc, "check-rebalance").Text())
	}
	form := url.Values{"provider": {"backup"}, "upstream_model": {"gpt-4o-mini"}, "weight": {"40"}, "enabled": {"on"}, "rebalance": {"on"},
		"price_input": {"0"}, "price_output": {"0"}, "price_cached": {"0"}, "currency": {"USD"}}
	if res, _ := admin.PostForm("/logic-models/"+itoa(m.ID)+"/deployments", form); res.StatusCode != http.StatusOK {
		t.Fatalf("create: %d", res.StatusCode)
	}
	snap, _, _ = env.Store.Draft(ctx)
	ds := snap.LogicModels[0].Deployments
	weights := map[string]int{}
	for _, d := range ds {
		weights[d.Provider] = d.Weight
	}
	if weights["openai"] != 60 || weights["backup"] != 40 || !config.SumWeights(ds).Balanced() {
		t.Fatalf("after the rebalanced create: %v", weights)
	}
	// Park the backup: it keeps its weight, the others keep theirs, and
	// the dry-run has no weights_sum finding.
	var backupID int64
	for _, d := range ds {
		if d.Provider == "backup" {
			backupID = d.ID
		}
	}
	_, doc = admin.Get("/logic-models")
	park := webtest.TestID(doc, "deployment-row-"+itoa(backupID)).Find(`[data-testid="deployment-park"]`).Closest("form")
	if park.AttrOr("action", "") != "/deployments/"+itoa(backupID)+"/parked" || park.Find(`input[name="parked"]`).AttrOr("value", "") != "true" || park.Find(`input[name="weight"]`).Length() != 0 {
		t.Fatal("Park is not the parked toggle")
	}
	if res, _ := admin.PostForm("/deployments/"+itoa(backupID)+"/parked", url.Values{"parked": {"true"}}); res.StatusCode != http.StatusOK {
		t.Fatalf("park: %d", res.StatusCode)
	}
	_, doc = admin.Get("/logic-models")
	if webtest.TestID(doc, "weight-out-of-service").Length() != 1 || webtest.TestID(doc, "weight-sum-warning").Length() != 0 {
		t.Fatal("parking one flagged the weights of the others")
	}
	snap, _, _ = env.Store.Draft(ctx)
	for _, f := range config.DryRun(snap, webtest.Implemented).Findings {
		if f.Check == "weights_sum" {
			t.Fatalf("weights_sum after parking: %s", f.Message)
		}
	}
	// The admin API proposes the same weight as the form.
	api := newAPI(t, env, store.RoleAdmin)
	code, body := api.do("POST", "/logic-models/"+itoa(m.ID)+"/deployments", []byte(`{"provider":"backup","upstream_model":"gpt-4o"}`))
	if code != http.StatusCreated || !strings.Contains(string(body), `"weight":50`) {
		t.Fatalf("API create: %d %s", code, body)
	}
}
