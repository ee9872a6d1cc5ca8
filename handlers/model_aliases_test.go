package handlers_test

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/calllog"
	"switchyard/web/webtest"
)

// aliasSetup is a group "default" whose deep tier reaches logic model big.
func aliasSetup(t *testing.T) (*webtest.Env, int64) {
	t.Helper()
	env := webtest.New(t)
	seedModels(t, env, "small", "big")
	gid := createGroup(t, env, config.RouteGroup{Name: "default"})
	tier := draftTier(t, env, "default", config.TierDeep)
	if _, err := env.Store.AddCandidate(t.Context(), tier.ID, config.Candidate{LogicModel: "big", Weight: 100}); err != nil {
		t.Fatal(err)
	}
	return env, gid
}

func draftAliases(t *testing.T, env *webtest.Env) []config.ModelAlias {
	t.Helper()
	return draftGroup(t, env, "default").Aliases
}

func aliasRows(doc *goquery.Document) []string {
	var out []string
	doc.Find(`[data-testid="alias-row"]`).Each(func(_ int, s *goquery.Selection) {
		p, _ := s.Attr("data-pattern")
		tg, _ := s.Attr("data-target")
		out = append(out, p+" "+tg)
	})
	return out
}

// The Model aliases section: add, edit, reorder and remove, as plain form
// posts (303 back to the section) and as htmx (the section swapped), with
// per-field errors answered 422; every change dirties the draft.
func TestModelAliasesConsole(t *testing.T) {
	env, gid := aliasSetup(t)
	admin := env.Login(t, "ops", store.RoleAdmin)
	base := "/route-groups/" + itoa(gid) + "/aliases"
	rev0, _ := env.Store.DraftRevision(t.Context())

	// A plain post adds and goes back to the group's section.
	res, _ := admin.NoRedirects().PostForm(base, url.Values{"pattern": {"claude-opus-*"}, "target": {"tier:deep"}})
	wantStatus(t, "plain add", res, http.StatusSeeOther)
	if loc := res.Header.Get("Location"); loc != "/route-groups#aliases-"+itoa(gid) {
		t.Fatalf("redirect to %q", loc)
	}
	if rev, _ := env.Store.DraftRevision(t.Context()); rev == rev0 {
		t.Fatal("adding an alias did not change the draft")
	}
	_, doc := admin.Get("/route-groups")
	sec := webtest.TestID(doc, "aliases-default")
	if id, _ := sec.Attr("id"); id != "aliases-"+itoa(gid) {
		t.Fatalf("section id %q", id)
	}
	if got := aliasRows(doc); !reflect.DeepEqual(got, []string{"claude-opus-* tier:deep"}) {
		t.Fatalf("rows %v", got)
	}
	if opts := sec.Find(`select[name="target"] option`).Map(func(_ int, s *goquery.Selection) string { v, _ := s.Attr("value"); return v }); !reflect.DeepEqual(opts,
		[]string{"tier:fast", "tier:standard", "tier:deep", "logic_model:big"}) {
		t.Fatalf("target choices %v (only the logic models the group reaches)", opts)
	}

	// htmx: the section comes back; errors are 422 with the field named.
	admin.HTMX = true
	res, doc = admin.PostForm(base, url.Values{"pattern": {"gpt-5.5-codex"}, "target": {"logic_model:big"}})
	wantStatus(t, "htmx add", res, http.StatusOK)
	if !isFragment(doc) || webtest.TestID(doc, "aliases-default").Length() != 1 {
		t.Fatal("htmx add did not answer the section")
	}
	for _, bad := range []struct {
		pattern, target, field, want string
	}{
		{"claude opus", "tier:deep", "pattern", "without spaces"},
		{"claude-[a]*", "tier:deep", "pattern", "[ is not allowed"},
		{"", "tier:deep", "pattern", "required"},
		{"claude-opus-*", "tier:fast", "pattern", "already alias 1"},
		{"o3*", "tier:ultra", "target", "fast, standard or deep"},
		{"o3*", "", "target", "must name a tier or a logic model"},
		{"o3*", "logic_model:ghost", "target", "does not exist"},
	} {
		res, doc := admin.PostForm(base, url.Values{"pattern": {bad.pattern}, "target": {bad.target}})
		wantStatus(t, "bad add "+bad.pattern+" "+bad.target, res, http.StatusUnprocessableEntity)
		if msg := webtest.TestID(doc, "error-"+bad.field).Text(); !strings.Contains(msg, bad.want) {
			t.Errorf("%q → %q: %s error %q, want %q", bad.pattern, bad.target, bad.field, msg, bad.want)
		}
		if v, _ := doc.Find(`[data-testid="alias-add-pattern"]`).Attr("value"); v != bad.pattern {
			t.Errorf("the add form lost what was typed: %q", v)
		}
	}

	// Edit: the form opens in the section, a bad value is 422 in place.
	_, doc = admin.Get(base + "?alias_edit=2")
	if webtest.TestID(doc, "alias-edit-form").Length() != 1 {
		t.Fatal("no edit form")
	}
	res, doc = admin.PostForm(base+"/2", url.Values{"was": {"gpt-5.5-codex"}, "pattern": {"gpt-*-codex"}, "target": {"tier:ultra"}})
	wantStatus(t, "bad edit", res, http.StatusUnprocessableEntity)
	if webtest.TestID(doc, "alias-edit-form").Length() != 1 || webtest.TestID(doc, "error-target").Length() != 1 {
		t.Fatal("a refused edit does not show its form with the error")
	}
	res, doc = admin.PostForm(base+"/2", url.Values{"was": {"gpt-5.5-codex"}, "pattern": {"gpt-*-codex"}, "target": {"tier:deep"}})
	wantStatus(t, "edit", res, http.StatusOK)
	res, _ = admin.PostForm(base, url.Values{"pattern": {"claude-haiku-*"}, "target": {"tier:fast"}})
	wantStatus(t, "add a third", res, http.StatusOK)

	// Reorder: buttons say what they move; the first cannot go up.
	_, doc = admin.Get("/route-groups")
	rows := doc.Find(`[data-testid="alias-row"]`)
	if rows.Length() != 3 {
		t.Fatalf("%d rows", rows.Length())
	}
	up := rows.Eq(1).Find(`[data-testid="alias-up"]`)
	if name, _ := up.Attr("aria-label"); name != "Move alias gpt-*-codex up in default" {
		t.Fatalf("up button's accessible name %q", name)
	}
	if _, dis := rows.Eq(0).Find(`[data-testid="alias-up"]`).Attr("disabled"); !dis {
		t.Fatal("the first alias can move up")
	}
	for _, b := range []string{"alias-down", "alias-edit", "alias-remove"} {
		if name, _ := rows.Eq(0).Find(`[data-testid="` + b + `"]`).Attr("aria-label"); !strings.Contains(name, "claude-opus-*") {
			t.Errorf("%s has no accessible name naming the alias: %q", b, name)
		}
	}
	res, doc = admin.PostForm(base+"/3/move", url.Values{"was": {"claude-haiku-*"}, "dir": {"up"}})
	wantStatus(t, "move", res, http.StatusOK)
	if got := aliasRows(doc); !reflect.DeepEqual(got, []string{"claude-opus-* tier:deep", "claude-haiku-* tier:fast", "gpt-*-codex tier:deep"}) {
		t.Fatalf("after moving up: %v", got)
	}
	// A stale position changes nothing and shows the list as it is.
	res, doc = admin.PostForm(base+"/3/delete", url.Values{"was": {"claude-haiku-*"}})
	wantStatus(t, "stale delete", res, http.StatusUnprocessableEntity)
	if webtest.TestID(doc, "aliases-problem").Length() != 1 || len(aliasRows(doc)) != 3 {
		t.Fatal("a stale removal was not refused with the list shown")
	}
	res, _ = admin.PostForm(base+"/1/delete", url.Values{"was": {"claude-opus-*"}})
	wantStatus(t, "delete", res, http.StatusOK)
	want := []config.ModelAlias{{Pattern: "claude-haiku-*", Tier: config.TierFast}, {Pattern: "gpt-*-codex", Tier: config.TierDeep}}
	if got := draftAliases(t, env); !reflect.DeepEqual(got, want) {
		t.Fatalf("draft aliases %+v", got)
	}

	// Without htmx the edit button opens the form on the page.
	admin.HTMX = false
	_, doc = admin.Get("/route-groups?alias_group=" + itoa(gid) + "&alias_edit=2")
	if v, _ := webtest.TestID(doc, "alias-edit-pattern").Attr("value"); v != "gpt-*-codex" {
		t.Fatalf("plain edit form pattern %q", v)
	}
	res, doc = admin.PostForm(base+"/2", url.Values{"was": {"gpt-*-codex"}, "pattern": {"gpt 5"}, "target": {"tier:deep"}})
	wantStatus(t, "plain bad edit", res, http.StatusUnprocessableEntity)
	if isFragment(doc) || webtest.TestID(doc, "error-pattern").Length() != 1 {
		t.Fatal("a plain refused edit is not the whole page with the error")
	}
}

// Viewers see the aliases but no control, and cannot post.
func TestModelAliasesViewer(t *testing.T) {
	env, gid := aliasSetup(t)
	if _, err := env.Store.AddModelAlias(t.Context(), gid, config.ModelAlias{Pattern: "claude-*", Tier: config.TierStandard}); err != nil {
		t.Fatal(err)
	}
	viewer := env.Login(t, "eve", store.RoleViewer)
	_, doc := viewer.Get("/route-groups")
	if got := aliasRows(doc); len(got) != 1 {
		t.Fatalf("viewer sees %v", got)
	}
	for _, id := range []string{"alias-add", "alias-edit", "alias-remove", "alias-up", "alias-down"} {
		if webtest.TestID(doc, id).Length() != 0 {
			t.Errorf("viewer sees %s", id)
		}
	}
	res, _ := viewer.PostForm("/route-groups/"+itoa(gid)+"/aliases", url.Values{"pattern": {"x"}, "target": {"tier:fast"}})
	wantStatus(t, "viewer add", res, http.StatusForbidden)
}

// The admin API carries aliases in the route group's JSON: created with
// it, replaced whole by a PUT that sends them, kept by one that does not.
func TestModelAliasesAPI(t *testing.T) {
	env, gid := aliasSetup(t)
	api := newCRUD(t, env)
	var g config.RouteGroup
	api.call(http.MethodPut, "/route-groups/"+itoa(gid), `{"aliases":[{"pattern":"claude-*","tier":"standard"},{"pattern":"gpt-5.5-codex","logic_model":"big"}]}`, http.StatusOK, &g)
	if len(g.Aliases) != 2 || g.Aliases[1].LogicModel != "big" {
		t.Fatalf("answer %+v", g.Aliases)
	}
	api.call(http.MethodPut, "/route-groups/"+itoa(gid), `{"description":"agents"}`, http.StatusOK, &g)
	if len(g.Aliases) != 2 || g.Description != "agents" {
		t.Fatalf("a PUT without aliases changed them: %+v", g)
	}
	e := api.fails(http.MethodPut, "/route-groups/"+itoa(gid), `{"aliases":[{"pattern":"bad pattern","tier":"fast"}]}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["aliases[0].pattern"] == "" {
		t.Fatalf("fields %v", e.Error.Fields)
	}
	// A list sent is taken whole, not merged into the stored one.
	e = api.fails(http.MethodPut, "/route-groups/"+itoa(gid), `{"aliases":[{"pattern":"x","logic_model":"ghost"}]}`, http.StatusUnprocessableEntity, "validation_failed")
	if e.Error.Fields["aliases[0].logic_model"] == "" || !strings.Contains(e.Error.Message, "does not exist") {
		t.Fatalf("an unknown logic model: %+v", e.Error)
	}
	var emptied config.RouteGroup
	api.call(http.MethodPut, "/route-groups/"+itoa(gid), `{"aliases":[]}`, http.StatusOK, &emptied)
	if len(emptied.Aliases) != 0 || len(draftAliases(t, env)) != 0 {
		t.Fatalf("an empty list did not remove them: %+v", emptied.Aliases)
	}
	var created config.RouteGroup
	api.call(http.MethodPost, "/route-groups", `{"name":"agents","aliases":[{"pattern":"o3*","tier":"deep"}]}`, http.StatusCreated, &created)
	if len(created.Aliases) != 1 || created.Aliases[0].Pattern != "o3*" {
		t.Fatalf("created %+v", created)
	}
}

// A call log's detail says where the alias it resolved through sent it,
// read from the version that served it, and lists the fields its vendor
// did not get.
func TestCallLogDetailShowsTheAlias(t *testing.T) {
	env, gid := aliasSetup(t)
	ctx := t.Context()
	for _, name := range []config.TierName{config.TierFast, config.TierStandard} {
		if _, err := env.Store.AddCandidate(ctx, draftTier(t, env, "default", name).ID, config.Candidate{LogicModel: "small", Weight: 100}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.Store.AddModelAlias(ctx, gid, config.ModelAlias{Pattern: "claude-opus-*", Tier: config.TierDeep}); err != nil {
		t.Fatal(err)
	}
	pub, err := env.Store.Publish(ctx, store.PublishInput{Author: "t", Message: "aliases", Check: func(s config.Snapshot) config.Result { return config.DryRun(s, webtest.Implemented) }})
	if err != nil {
		t.Fatal(err)
	}
	w, err := calllog.NewWriter(env.Store.DB(), calllog.WriterOptions{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	v := pub.Version.Number
	w.Write(calllog.Record{At: time.Now(), RequestID: "req-alias-1", Status: calllog.StatusOK, HTTPStatus: 200, RouteGroup: "default", Tier: "deep",
		RequestedModel: "claude-opus-5-5", ModelAlias: "claude-opus-*", LogicModel: "big", ConfigVersion: &v, DroppedFields: []string{"cache_control"}})
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	admin := env.Login(t, "ops", store.RoleAdmin)
	_, doc := admin.Get("/call-logs/req-alias-1")
	if got := strings.Join(strings.Fields(webtest.TestID(doc, "calllog-field-requested-model").Text()), " "); got != "claude-opus-5-5 → alias claude-opus-* → deep" {
		t.Fatalf("requested model: %q", got)
	}
	if got := webtest.TestID(doc, "calllog-dropped-field").Text(); got != "cache_control" {
		t.Fatalf("dropped fields: %q", got)
	}
	_, doc = admin.Get("/call-logs?range=24h&dropped_field=cache_control")
	if webtest.TestID(doc, "calllog-row-req-alias-1").Length() != 1 {
		t.Fatal("the dropped-field filter does not find the call")
	}
	_, doc = admin.Get("/call-logs?range=24h&dropped_field=metadata")
	if webtest.TestID(doc, "calllog-row-req-alias-1").Length() != 0 {
		t.Fatal("the dropped-field filter finds a call that kept the field")
	}
}
