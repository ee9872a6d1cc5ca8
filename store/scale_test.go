package store_test

import (
	"context"
	"flag"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/config/configtest"
	"switchyard/store"
	"switchyard/store/storetest"
)

// -scale=large runs TestConfigurationAtScale at the size of the scale
// targets (500 route groups, 5,000 deployments, 500 callers); `make test`
// runs it at a tenth of that.
var scale = flag.String("scale", "medium", "size of TestConfigurationAtScale: small, medium or large")

func scaleSize(t *testing.T) configtest.Size {
	switch *scale {
	case "small":
		return configtest.Small
	case "medium":
		return configtest.Size{Tenants: 3, Providers: 20, Deployments: 500, Groups: 50, Callers: 50}
	case "large":
		return configtest.Large
	}
	t.Fatalf("-scale=%q: want small, medium or large", *scale)
	return configtest.Size{}
}

// seedLarge stores a generated configuration with two keys per provider and
// returns the draft as the store gives it back (every object with its id).
func seedLarge(t *testing.T, st *store.Store, sz configtest.Size) config.Snapshot {
	t.Helper()
	ctx := context.Background()
	if _, err := st.ReplaceDraft(ctx, configtest.Generate(sz, "http://127.0.0.1:9/v1")); err != nil {
		t.Fatal(err)
	}
	d, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Providers {
		for i := range 2 {
			if _, err := st.AddProviderKey(ctx, p.ID, fmt.Sprintf("key %d", i), fmt.Sprintf("sk-scale-%s-%d-0123456789", p.Name, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	d, _, err = st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// mutate edits a configuration the way a large import does: objects
// removed, added (without ids), renamed, two names swapped, fields and
// references changed, a provider key dropped.
func mutate(s config.Snapshot) config.Snapshot {
	s = config.Clone(s)
	// Remove every fifth route group and the callers bound to it.
	removed := map[string]bool{}
	groups := s.RouteGroups[:0]
	for i, g := range s.RouteGroups {
		if i%5 == 4 && g.Name != "group-0000" {
			removed[g.Name] = true
			continue
		}
		groups = append(groups, g)
	}
	s.RouteGroups = groups
	callers := s.Callers[:0]
	for _, c := range s.Callers {
		if !removed[c.RouteGroup] {
			callers = append(callers, c)
		}
	}
	s.Callers = callers
	// Swap the names of two groups (and what refers to them).
	a, b := s.RouteGroups[1].Name, s.RouteGroups[2].Name
	s.RouteGroups[1].Name, s.RouteGroups[2].Name = b, a
	for i := range s.Callers {
		switch s.Callers[i].RouteGroup {
		case a:
			s.Callers[i].RouteGroup = b
		case b:
			s.Callers[i].RouteGroup = a
		}
	}
	// A new group, a new caller and a new logic model with its deployment.
	ng := config.Clone(config.Snapshot{RouteGroups: s.RouteGroups[:1]}).RouteGroups[0]
	ng.ID, ng.Name = 0, "group-new"
	for ti := range ng.Tiers {
		ng.Tiers[ti].ID = 0
		for ci := range ng.Tiers[ti].Candidates {
			ng.Tiers[ti].Candidates[ci].ID = 0
		}
	}
	s.RouteGroups = append(s.RouteGroups, ng)
	s.Callers = append(s.Callers, config.Caller{Name: "caller-new", RouteGroup: "group-new", PriorityClass: config.ClassBatch, Enabled: true, BudgetCurrency: "USD"})
	m := config.Clone(config.Snapshot{LogicModels: s.LogicModels[:1]}).LogicModels[0]
	m.ID, m.Code = 0, "model-new"
	for i := range m.Deployments {
		m.Deployments[i].ID = 0
	}
	s.LogicModels = append(s.LogicModels, m)
	// Rename a logic model and follow it in the candidates.
	old := s.LogicModels[5].Code
	s.LogicModels[5].Code = "renamed-model"
	for gi := range s.RouteGroups {
		for ti := range s.RouteGroups[gi].Tiers {
			for ci := range s.RouteGroups[gi].Tiers[ti].Candidates {
				if c := &s.RouteGroups[gi].Tiers[ti].Candidates[ci]; c.LogicModel == old {
					c.LogicModel = "renamed-model"
				}
			}
		}
	}
	// Change fields everywhere.
	for i := range s.LogicModels {
		for j := range s.LogicModels[i].Deployments {
			s.LogicModels[i].Deployments[j].Prices.InputMicros += 1
		}
	}
	s.Callers[0].Limits = nil
	s.Providers[0].Keys = s.Providers[0].Keys[:1]
	s.Providers[1].Notes = "changed by the import"
	config.Canonicalize(&s)
	return s
}

// ids lists every object id of a snapshot by kind.
func ids(s config.Snapshot) map[string]map[int64]bool {
	out := map[string]map[int64]bool{}
	add := func(kind string, id int64) {
		if out[kind] == nil {
			out[kind] = map[int64]bool{}
		}
		out[kind][id] = true
	}
	for _, t := range s.Tenants {
		add("tenant", t.ID)
	}
	for _, p := range s.Providers {
		add("provider", p.ID)
	}
	for _, m := range s.LogicModels {
		add("logic model", m.ID)
		for _, d := range m.Deployments {
			add("deployment", d.ID)
		}
	}
	for _, g := range s.RouteGroups {
		add("route group", g.ID)
		for _, t := range g.Tiers {
			add("tier", t.ID)
			for _, c := range t.Candidates {
				add("candidate", c.ID)
			}
		}
	}
	for _, c := range s.Callers {
		add("caller", c.ID)
	}
	return out
}

// TestConfigurationAtScale imports, publishes and rolls back a large
// configuration on real PostgreSQL and checks every result exactly: the
// draft after an import is the imported snapshot (ids kept, new objects
// given ids no object ever had), and a rollback gives back the very rows
// of the old version, byte for byte in canonical text.
func TestConfigurationAtScale(t *testing.T) {
	t.Parallel() // its own database; it mostly waits on PostgreSQL
	sz := scaleSize(t)
	st, _ := storetest.New(t)
	ctx := context.Background()
	v1snap := seedLarge(t, st, sz)
	v1text, err := config.Encode(v1snap)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	v1, err := st.Publish(ctx, store.PublishInput{Author: "t", Message: "large", Check: check})
	if err != nil {
		t.Fatal(err)
	}
	publish := time.Since(t0)
	if v1.Version.Snapshot != string(v1text) {
		t.Fatal("the published snapshot is not the draft's canonical text")
	}

	// Import: the draft becomes exactly the imported snapshot.
	next := mutate(v1snap)
	t0 = time.Now()
	if _, err := st.ReplaceDraft(ctx, next); err != nil {
		t.Fatal(err)
	}
	imp := time.Since(t0)
	got, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// New objects got ids no object of v1 has; everything else kept its id.
	before, after := ids(v1snap), ids(got)
	for kind, set := range ids(next) {
		for id := range set {
			if id != 0 && !after[kind][id] {
				t.Errorf("%s %d of the import lost its id", kind, id)
			}
		}
	}
	for kind, set := range after {
		for id := range set {
			if !ids(next)[kind][id] && before[kind][id] {
				t.Errorf("a new %s was given id %d, which an object of version 1 had", kind, id)
			}
		}
	}
	// Apart from the ids of new objects, the draft is the import.
	want := config.Clone(next)
	fillNewIDs(&want, got)
	if wt, gt := mustEncode(t, want), mustEncode(t, got); wt != gt {
		t.Fatalf("the draft after import is not the imported snapshot:\n%s", firstDiff(wt, gt))
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "t", Message: "import", Check: check}); err != nil {
		t.Fatal(err)
	}

	// Rollback: the draft and the new version are version 1 exactly.
	t0 = time.Now()
	rb, err := st.Publish(ctx, store.PublishInput{Author: "t", Message: "back", RollbackTo: v1.Version.Number, Check: check})
	if err != nil {
		t.Fatal(err)
	}
	rollback := time.Since(t0)
	if len(rb.Notes) != 0 {
		t.Errorf("rollback notes: %v", rb.Notes)
	}
	if rb.Version.Snapshot != string(v1text) {
		t.Fatalf("the rolled-back version is not version 1:\n%s", firstDiff(string(v1text), rb.Version.Snapshot))
	}
	d, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, v1snap) {
		t.Fatalf("the draft after rollback is not version 1's:\n%s", firstDiff(string(v1text), mustEncode(t, d)))
	}
	t.Logf("%s (%d route groups, %d deployments, %d callers, %d KB): import %v, publish %v, rollback %v",
		*scale, sz.Groups, sz.Deployments, sz.Callers, len(v1text)>>10, imp.Round(time.Millisecond), publish.Round(time.Millisecond), rollback.Round(time.Millisecond))
}

// fillNewIDs copies into want the ids the store gave its objects without
// one, matching them by name (and deployments by provider and upstream
// model, tiers by name, candidates by logic model).
func fillNewIDs(want *config.Snapshot, got config.Snapshot) {
	groups := map[string]config.RouteGroup{}
	for _, g := range got.RouteGroups {
		groups[g.Name] = g
	}
	for gi := range want.RouteGroups {
		w := &want.RouteGroups[gi]
		g := groups[w.Name]
		if w.ID == 0 {
			w.ID = g.ID
		}
		for ti := range w.Tiers {
			gt := g.Tier(w.Tiers[ti].Name)
			if gt == nil {
				continue
			}
			if w.Tiers[ti].ID == 0 {
				w.Tiers[ti].ID = gt.ID
			}
			for ci := range w.Tiers[ti].Candidates {
				c := &w.Tiers[ti].Candidates[ci]
				for _, gc := range gt.Candidates {
					if c.ID == 0 && gc.LogicModel == c.LogicModel {
						c.ID = gc.ID
					}
				}
			}
		}
	}
	models := map[string]config.LogicModel{}
	for _, m := range got.LogicModels {
		models[m.Code] = m
	}
	for mi := range want.LogicModels {
		w := &want.LogicModels[mi]
		m := models[w.Code]
		if w.ID == 0 {
			w.ID = m.ID
		}
		for di := range w.Deployments {
			d := &w.Deployments[di]
			for _, gd := range m.Deployments {
				if d.ID == 0 && gd.Provider == d.Provider && gd.UpstreamModel == d.UpstreamModel {
					d.ID = gd.ID
				}
			}
		}
	}
	callers := map[string]int64{}
	for _, c := range got.Callers {
		callers[c.Name] = c.ID
	}
	for i := range want.Callers {
		if want.Callers[i].ID == 0 {
			want.Callers[i].ID = callers[want.Callers[i].Name]
		}
	}
	config.Canonicalize(want)
}

func mustEncode(t *testing.T, s config.Snapshot) string {
	t.Helper()
	b, err := config.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// firstDiff shows where two texts first differ.
func firstDiff(a, b string) string {
	i := 0
	for i < min(len(a), len(b)) && a[i] == b[i] {
		i++
	}
	return fmt.Sprintf("at byte %d:\n--- want\n%s\n--- got\n%s", i, a[max(0, i-200):min(len(a), i+200)], b[max(0, i-200):min(len(b), i+200)])
}

// TestSnapshotNamingTwiceIsRefused: an object or an id given twice is a
// field error before anything is written, not a database error (or, for
// ids, two objects merged into one row).
func TestSnapshotNamingTwiceIsRefused(t *testing.T) {
	base := configtest.Generate(configtest.Small, "http://127.0.0.1:9/v1")
	for name, edit := range map[string]func(s *config.Snapshot){
		"route group name": func(s *config.Snapshot) { s.RouteGroups[1].Name = s.RouteGroups[0].Name },
		"caller name":      func(s *config.Snapshot) { s.Callers[1].Name = s.Callers[0].Name },
		"deployment id": func(s *config.Snapshot) {
			s.LogicModels[0].Deployments[0].ID, s.LogicModels[1].Deployments[0].ID = 7, 7
		},
		"deployment": func(s *config.Snapshot) {
			m := &s.LogicModels[0]
			m.Deployments = append(m.Deployments, m.Deployments[0])
		},
		"candidate": func(s *config.Snapshot) {
			tr := &s.RouteGroups[0].Tiers[0]
			tr.Candidates = append(tr.Candidates, tr.Candidates[0])
		},
		"tier limit": func(s *config.Snapshot) {
			c := &s.Callers[0]
			c.Limits = append(c.Limits, c.Limits[0])
		},
	} {
		s := config.Clone(base)
		edit(&s)
		err := store.ValidateSnapshot(s)
		if err == nil || !strings.Contains(err.Error(), "appears twice") {
			t.Errorf("%s given twice: %v", name, err)
		}
	}
	if err := store.ValidateSnapshot(base); err != nil {
		t.Fatalf("the generated snapshot is refused: %v", err)
	}
}
