package store_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/storetest"
)

// A route group's model aliases keep their order through the console's
// edits, publish, rollback and export → import; a deployment's web-search
// capability and strict field policy travel the same way.
func TestModelAliasesRoundTrip(t *testing.T) {
	t.Parallel()
	st, _ := storetest.New(t)
	ctx := context.Background()
	s := seed(t, st)
	aliases := func() []config.ModelAlias {
		t.Helper()
		snap, _, err := st.Draft(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return snap.RouteGroups[0].Aliases
	}
	patterns := func() string {
		var out []string
		for _, a := range aliases() {
			out = append(out, a.Pattern)
		}
		return strings.Join(out, " ")
	}
	for _, a := range []config.ModelAlias{
		{Pattern: "claude-opus-*", Tier: config.TierDeep},
		{Pattern: "claude-*", Tier: config.TierStandard},
		{Pattern: "gpt-4o-latest", LogicModel: "big"},
	} {
		if _, err := st.AddModelAlias(ctx, s.group, a); err != nil {
			t.Fatal(err)
		}
	}
	if got := aliases(); len(got) != 3 || got[2].LogicModel != "big" || got[2].Tier != "" || got[0].Tier != config.TierDeep {
		t.Fatalf("after adding: %+v", got)
	}

	// Refusals name the field; a stale position changes nothing.
	if _, err := st.AddModelAlias(ctx, s.group, config.ModelAlias{Pattern: "claude-*", Tier: config.TierFast}); !fieldErr(err, "pattern") {
		t.Fatalf("a pattern listed twice: %v", err)
	}
	if _, err := st.AddModelAlias(ctx, s.group, config.ModelAlias{Pattern: "x", LogicModel: "ghost"}); !fieldErr(err, "logic_model") {
		t.Fatalf("an unknown logic model: %v", err)
	}
	if _, err := st.AddModelAlias(ctx, s.group, config.ModelAlias{Pattern: "two words", Tier: config.TierFast}); !fieldErr(err, "pattern") {
		t.Fatalf("an invalid pattern: %v", err)
	}
	if err := st.MoveModelAlias(ctx, s.group, 2, "claude-opus-*", true); !errors.Is(err, store.ErrAliasesChanged) {
		t.Fatalf("a move of a stale position: %v", err)
	}
	if _, err := st.AddModelAlias(ctx, 1<<40, config.ModelAlias{Pattern: "x", Tier: config.TierFast}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown group: %v", err)
	}

	// Move, edit, remove.
	if err := st.MoveModelAlias(ctx, s.group, 2, "claude-*", true); err != nil {
		t.Fatal(err)
	}
	if got := patterns(); got != "claude-* claude-opus-* gpt-4o-latest" {
		t.Fatalf("after moving up: %s", got)
	}
	if err := st.MoveModelAlias(ctx, s.group, 3, "gpt-4o-latest", false); err != nil { // the last one stays
		t.Fatal(err)
	}
	if err := st.UpdateModelAlias(ctx, s.group, 2, "claude-opus-*", config.ModelAlias{Pattern: "claude-opus-*", LogicModel: "big"}); err != nil {
		t.Fatal(err)
	}
	if err := st.RemoveModelAlias(ctx, s.group, 1, "claude-*"); err != nil {
		t.Fatal(err)
	}
	want := []config.ModelAlias{{Pattern: "claude-opus-*", LogicModel: "big"}, {Pattern: "gpt-4o-latest", LogicModel: "big"}}
	if got := aliases(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after edit and removal: %+v", got)
	}
	// A logic model an alias names cannot be deleted.
	var re *store.ReferencedError
	if err := st.DeleteLogicModel(ctx, s.big); !errors.As(err, &re) || !strings.Contains(re.Message, "model alias claude-opus-* of default") {
		t.Fatalf("deleting a logic model an alias names: %v", err)
	}

	// The deployment settings.
	d := deployment(t, st, "small", "gpt-4o-mini")
	d.Capabilities.WebSearch, d.StrictFields = true, true
	if err := st.UpdateDeployment(ctx, s.dep70, d); err != nil {
		t.Fatal(err)
	}
	if got := deployment(t, st, "small", "gpt-4o-mini"); !got.Capabilities.WebSearch || !got.StrictFields {
		t.Fatalf("deployment settings not stored: %+v", got)
	}

	// Publish v1; the text carries both; change everything; roll back.
	v1, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "aliases", Check: check})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"    aliases:\n      - pattern: claude-opus-*\n        logic_model: big\n      - pattern: gpt-4o-latest\n", "web_search: true", "strict_fields: true"} {
		if !strings.Contains(v1.Version.Snapshot, w) {
			t.Fatalf("published text lacks %q:\n%s", w, v1.Version.Snapshot)
		}
	}
	g := draftGroup(t, st)
	g.Aliases = []config.ModelAlias{{Pattern: "o3*", Tier: config.TierDeep}}
	if err := st.UpdateRouteGroup(ctx, s.group, g); err != nil {
		t.Fatal(err)
	}
	if got := patterns(); got != "o3*" {
		t.Fatalf("the API's replacement: %s", got)
	}
	g.Aliases = nil // the console's group form: aliases kept
	g.Description = "kept"
	if err := st.UpdateRouteGroup(ctx, s.group, g); err != nil || patterns() != "o3*" {
		t.Fatalf("an update without aliases changed them: %v %s", err, patterns())
	}
	d.Capabilities.WebSearch, d.StrictFields = false, false
	if err := st.UpdateDeployment(ctx, s.dep70, d); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "other", Check: check}); err != nil {
		t.Fatal(err)
	}
	v3, err := st.Publish(ctx, store.PublishInput{Author: "a", Message: "back", RollbackTo: v1.Version.Number, Check: check})
	if err != nil {
		t.Fatal(err)
	}
	if v3.Version.Snapshot != v1.Version.Snapshot {
		t.Fatal("the rollback's text differs from v1")
	}
	if got := aliases(); !reflect.DeepEqual(got, want) {
		t.Fatalf("the rollback did not restore the aliases: %+v", got)
	}

	// Export → import of a reordered, longer list replaces the draft's.
	draft, _, _ := st.Draft(ctx)
	draft.RouteGroups[0].Aliases = []config.ModelAlias{
		{Pattern: "gpt-4o-latest", LogicModel: "small"}, {Pattern: "a*", Tier: config.TierFast},
		{Pattern: "claude-opus-*", LogicModel: "big"}, {Pattern: "b?", Tier: config.TierStandard},
	}
	text, err := config.Encode(draft)
	if err != nil {
		t.Fatal(err)
	}
	imported, err := config.Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReplaceDraft(ctx, imported); err != nil {
		t.Fatal(err)
	}
	draft, _, _ = st.Draft(ctx)
	if again, _ := config.Encode(draft); string(again) != string(text) {
		t.Fatalf("import round trip differs:\n%s\n---\n%s", again, text)
	}
	// An import naming a logic model that does not exist is refused whole.
	imported.RouteGroups[0].Aliases[1] = config.ModelAlias{Pattern: "a*", LogicModel: "ghost"}
	if _, err := st.ReplaceDraft(ctx, imported); !fieldErr(err, "route group default.aliases[1].logic_model") {
		t.Fatalf("an alias to an unknown logic model imported: %v", err)
	}
	if got := patterns(); got != "gpt-4o-latest a* claude-opus-* b?" {
		t.Fatalf("a refused import changed the draft: %s", got)
	}
}

func fieldErr(err error, field string) bool {
	var ve *config.ValidationError
	return errors.As(err, &ve) && ve.Fields[field] != ""
}

func draftGroup(t *testing.T, st *store.Store) config.RouteGroup {
	t.Helper()
	snap, _, err := st.Draft(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap.RouteGroups[0]
}

func deployment(t *testing.T, st *store.Store, code, upstream string) config.Deployment {
	t.Helper()
	snap, _, err := st.Draft(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range snap.LogicModels {
		for _, d := range m.Deployments {
			if m.Code == code && d.UpstreamModel == upstream {
				return d
			}
		}
	}
	t.Fatalf("no deployment %s of %s", upstream, code)
	return config.Deployment{}
}
