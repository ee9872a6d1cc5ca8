package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/web/webtest"
)

// seedModels creates a provider with one active key and, for each code, a
// chat logic model with one deployment on it.
func seedModels(t *testing.T, env *webtest.Env, codes ...string) {
	t.Helper()
	ctx := t.Context()
	pid, err := env.Store.CreateProvider(ctx, config.Provider{Name: "openai", Protocol: config.ProtocolOpenAI, BaseURL: "https://api.openai.com/v1", Enabled: true, TimeoutMS: 60000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.AddProviderKey(ctx, pid, "main", "sk-test-abcdefghij-1234"); err != nil {
		t.Fatal(err)
	}
	for _, code := range codes {
		mid, err := env.Store.CreateLogicModel(ctx, config.LogicModel{Code: code, Kind: config.KindChat})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Store.CreateDeployment(ctx, mid, config.Deployment{Provider: "openai", UpstreamModel: code, Weight: 100, Enabled: true}); err != nil {
			t.Fatal(err)
		}
	}
}

func createGroup(t *testing.T, env *webtest.Env, g config.RouteGroup) int64 {
	t.Helper()
	id, err := env.Store.CreateRouteGroup(t.Context(), g)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func draftGroup(t *testing.T, env *webtest.Env, name string) config.RouteGroup {
	t.Helper()
	snap, _, err := env.Store.Draft(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range snap.RouteGroups {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no route group %s in the draft", name)
	return config.RouteGroup{}
}

func draftTier(t *testing.T, env *webtest.Env, group string, tier config.TierName) config.Tier {
	t.Helper()
	g := draftGroup(t, env, group)
	tt := g.Tier(tier)
	if tt == nil {
		t.Fatalf("group %s has no tier %s", group, tier)
	}
	return *tt
}

func draftCandidate(t *testing.T, env *webtest.Env, group string, tier config.TierName, code string) config.Candidate {
	t.Helper()
	for _, c := range draftTier(t, env, group, tier).Candidates {
		if c.LogicModel == code {
			return c
		}
	}
	t.Fatalf("%s / %s has no candidate %s", group, tier, code)
	return config.Candidate{}
}

func tierPath(t *testing.T, env *webtest.Env, group string, tier config.TierName) string {
	t.Helper()
	return "/tiers/" + itoa(draftTier(t, env, group, tier).ID)
}

func candPath(t *testing.T, env *webtest.Env, group string, tier config.TierName, code string) string {
	t.Helper()
	return "/candidates/" + itoa(draftCandidate(t, env, group, tier, code).ID)
}

func chain(t *testing.T, env *webtest.Env, group string, tier config.TierName) string {
	t.Helper()
	var parts []string
	for _, c := range draftTier(t, env, group, tier).Candidates {
		parts = append(parts, c.LogicModel+":"+itoa(int64(c.Priority))+"/"+itoa(int64(c.Weight)))
	}
	return strings.Join(parts, " ")
}

func wantStatus(t *testing.T, what string, res *http.Response, want int) {
	t.Helper()
	if res.StatusCode != want {
		t.Fatalf("%s: status %d, want %d", what, res.StatusCode, want)
	}
}

func isFragment(doc *goquery.Document) bool {
	return webtest.TestID(doc, "nav").Length() == 0
}

func TestRouteGroupEmptyStatesAndEmptyTier(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)

	_, doc := admin.Get("/route-groups")
	empty := webtest.TestID(doc, "empty")
	if empty.Length() != 1 || !strings.Contains(empty.Text(), "fast, standard and deep") {
		t.Fatalf("empty state missing or not explaining tiers: %q", empty.Text())
	}
	if h, _ := webtest.TestID(doc, "empty-onboarding").Attr("href"); h != "/onboarding" {
		t.Fatalf("empty state onboarding link %q", h)
	}
	if h, _ := webtest.TestID(doc, "empty-group-new").Attr("href"); h != "/route-groups/new" {
		t.Fatalf("empty state new-group link %q", h)
	}

	// Create through the form: a plain post redirects to the group's anchor.
	res, _ := admin.NoRedirects().PostForm("/route-groups", url.Values{"name": {"default"}, "description": {"everyone"}, "tenant": {""}, "fallback": {"none"}})
	wantStatus(t, "create group", res, http.StatusSeeOther)
	if loc := res.Header.Get("Location"); loc != "/route-groups#group-default" {
		t.Fatalf("redirect to %q", loc)
	}
	g := draftGroup(t, env, "default")
	if g.Tenant != "" || g.Fallback != "" || len(g.Tiers) != 3 {
		t.Fatalf("stored group %+v", g)
	}

	_, doc = admin.Get("/route-groups")
	grp := webtest.TestID(doc, "group-default")
	if grp.Length() != 1 || webtest.TestID(doc, "group-shared").Length() != 1 {
		t.Fatal("group panel or shared badge missing")
	}
	for _, tier := range config.TierNames {
		tv := grp.Find(`[data-testid="tier-default-` + string(tier) + `"]`)
		if !tv.HasClass("empty-tier") {
			t.Errorf("tier %s not flagged empty", tier)
		}
		if msg := tv.Find(`[data-testid="empty-tier"]`).Text(); !strings.Contains(msg, "requests for "+string(tier)+" fail") {
			t.Errorf("tier %s empty message %q", tier, msg)
		}
		// No logic models yet: the add control says so and links to create one.
		no := tv.Find(`[data-testid="cand-add-no-models"]`)
		if h, _ := no.Find("a").Attr("href"); h != "/logic-models/new" {
			t.Errorf("tier %s: no-models link %q", tier, h)
		}
		if tv.Find(`[data-testid="cand-add-form"]`).Length() != 0 {
			t.Errorf("tier %s offers an add form without logic models", tier)
		}
	}
	if got := webtest.TestID(doc, "tier-timeout").First().Text(); !strings.Contains(got, "15 s") || !strings.Contains(got, "first chunk 5 s") {
		t.Fatalf("fast timeouts shown as %q", got)
	}
	if webtest.TestID(doc, "same-models-warning").Length() != 0 {
		t.Fatal("same-models warning on empty tiers")
	}

	// A candidate clears the red flag of its tier only.
	seedModels(t, env, "gpt-mini")
	res, _ = admin.PostForm(tierPath(t, env, "default", config.TierFast)+"/candidates", url.Values{"logic_model": {"gpt-mini"}})
	wantStatus(t, "add after seeding", res, http.StatusOK)
	_, doc = admin.Get("/route-groups")
	if webtest.TestID(doc, "tier-default-fast").HasClass("empty-tier") || !webtest.TestID(doc, "tier-default-deep").HasClass("empty-tier") {
		t.Fatal("empty flags wrong after adding to fast")
	}
}

func TestRouteGroupCandidatesAddMoveEditRemove(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	seedModels(t, env, "gpt-mini", "gpt-4o", "gpt-4o-canary", "claude")
	createGroup(t, env, config.RouteGroup{Name: "default"})

	// htmx add: the tier fragment comes back, with the candidate tag.
	admin.HTMX = true
	res, doc := admin.PostForm(tierPath(t, env, "default", config.TierFast)+"/candidates", url.Values{"logic_model": {"gpt-mini"}, "priority": {""}, "weight": {"100"}})
	wantStatus(t, "htmx add", res, http.StatusOK)
	if !isFragment(doc) || webtest.TestID(doc, "tier-default-fast").Length() != 1 {
		t.Fatal("htmx add did not answer with the tier fragment")
	}
	tag := webtest.TestID(doc, "cand-default-fast-gpt-mini")
	if tag.Length() != 1 || tag.Find(`[data-testid="cand-priority"]`).Text() != "P1" || tag.Find(`[data-testid="cand-weight"]`).Text() != "w100" {
		t.Fatalf("candidate tag: %q", tag.Text())
	}
	// The chosen model is no longer offered in this tier.
	if webtest.TestID(doc, "cand-add-model").Find(`option[value="gpt-mini"]`).Length() != 0 {
		t.Fatal("add select still offers a model already in the tier")
	}
	// The same-models warning is refreshed out of band.
	if doc.Find(`[hx-swap-oob="true"]:not(#draft-state)`).Length() != 1 {
		t.Fatal("tier fragment lacks the out-of-band same-models element")
	}

	// Plain form posts: 303 to the group's anchor; blank weight means 100 and
	// blank priority a new last level.
	admin.HTMX = false
	plain := admin.NoRedirects()
	res, _ = plain.PostForm(tierPath(t, env, "default", config.TierFast)+"/candidates", url.Values{"logic_model": {"claude"}})
	wantStatus(t, "plain add", res, http.StatusSeeOther)
	if loc := res.Header.Get("Location"); loc != "/route-groups#group-default" {
		t.Fatalf("plain add redirect %q", loc)
	}
	if got := chain(t, env, "default", config.TierFast); got != "gpt-mini:1/100 claude:2/100" {
		t.Fatalf("fast chain %q", got)
	}
	res, _ = plain.PostForm(tierPath(t, env, "default", config.TierStandard)+"/candidates", url.Values{"logic_model": {"gpt-4o"}, "weight": {"100"}})
	wantStatus(t, "plain add standard", res, http.StatusSeeOther)

	// Deep: a canary pair at priority 1 (90/10) and a backup level.
	deep := tierPath(t, env, "default", config.TierDeep) + "/candidates"
	for _, v := range []url.Values{
		{"logic_model": {"gpt-4o"}, "priority": {"1"}, "weight": {"90"}},
		{"logic_model": {"gpt-4o-canary"}, "priority": {"1"}, "weight": {"10"}},
		{"logic_model": {"claude"}, "priority": {""}, "weight": {"100"}},
	} {
		res, _ = plain.PostForm(deep, v)
		wantStatus(t, "add to deep "+v.Get("logic_model"), res, http.StatusSeeOther)
	}
	if got := chain(t, env, "default", config.TierDeep); got != "gpt-4o:1/90 gpt-4o-canary:1/10 claude:2/100" {
		t.Fatalf("deep chain %q", got)
	}
	_, doc = admin.Get("/route-groups")
	deepTier := webtest.TestID(doc, "tier-default-deep")
	level := deepTier.Find(`[data-testid="cand-level"]`)
	if level.Length() != 1 || level.Find(".cand").Length() != 2 {
		t.Fatalf("canary pair not grouped: %d levels", level.Length())
	}
	if lbl := strings.TrimSpace(level.Find(`[data-testid="cand-level-label"]`).Text()); !strings.Contains(lbl, "canary 90/10") {
		t.Fatalf("level label %q", lbl)
	}
	if s := deepTier.Find(`[data-testid="cand-default-deep-gpt-4o-canary"] [data-testid="cand-share"]`).Text(); s != "10%" {
		t.Fatalf("canary share %q", s)
	}
	// Every tier differs: no warning.
	if webtest.TestID(doc, "same-models-warning").Length() != 0 {
		t.Fatal("same-models warning while tiers differ")
	}

	// Invalid adds: 422 with the message next to the field; nothing stored.
	admin.HTMX = true
	before := chain(t, env, "default", config.TierDeep)
	for _, tc := range []struct {
		name, field string
		v           url.Values
	}{
		{"duplicate", "logic_model", url.Values{"logic_model": {"claude"}}},
		{"unknown model", "logic_model", url.Values{"logic_model": {"no-such-model"}}},
		{"missing model", "logic_model", url.Values{"logic_model": {""}}},
		{"weight not a number", "weight", url.Values{"logic_model": {"gpt-mini"}, "weight": {"lots"}}},
		{"weight out of range", "weight", url.Values{"logic_model": {"gpt-mini"}, "weight": {"20000"}}},
		{"priority not a number", "priority", url.Values{"logic_model": {"gpt-mini"}, "priority": {"first"}}},
		{"priority out of range", "priority", url.Values{"logic_model": {"gpt-mini"}, "priority": {"5000"}}},
	} {
		t.Run("add "+tc.name, func(t *testing.T) {
			res, doc := admin.PostForm(deep, tc.v)
			wantStatus(t, tc.name, res, http.StatusUnprocessableEntity)
			tier := webtest.TestID(doc, "tier-default-deep")
			if !isFragment(doc) || tier.Find(`[data-testid="error-`+tc.field+`"]`).Length() != 1 {
				t.Fatalf("no %s error in the tier fragment", tc.field)
			}
			if _, open := tier.Find(`[data-testid="cand-add-deep"]`).Attr("open"); !open {
				t.Fatal("add form folded away with an error in it")
			}
		})
	}
	if got := chain(t, env, "default", config.TierDeep); got != before {
		t.Fatalf("an invalid add changed the chain: %q", got)
	}

	// Move the canary up: it is split out in front of its partner; weights
	// are untouched.
	res, doc = admin.PostForm(candPath(t, env, "default", config.TierDeep, "gpt-4o-canary")+"/move", url.Values{"dir": {"up"}})
	wantStatus(t, "move up", res, http.StatusOK)
	if got := chain(t, env, "default", config.TierDeep); got != "gpt-4o-canary:1/10 gpt-4o:2/90 claude:3/100" {
		t.Fatalf("after move up: %q", got)
	}
	if webtest.TestID(doc, "tier-default-deep").Find(`[data-testid="cand-level"]`).Length() != 0 {
		t.Fatal("fragment still shows a shared level after the split")
	}
	if p, _ := webtest.TestID(doc, "cand-default-deep-gpt-4o").Attr("data-priority"); p != "2" {
		t.Fatalf("fragment shows gpt-4o at priority %q", p)
	}
	// Down swaps with the next level.
	res, _ = admin.PostForm(candPath(t, env, "default", config.TierDeep, "gpt-4o")+"/move", url.Values{"dir": {"down"}})
	wantStatus(t, "move down", res, http.StatusOK)
	if got := chain(t, env, "default", config.TierDeep); got != "gpt-4o-canary:1/10 claude:2/100 gpt-4o:3/90" {
		t.Fatalf("after move down: %q", got)
	}
	res, _ = admin.PostForm(candPath(t, env, "default", config.TierDeep, "gpt-4o")+"/move", url.Values{"dir": {"sideways"}})
	wantStatus(t, "bad dir", res, http.StatusBadRequest)
	// A plain move redirects.
	admin.HTMX = false
	res, _ = plain.PostForm(candPath(t, env, "default", config.TierDeep, "gpt-4o")+"/move", url.Values{"dir": {"up"}})
	wantStatus(t, "plain move", res, http.StatusSeeOther)
	if got := chain(t, env, "default", config.TierDeep); got != "gpt-4o-canary:1/10 gpt-4o:2/90 claude:3/100" {
		t.Fatalf("after plain move up: %q", got)
	}

	// The edit button opens the inline form (htmx fragment or, without
	// JavaScript, the page with ?edit=).
	cand := candPath(t, env, "default", config.TierDeep, "gpt-4o")
	cid := strings.TrimPrefix(cand, "/candidates/")
	res, _ = plain.Get(tierPath(t, env, "default", config.TierDeep) + "?edit=" + cid)
	wantStatus(t, "plain edit open", res, http.StatusSeeOther)
	if loc := res.Header.Get("Location"); loc != "/route-groups?edit="+cid+"#group-default" {
		t.Fatalf("edit redirect %q", loc)
	}
	_, doc = admin.Get("/route-groups?edit=" + cid)
	form := webtest.TestID(doc, "tier-default-deep").Find(`[data-testid="cand-edit-form"]`)
	if v, _ := form.Find(`[data-testid="cand-edit-weight"]`).Attr("value"); v != "90" {
		t.Fatalf("edit form weight %q", v)
	}
	admin.HTMX = true
	_, doc = admin.Get(tierPath(t, env, "default", config.TierDeep) + "?edit=" + cid)
	if !isFragment(doc) || webtest.TestID(doc, "cand-edit-form").Length() != 1 {
		t.Fatal("htmx edit did not open the inline form")
	}

	// Edit priority and weight: join claude's level as a 25% canary.
	res, doc = admin.PostForm(cand, url.Values{"priority": {"3"}, "weight": {"25"}})
	wantStatus(t, "edit", res, http.StatusOK)
	if got := chain(t, env, "default", config.TierDeep); got != "gpt-4o-canary:1/10 claude:3/100 gpt-4o:3/25" {
		t.Fatalf("after edit: %q", got)
	}
	if lbl := webtest.TestID(doc, "cand-level-label").Text(); !strings.Contains(lbl, "canary 80/20") {
		t.Fatalf("level label after edit %q", lbl)
	}
	// Weight 0 no longer parks: it is refused, naming Park.
	res, _ = admin.PostForm(cand, url.Values{"priority": {"3"}, "weight": {"0"}})
	wantStatus(t, "weight 0", res, http.StatusUnprocessableEntity)
	// The Park button keeps it in the chain with a parked look, and its weight.
	res, doc = admin.PostForm(cand+"/parked", url.Values{"parked": {"true"}})
	wantStatus(t, "park", res, http.StatusOK)
	if c := webtest.TestID(doc, "cand-default-deep-gpt-4o"); !c.HasClass("parked") || c.AttrOr("data-weight", "") != "25" || c.Find(`[data-testid="cand-unpark"]`).Length() != 1 {
		t.Fatal("parked candidate not shown as parked with its weight and Unpark")
	}
	res, doc = admin.PostForm(cand+"/parked", url.Values{"parked": {"false"}})
	wantStatus(t, "unpark", res, http.StatusOK)
	if webtest.TestID(doc, "cand-default-deep-gpt-4o").HasClass("parked") {
		t.Fatal("unpark did not unpark")
	}
	// Invalid edits: 422, message by the field, form still open, nothing stored.
	for _, tc := range []struct {
		field string
		v     url.Values
	}{
		{"weight", url.Values{"priority": {"3"}, "weight": {"heavy"}}},
		{"weight", url.Values{"priority": {"3"}, "weight": {"-20000"}}},
		{"weight", url.Values{"priority": {"3"}, "weight": {"-5"}}},
		{"weight", url.Values{"priority": {"3"}, "weight": {""}}},
		{"priority", url.Values{"priority": {"0"}, "weight": {"5"}}},
		{"priority", url.Values{"priority": {""}, "weight": {"5"}}},
	} {
		res, doc = admin.PostForm(cand, tc.v)
		wantStatus(t, "invalid edit "+tc.v.Encode(), res, http.StatusUnprocessableEntity)
		if webtest.TestID(doc, "cand-edit-form").Find(`[data-testid="error-`+tc.field+`"]`).Length() != 1 {
			t.Fatalf("invalid edit %s: no %s error", tc.v.Encode(), tc.field)
		}
	}
	if got := draftCandidate(t, env, "default", config.TierDeep, "gpt-4o"); got.Priority != 3 || got.Weight != 25 {
		t.Fatalf("invalid edits changed the candidate: %+v", got)
	}

	// Remove.
	res, doc = admin.PostForm(cand+"/delete", nil)
	wantStatus(t, "remove", res, http.StatusOK)
	if webtest.TestID(doc, "cand-default-deep-gpt-4o").Length() != 0 {
		t.Fatal("removed candidate still shown")
	}
	if got := chain(t, env, "default", config.TierDeep); got != "gpt-4o-canary:1/10 claude:3/100" {
		t.Fatalf("after remove: %q", got)
	}
	res, _ = admin.PostForm(cand+"/delete", nil)
	wantStatus(t, "remove twice", res, http.StatusNotFound)
}

func TestRouteGroupTierTimeouts(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	createGroup(t, env, config.RouteGroup{Name: "default"})
	path := tierPath(t, env, "default", config.TierFast)

	admin.HTMX = true
	res, doc := admin.PostForm(path, url.Values{"timeout_ms": {"20000"}, "first_chunk_timeout_ms": {"4000"}})
	wantStatus(t, "save timeouts", res, http.StatusOK)
	if got := webtest.TestID(doc, "tier-timeout").Text(); !strings.Contains(got, "20 s") || !strings.Contains(got, "first chunk 4 s") {
		t.Fatalf("timeouts shown as %q", got)
	}
	tier := draftTier(t, env, "default", config.TierFast)
	if tier.TimeoutMS != 20000 || tier.FirstChunkTimeoutMS != 4000 {
		t.Fatalf("stored %d/%d", tier.TimeoutMS, tier.FirstChunkTimeoutMS)
	}

	for _, tc := range []struct {
		name, field string
		v           url.Values
	}{
		{"first chunk beyond timeout", "first_chunk_timeout_ms", url.Values{"timeout_ms": {"1000"}, "first_chunk_timeout_ms": {"2000"}}},
		{"not a number", "timeout_ms", url.Values{"timeout_ms": {"15s"}, "first_chunk_timeout_ms": {"1000"}}},
		{"zero", "timeout_ms", url.Values{"timeout_ms": {"0"}, "first_chunk_timeout_ms": {"1000"}}},
		{"negative first chunk", "first_chunk_timeout_ms", url.Values{"timeout_ms": {"1000"}, "first_chunk_timeout_ms": {"-1"}}},
		{"over an hour", "timeout_ms", url.Values{"timeout_ms": {"4000000"}, "first_chunk_timeout_ms": {"1000"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, doc := admin.PostForm(path, tc.v)
			wantStatus(t, tc.name, res, http.StatusUnprocessableEntity)
			form := webtest.TestID(doc, "tier-default-fast").Find(`[data-testid="tier-timeout-form"]`)
			if form.Find(`[data-testid="error-`+tc.field+`"]`).Length() != 1 {
				t.Fatalf("no %s error", tc.field)
			}
			if v, _ := form.Find(`[name="timeout_ms"]`).Attr("value"); v != tc.v.Get("timeout_ms") {
				t.Fatalf("form lost the submitted value: %q", v)
			}
		})
	}
	if tier := draftTier(t, env, "default", config.TierFast); tier.TimeoutMS != 20000 || tier.FirstChunkTimeoutMS != 4000 {
		t.Fatalf("invalid input was stored: %d/%d", tier.TimeoutMS, tier.FirstChunkTimeoutMS)
	}

	// Without htmx: invalid input re-renders the whole page with 422; valid
	// input redirects to the group.
	admin.HTMX = false
	res, doc = admin.PostForm(path, url.Values{"timeout_ms": {"1000"}, "first_chunk_timeout_ms": {"2000"}})
	wantStatus(t, "plain invalid", res, http.StatusUnprocessableEntity)
	if isFragment(doc) || webtest.TestID(doc, "tier-default-fast").Find(`[data-testid="error-first_chunk_timeout_ms"]`).Length() != 1 {
		t.Fatal("plain invalid post should show the full page with the error")
	}
	res, _ = admin.NoRedirects().PostForm(path, url.Values{"timeout_ms": {"9000"}, "first_chunk_timeout_ms": {"3000"}})
	wantStatus(t, "plain valid", res, http.StatusSeeOther)
	if loc := res.Header.Get("Location"); loc != "/route-groups#group-default" {
		t.Fatalf("redirect %q", loc)
	}
	_, doc = admin.Get("/route-groups")
	if !strings.Contains(webtest.TestID(doc, "flash").Text(), "Timeouts of default / fast saved") {
		t.Fatalf("flash %q", webtest.TestID(doc, "flash").Text())
	}
	res, _ = admin.PostForm("/tiers/999999", url.Values{"timeout_ms": {"1000"}, "first_chunk_timeout_ms": {"100"}})
	wantStatus(t, "unknown tier", res, http.StatusNotFound)
}

func TestRouteGroupSameModelsWarningAndModelMarks(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	seedModels(t, env, "gpt-4o", "gpt-mini")
	ctx := t.Context()
	// An embedding model and a model without deployments.
	emb, err := env.Store.CreateLogicModel(ctx, config.LogicModel{Code: "embed-3", Kind: config.KindEmbedding, EmbeddingDimension: 1536})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.CreateDeployment(ctx, emb, config.Deployment{Provider: "openai", UpstreamModel: "text-embedding-3", Weight: 100, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.CreateLogicModel(ctx, config.LogicModel{Code: "orphan", Kind: config.KindChat}); err != nil {
		t.Fatal(err)
	}
	createGroup(t, env, config.RouteGroup{Name: "default"})

	admin.HTMX = true
	for _, tier := range config.TierNames {
		res, _ := admin.PostForm(tierPath(t, env, "default", tier)+"/candidates", url.Values{"logic_model": {"gpt-4o"}})
		wantStatus(t, "add "+string(tier), res, http.StatusOK)
	}
	// Removing the orphan answers with the warning refreshed out of band.
	res, _ := admin.PostForm(tierPath(t, env, "default", config.TierDeep)+"/candidates", url.Values{"logic_model": {"orphan"}})
	wantStatus(t, "add orphan", res, http.StatusOK)
	res, doc := admin.PostForm(candPath(t, env, "default", config.TierDeep, "orphan")+"/delete", nil)
	wantStatus(t, "remove orphan", res, http.StatusOK)
	oob := doc.Find(`[hx-swap-oob="true"]`)
	if oob.Find(`[data-testid="same-models-warning"]`).Length() != 1 {
		t.Fatal("htmx answer does not refresh the same-models warning")
	}

	admin.HTMX = false
	_, doc = admin.Get("/route-groups")
	warn := webtest.TestID(doc, "group-default").Find(`[data-testid="same-models-warning"]`)
	if warn.Length() != 1 || !strings.Contains(warn.Text(), "gpt-4o") {
		t.Fatalf("same-models warning missing: %q", warn.Text())
	}

	// Deep gets a different chain: the warning disappears.
	res, _ = admin.PostForm(tierPath(t, env, "default", config.TierDeep)+"/candidates", url.Values{"logic_model": {"orphan"}})
	wantStatus(t, "add orphan to deep", res, http.StatusOK)
	_, doc = admin.Get("/route-groups")
	if webtest.TestID(doc, "same-models-warning").Length() != 0 {
		t.Fatal("warning shown although deep differs")
	}
	// orphan has no deployment: a warning mark with the reason.
	mark := webtest.TestID(doc, "cand-default-deep-orphan").Find(`[data-testid="cand-unusable"]`)
	if title, _ := mark.Attr("title"); mark.Length() != 1 || !strings.Contains(title, "no deployments") {
		t.Fatalf("unusable mark %d %q", mark.Length(), title)
	}
	if webtest.TestID(doc, "cand-default-deep-gpt-4o").Find(`[data-testid="cand-unusable"]`).Length() != 0 {
		t.Fatal("usable model marked unusable")
	}

	// Embedding candidates show their kind.
	res, _ = admin.PostForm(tierPath(t, env, "default", config.TierFast)+"/candidates", url.Values{"logic_model": {"embed-3"}})
	wantStatus(t, "add embedding", res, http.StatusOK)
	_, doc = admin.Get("/route-groups")
	if k := webtest.TestID(doc, "cand-default-fast-embed-3").Find(`[data-testid="cand-kind"]`).Text(); k != "embedding" {
		t.Fatalf("kind %q", k)
	}
	if webtest.TestID(doc, "cand-default-fast-gpt-4o").Find(`[data-testid="cand-kind"]`).Length() != 0 {
		t.Fatal("chat model shows a kind badge")
	}

	// A disabled provider makes every model on it unusable.
	snap, _, _ := env.Store.Draft(ctx)
	p := snap.Providers[0]
	p.Enabled = false
	if err := env.Store.UpdateProvider(ctx, p.ID, p); err != nil {
		t.Fatal(err)
	}
	_, doc = admin.Get("/route-groups")
	mark = webtest.TestID(doc, "cand-default-fast-gpt-4o").Find(`[data-testid="cand-unusable"]`)
	if title, _ := mark.Attr("title"); !strings.Contains(title, "disabled") {
		t.Fatalf("disabled provider not explained: %q", title)
	}
}

func TestRouteGroupDedicatedWithFallback(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	if _, err := env.Store.CreateTenant(t.Context(), config.Tenant{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	createGroup(t, env, config.RouteGroup{Name: "shared-pool"})

	_, doc := admin.Get("/route-groups/new")
	if webtest.TestID(doc, "field-tenant").Find(`option[value="acme"]`).Length() != 1 {
		t.Fatal("tenant not offered")
	}
	if webtest.TestID(doc, "field-fallback").Find(`option[value="shared-pool"]`).Length() != 1 {
		t.Fatal("shared group not offered as fallback")
	}
	if !strings.Contains(webtest.TestID(doc, "fallback-hint").Text(), "dedicated") {
		t.Fatal("fallback hint missing")
	}

	// A shared group cannot have a fallback: 422, nothing stored.
	admin.HTMX = true
	res, doc := admin.PostForm("/route-groups", url.Values{"name": {"loose"}, "tenant": {""}, "fallback": {"shared-pool"}})
	wantStatus(t, "shared with fallback", res, http.StatusUnprocessableEntity)
	if !isFragment(doc) || webtest.TestID(doc, "error-fallback").Length() != 1 {
		t.Fatal("no fallback error in the form fragment")
	}
	res, doc = admin.PostForm("/route-groups", url.Values{"name": {"bad name"}, "tenant": {"ghost"}})
	wantStatus(t, "bad name and tenant", res, http.StatusUnprocessableEntity)
	if webtest.TestID(doc, "error-name").Length() != 1 {
		t.Fatal("no name error")
	}
	snap, _, _ := env.Store.Draft(t.Context())
	if len(snap.RouteGroups) != 1 {
		t.Fatalf("invalid forms stored groups: %d", len(snap.RouteGroups))
	}

	res, _ = admin.PostForm("/route-groups", url.Values{"name": {"acme-pool"}, "description": {"Acme only"}, "tenant": {"acme"}, "fallback": {"shared-pool"}})
	wantStatus(t, "dedicated", res, http.StatusOK)
	if res.Header.Get("HX-Redirect") != "/route-groups#group-acme-pool" {
		t.Fatalf("HX-Redirect %q", res.Header.Get("HX-Redirect"))
	}
	g := draftGroup(t, env, "acme-pool")
	if g.Tenant != "acme" || g.Fallback != "shared-pool" {
		t.Fatalf("stored %+v", g)
	}
	admin.HTMX = false
	_, doc = admin.Get("/route-groups")
	panel := webtest.TestID(doc, "group-acme-pool")
	if got := panel.Find(`[data-testid="group-tenant"]`).Text(); got != "dedicated to acme" {
		t.Fatalf("tenant badge %q", got)
	}
	fb := panel.Find(`[data-testid="group-fallback"]`)
	if !strings.Contains(fb.Text(), "→") || !strings.Contains(fb.Text(), "shared-pool") {
		t.Fatalf("fallback badge %q", fb.Text())
	}
	if webtest.TestID(doc, "group-shared-pool").Find(`[data-testid="group-shared"]`).Length() != 1 {
		t.Fatal("shared badge missing")
	}

	// Edit: fallback none; the form shows the current values.
	_, doc = admin.Get("/route-groups/" + itoa(g.ID) + "/edit")
	if v, _ := webtest.TestID(doc, "field-fallback").Find("option[selected]").Attr("value"); v != "shared-pool" {
		t.Fatalf("edit form fallback %q", v)
	}
	if webtest.TestID(doc, "field-fallback").Find(`option[value="acme-pool"]`).Length() != 0 {
		t.Fatal("a group is offered as its own fallback")
	}
	res, _ = admin.NoRedirects().PostForm("/route-groups/"+itoa(g.ID), url.Values{"name": {"acme-pool"}, "tenant": {"acme"}, "fallback": {"none"}})
	wantStatus(t, "edit", res, http.StatusSeeOther)
	if g := draftGroup(t, env, "acme-pool"); g.Fallback != config.FallbackNone {
		t.Fatalf("fallback after edit %q", g.Fallback)
	}
	_, doc = admin.Get("/route-groups")
	if got := webtest.TestID(doc, "group-acme-pool").Find(`[data-testid="group-fallback"]`).Text(); !strings.Contains(got, "none") {
		t.Fatalf("fallback badge after edit %q", got)
	}
	res, _ = admin.Get("/route-groups/999999/edit")
	wantStatus(t, "edit unknown", res, http.StatusNotFound)
}

func TestRouteGroupDeleteRefusedWhileCallerBound(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	gid := createGroup(t, env, config.RouteGroup{Name: "default"})
	cid, err := env.Store.CreateCaller(t.Context(), config.Caller{Name: "search", RouteGroup: "default", PriorityClass: config.ClassInteractive, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}

	_, doc := admin.Get("/route-groups")
	if got := webtest.TestID(doc, "group-callers").Text(); !strings.Contains(got, "search") {
		t.Fatalf("bound callers %q", got)
	}
	if h, _ := webtest.TestID(doc, "group-delete").Closest("form").Attr("hx-confirm"); !strings.Contains(h, "default") {
		t.Fatalf("delete has no confirmation: %q", h)
	}

	res, doc := admin.PostForm("/route-groups/"+itoa(gid)+"/delete", nil)
	wantStatus(t, "refused delete (after redirect)", res, http.StatusOK)
	flash := webtest.TestID(doc, "flash-refused").Text()
	if !strings.Contains(flash, "Not deleted") || !strings.Contains(flash, "search") {
		t.Fatalf("flash %q", flash)
	}
	draftGroup(t, env, "default") // still there

	if err := env.Store.DeleteCaller(t.Context(), cid); err != nil {
		t.Fatal(err)
	}
	res, doc = admin.PostForm("/route-groups/"+itoa(gid)+"/delete", nil)
	wantStatus(t, "delete", res, http.StatusOK)
	if !strings.Contains(webtest.TestID(doc, "flash").Text(), "deleted") || webtest.TestID(doc, "group-default").Length() != 0 {
		t.Fatal("group not deleted")
	}
	if webtest.TestID(doc, "empty").Length() != 1 {
		t.Fatal("empty state not shown after deleting the last group")
	}
}

func TestRouteGroupViewerSeesNoControls(t *testing.T) {
	env := webtest.New(t)
	seedModels(t, env, "gpt-4o", "gpt-mini")
	createGroup(t, env, config.RouteGroup{Name: "default"})
	admin := env.Login(t, "ops", store.RoleAdmin)
	for _, code := range []string{"gpt-4o", "gpt-mini"} {
		res, _ := admin.PostForm(tierPath(t, env, "default", config.TierFast)+"/candidates", url.Values{"logic_model": {code}, "priority": {"1"}})
		wantStatus(t, "add", res, http.StatusOK)
	}

	viewer := env.Login(t, "watcher", store.RoleViewer)
	_, doc := viewer.Get("/route-groups")
	if webtest.TestID(doc, "cand-default-fast-gpt-4o").Length() != 1 {
		t.Fatal("viewer does not see the chain")
	}
	for _, id := range []string{"group-new", "group-edit", "group-delete", "cand-up", "cand-down", "cand-edit", "cand-remove",
		"cand-add-fast", "cand-add-form", "tier-timeout-edit", "tier-timeout-form"} {
		if n := webtest.TestID(doc, id).Length(); n != 0 {
			t.Errorf("viewer sees %s (%d)", id, n)
		}
	}
	_, doc = viewer.Get("/route-groups?edit=" + strings.TrimPrefix(candPath(t, env, "default", config.TierFast, "gpt-4o"), "/candidates/"))
	if webtest.TestID(doc, "cand-edit-form").Length() != 0 {
		t.Fatal("viewer gets the edit form")
	}
	for _, p := range []string{
		tierPath(t, env, "default", config.TierFast) + "/candidates",
		tierPath(t, env, "default", config.TierFast),
		candPath(t, env, "default", config.TierFast, "gpt-4o") + "/move",
		candPath(t, env, "default", config.TierFast, "gpt-4o") + "/delete",
		"/route-groups",
	} {
		res, _ := viewer.PostForm(p, url.Values{"logic_model": {"gpt-mini"}, "dir": {"up"}, "name": {"x"}})
		wantStatus(t, "viewer POST "+p, res, http.StatusForbidden)
	}
	if got := chain(t, env, "default", config.TierFast); got != "gpt-4o:1/100 gpt-mini:1/100" {
		t.Fatalf("viewer changed the chain: %q", got)
	}
}

// TestRouteGroupGlyphButtonsHaveNames: the ▲ ▼ ✎ ✕ buttons of a tier's
// candidates say what they do to which model in which tier.
func TestRouteGroupGlyphButtonsHaveNames(t *testing.T) {
	env := webtest.New(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	seedModels(t, env, "gpt-mini")
	createGroup(t, env, config.RouteGroup{Name: "default"})
	res, _ := admin.PostForm(tierPath(t, env, "default", config.TierStandard)+"/candidates", url.Values{"logic_model": {"gpt-mini"}, "weight": {"100"}})
	wantStatus(t, "add", res, http.StatusOK)
	_, doc := admin.Get("/route-groups")
	tag := webtest.TestID(doc, "cand-default-standard-gpt-mini")
	for id, want := range map[string]string{
		"cand-up":     "Move gpt-mini up in default / standard",
		"cand-down":   "Move gpt-mini down in default / standard",
		"cand-edit":   "Edit priority and weight of gpt-mini in default / standard",
		"cand-remove": "Remove gpt-mini from default / standard",
	} {
		if got, _ := tag.Find(`[data-testid="` + id + `"]`).Attr("aria-label"); got != want {
			t.Errorf("%s: accessible name %q, want %q", id, got, want)
		}
	}
}
