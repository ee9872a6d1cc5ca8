package store_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/config/onboarding"
	"switchyard/store"
	"switchyard/store/storetest"
)

func onboardingBatch(provider, model, group, caller string) store.OnboardingBatch {
	b := store.OnboardingBatch{
		Provider: config.Provider{Name: provider, Protocol: config.ProtocolOpenAI, BaseURL: "https://api.example.com/v1", Enabled: true, TimeoutMS: 60000},
		Keys:     []store.NewProviderKey{{Label: "one", Secret: "sk-onboard-secret-0001"}, {Label: "two", Secret: "sk-onboard-secret-0002"}},
		LogicModels: []config.LogicModel{{Code: model, Kind: config.KindChat, Deployments: []config.Deployment{
			{Provider: provider, UpstreamModel: model + "-upstream", Weight: 100, Enabled: true, Prices: config.Prices{InputMicros: config.Unit, OutputMicros: 2 * config.Unit, Currency: "USD"}},
		}}},
		CallerKeyName: "onboarding",
	}
	if group != "" {
		b.RouteGroup = &config.RouteGroup{Name: group, Aliases: onboarding.AgentAliases()}
		for _, t := range config.TierNames {
			b.Candidates = append(b.Candidates, store.NewCandidate{Group: group, Tier: t, Candidate: config.Candidate{LogicModel: model, Priority: 1, Weight: 100}})
		}
	}
	if caller != "" {
		b.Caller = &config.Caller{Name: caller, RouteGroup: group, PriorityClass: config.ClassInteractive, Enabled: true}
	}
	return b
}

func TestOnboardIsAtomic(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()

	res, err := st.Onboard(ctx, onboardingBatch("p1", "m1", "g1", "c1"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.CallerKey, store.CallerKeyPrefix) || res.CallerID == 0 || res.ProviderID == 0 {
		t.Fatalf("result = %+v", res)
	}
	snap, rev, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev != res.Revision {
		t.Errorf("revision %d after onboarding, result says %d", rev, res.Revision)
	}
	if r := check(snap); r.Blocking() {
		t.Fatalf("onboarded draft does not pass the dry-run: %+v", r.Errors())
	}
	if len(snap.Providers) != 1 || len(snap.Providers[0].Keys) != 2 || len(snap.Callers) != 1 || len(snap.Callers[0].Keys) != 0 { // the caller key lives outside the draft
		t.Fatalf("draft = %+v", snap)
	}
	if !reflect.DeepEqual(snap.RouteGroups[0].Aliases, onboarding.AgentAliases()) {
		t.Errorf("the new group's aliases = %+v", snap.RouteGroups[0].Aliases)
	}
	plain, err := st.ProviderKeySecret(ctx, snap.Providers[0].Keys[0].ID)
	if err != nil || plain != "sk-onboard-secret-0001" {
		t.Errorf("sealed key opens to %q, %v", plain, err)
	}
	live, err := st.LiveCallerKeys(ctx)
	if err != nil || len(live) != 1 {
		t.Errorf("live caller keys = %v, %v", live, err)
	}

	// A second provider backs up m1: one logic model, two deployments, 50/50.
	depID := snap.LogicModels[0].Deployments[0].ID
	b := onboardingBatch("p2", "m2", "", "")
	b.Deployments = []store.NewDeployment{{LogicModel: "m1", Deployment: config.Deployment{Provider: "p2", UpstreamModel: "m1-elsewhere", Weight: 50, Enabled: true}}}
	b.Weights = []store.DeploymentWeight{{ID: depID, Weight: 50}}
	b.Candidates = []store.NewCandidate{{Group: "g1", Tier: config.TierFast, Candidate: config.Candidate{LogicModel: "m2", Priority: 2, Weight: 100}}}
	b.ExpectedRevision = &rev
	if _, err := st.Onboard(ctx, b); err != nil {
		t.Fatal(err)
	}
	snap, rev, _ = st.Draft(ctx)
	if r := check(snap); r.Blocking() {
		t.Fatalf("dry-run after backup: %+v", r.Errors())
	}
	for _, m := range snap.LogicModels {
		if m.Code == "m1" && (len(m.Deployments) != 2 || m.Deployments[0].Weight+m.Deployments[1].Weight != 100) {
			t.Errorf("m1 = %+v", m)
		}
	}

	// Failures leave nothing behind, wherever in the batch they happen.
	for name, b := range map[string]store.OnboardingBatch{
		"caller name taken": onboardingBatch("p3", "m3", "g3", "c1"),
		"group name taken":  onboardingBatch("p3", "m3", "g1", "c3"),
		"invalid alias": func() store.OnboardingBatch {
			b := onboardingBatch("p3", "m3", "g3", "c3")
			b.RouteGroup.Aliases = append(b.RouteGroup.Aliases, config.ModelAlias{Pattern: "two words", Tier: config.TierFast})
			return b
		}(),
		"unknown model in candidate": func() store.OnboardingBatch {
			b := onboardingBatch("p3", "m3", "g3", "c3")
			b.Candidates = append(b.Candidates, store.NewCandidate{Group: "g3", Tier: config.TierDeep, Candidate: config.Candidate{LogicModel: "nope", Priority: 2, Weight: 100}})
			return b
		}(),
		"missing deployment id": func() store.OnboardingBatch {
			b := onboardingBatch("p3", "m3", "g3", "c3")
			b.Weights = []store.DeploymentWeight{{ID: 999999, Weight: 10}}
			return b
		}(),
		"stale review": func() store.OnboardingBatch {
			b := onboardingBatch("p3", "m3", "g3", "c3")
			old := rev - 1
			b.ExpectedRevision = &old
			return b
		}(),
		"invalid key": func() store.OnboardingBatch {
			b := onboardingBatch("p3", "m3", "g3", "c3")
			b.Keys = append(b.Keys, store.NewProviderKey{Secret: "short"})
			return b
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := st.Onboard(ctx, b); err == nil {
				t.Fatal("accepted")
			} else {
				t.Log(err)
			}
			after, rev2, err := st.Draft(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rev2 != rev {
				t.Errorf("draft revision moved %d → %d", rev, rev2)
			}
			a, _ := config.Encode(after)
			s, _ := config.Encode(snap)
			if string(a) != string(s) {
				t.Errorf("draft changed by a failed onboarding")
			}
		})
	}
	b = onboardingBatch("p3", "m3", "g3", "c3")
	old := rev - 1
	b.ExpectedRevision = &old
	if _, err := st.Onboard(ctx, b); !errors.Is(err, store.ErrDraftChanged) {
		t.Errorf("stale review: %v, want ErrDraftChanged", err)
	}
	live, _ = st.LiveCallerKeys(ctx)
	if len(live) != 1 {
		t.Errorf("%d caller keys after failed onboardings, want 1", len(live))
	}
}

func TestSealTransient(t *testing.T) {
	st, _ := storetest.New(t)
	tok := st.SealTransient("sk-very-secret-0001", "onboarding:7", time.Hour)
	if strings.Contains(tok, "secret") {
		t.Fatal("token shows the plaintext")
	}
	if got, err := st.OpenTransient(tok, "onboarding:7"); err != nil || got != "sk-very-secret-0001" {
		t.Errorf("open = %q, %v", got, err)
	}
	if _, err := st.OpenTransient(tok, "onboarding:8"); err == nil {
		t.Error("opened for another purpose (user)")
	}
	tampered := tok[:len(tok)-2] + "AA"
	if tampered == tok { // the token happened to end in "AA"
		tampered = tok[:len(tok)-2] + "BA"
	}
	if _, err := st.OpenTransient(tampered, "onboarding:7"); err == nil {
		t.Error("opened a tampered token")
	}
	if _, err := st.OpenTransient("not base64!", "onboarding:7"); err == nil {
		t.Error("opened garbage")
	}
	old := st.SealTransient("sk-very-secret-0001", "onboarding:7", -time.Second)
	if _, err := st.OpenTransient(old, "onboarding:7"); !errors.Is(err, store.ErrTransientExpired) {
		t.Errorf("expired token: %v", err)
	}
}
