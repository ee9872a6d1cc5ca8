package store_test

import (
	"context"
	"errors"
	"testing"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/storetest"
)

// TestPublishRefusesEachCheck brings each dry-run condition into the draft
// (through import, the only way some of them can get there) and publishes.
func TestPublishRefusesEachCheck(t *testing.T) {
	st, _ := storetest.New(t)
	ctx := context.Background()
	seed(t, st)
	base, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// An embedding model to break in the embedding cases.
	withEmbed := func(s *config.Snapshot, dim int, provider string) {
		s.LogicModels = append(s.LogicModels, config.LogicModel{Code: "embed", Kind: config.KindEmbedding, EmbeddingDimension: dim,
			Deployments: []config.Deployment{{Provider: provider, UpstreamModel: "text-embedding-3-small", Weight: 100, Enabled: true}}})
	}
	cases := []struct {
		check  string
		mutate func(s *config.Snapshot)
	}{
		{"tier_timeout", func(s *config.Snapshot) { s.RouteGroups[0].Tiers[0].TimeoutMS = 0 }},
		{"tier_empty", func(s *config.Snapshot) { s.RouteGroups[0].Tiers[2].Candidates = nil }},
		{"no_usable_deployment", func(s *config.Snapshot) {
			// big: the provider of its only deployment disabled (a deployment
			// disabled or parked is acknowledged as tier_unservable instead).
			for i := range s.Providers {
				s.Providers[i].Enabled = s.Providers[i].Name != s.LogicModels[0].Deployments[0].Provider
			}
		}},
		{"weights_sum", func(s *config.Snapshot) { s.LogicModels[1].Deployments[0].Weight = 60 }},
		{"protocol_unimplemented", func(s *config.Snapshot) {
			withEmbed(s, 1536, "claude") // Anthropic has no embeddings API
			s.RouteGroups[0].Tiers[0].Candidates = append(s.RouteGroups[0].Tiers[0].Candidates, config.Candidate{LogicModel: "embed", Priority: 5, Weight: 100})
		}},
		{"embedding_dimension_missing", func(s *config.Snapshot) { withEmbed(s, 0, "openai") }},
		{"embedding_dimension_mismatch", func(s *config.Snapshot) {
			withEmbed(s, 1536, "openai")
			s.LogicModels = append(s.LogicModels, config.LogicModel{Code: "embed-big", Kind: config.KindEmbedding, EmbeddingDimension: 3072,
				Deployments: []config.Deployment{{Provider: "openai", UpstreamModel: "text-embedding-3-large", Weight: 100, Enabled: true}}})
			tier := &s.RouteGroups[0].Tiers[0]
			tier.Candidates = append(tier.Candidates, config.Candidate{LogicModel: "embed", Priority: 5, Weight: 100}, config.Candidate{LogicModel: "embed-big", Priority: 6, Weight: 100})
		}},
		// The seeded caller has a 250 USD budget; "big" (its standard and
		// deep tiers) becomes priced in CNY, which that budget cannot be charged.
		{config.CheckBudgetCurrencyMismatch, func(s *config.Snapshot) {
			if s.Callers[0].MonthlyBudgetMicros != 250*config.Unit || s.Callers[0].BudgetCurrency != "USD" {
				t.Fatalf("seed caller budget changed: %+v", s.Callers[0])
			}
			s.LogicModels[0].Deployments[0].Prices.Currency = "CNY"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.check, func(t *testing.T) {
			s := config.Clone(base)
			tc.mutate(&s)
			if _, err := st.ReplaceDraft(ctx, s); err != nil {
				t.Fatalf("import: %v", err)
			}
			before, _ := st.LatestVersionNumber(ctx)
			_, err := st.Publish(ctx, store.PublishInput{Author: "t", Message: tc.check, Check: check})
			var cf *store.ChecksFailedError
			if !errors.As(err, &cf) {
				t.Fatalf("publish was not refused: %v", err)
			}
			found := false
			for _, f := range cf.Result.Errors() {
				found = found || f.Check == tc.check
			}
			if !found {
				t.Fatalf("refused, but not for %s: %+v", tc.check, cf.Result.Errors())
			}
			if after, _ := st.LatestVersionNumber(ctx); after != before {
				t.Fatal("a refused publish stored a version")
			}
		})
	}
	// unknown_provider cannot reach the draft at all: the import naming a
	// provider that does not exist is refused before anything changes.
	s := config.Clone(base)
	s.LogicModels[0].Deployments[0].Provider = "ghost"
	var ve *config.ValidationError
	if _, err := st.ReplaceDraft(ctx, s); !errors.As(err, &ve) {
		t.Fatalf("importing a deployment on an unknown provider: %v", err)
	}
	if r := config.DryRun(s, env); !hasCheck(r, "unknown_provider") {
		t.Fatal("the dry-run of that snapshot must report unknown_provider")
	}
}

func hasCheck(r config.Result, id string) bool {
	for _, f := range r.Errors() {
		if f.Check == id {
			return true
		}
	}
	return false
}

// TestPublishAnUnservableTierOnlyWhenAcknowledged parks the deep tier's
// only candidate: the publish is refused until the operator acknowledges
// default/deep, a stale acknowledgement is refused, and the accepted one is
// recorded on the version.
func TestPublishAnUnservableTierOnlyWhenAcknowledged(t *testing.T) {
	t.Parallel()
	st, _ := storetest.New(t)
	ctx := context.Background()
	seed(t, st)
	if _, err := st.Publish(ctx, store.PublishInput{Author: "t", Message: "first", Check: check}); err != nil {
		t.Fatal(err)
	}
	snap, _, _ := st.Draft(ctx)
	deep := snap.RouteGroups[0].Tier(config.TierDeep).Candidates[0]
	if err := st.SetCandidateParked(ctx, deep.ID, true); err != nil {
		t.Fatal(err)
	}
	var cf *store.ChecksFailedError
	_, err := st.Publish(ctx, store.PublishInput{Author: "t", Message: "park deep", Check: check})
	if !errors.As(err, &cf) || len(cf.Blocking) != 1 || cf.Blocking[0].Check != config.CheckTierUnservable || cf.Blocking[0].Ack.String() != "default/deep" {
		t.Fatalf("unacknowledged: %v", err)
	}
	fast := config.Ack{RouteGroup: "default", Tier: config.TierFast}
	deepAck := config.Ack{RouteGroup: "default", Tier: config.TierDeep}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "t", Message: "park deep", Check: check, Acknowledge: []config.Ack{fast}}); !errors.As(err, &cf) {
		t.Fatalf("acknowledging another tier must not admit it: %v", err)
	}
	var ve *config.ValidationError
	if _, err := st.Publish(ctx, store.PublishInput{Author: "t", Message: "park deep", Check: check, Acknowledge: []config.Ack{deepAck, fast}}); !errors.As(err, &ve) || ve.Fields["acknowledge"] == "" {
		t.Fatalf("a stale acknowledgement must be refused: %v", err)
	}
	if n, _ := st.LatestVersionNumber(ctx); n != 1 {
		t.Fatalf("a refused publish stored version %d", n)
	}
	out, err := st.Publish(ctx, store.PublishInput{Author: "t", Message: "park deep", Check: check, Acknowledge: []config.Ack{deepAck}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := st.Version(ctx, out.Version.Number)
	if err != nil {
		t.Fatal(err)
	}
	acked := v.CheckResults().Acknowledged
	if len(acked) != 1 || acked[0].Ack != deepAck || acked[0].Check != config.CheckTierUnservable || acked[0].Callers[0] != "contracts" {
		t.Fatalf("recorded acknowledgements: %+v", acked)
	}
}

// TestPublishCarriesAnAcknowledgementOfTheLiveVersion acknowledges default/deep
// on v2, then adds a caller in the draft: the same finding needs no typing
// again, the new version records it carried over from v2, and a new finding
// (the fast tier parked too) still has to be acknowledged.
func TestPublishCarriesAnAcknowledgementOfTheLiveVersion(t *testing.T) {
	t.Parallel()
	st, _ := storetest.New(t)
	ctx := context.Background()
	seed(t, st)
	if _, err := st.Publish(ctx, store.PublishInput{Author: "t", Message: "first", Check: check}); err != nil {
		t.Fatal(err)
	}
	park := func(tier config.TierName) {
		snap, _, _ := st.Draft(ctx)
		for _, c := range snap.RouteGroups[0].Tier(tier).Candidates {
			if err := st.SetCandidateParked(ctx, c.ID, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	park(config.TierDeep)
	deepAck := config.Ack{RouteGroup: "default", Tier: config.TierDeep}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "alice", Message: "park deep", Check: check, Acknowledge: []config.Ack{deepAck}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateCaller(ctx, config.Caller{Name: "reports", RouteGroup: "default", PriorityClass: config.ClassNormal, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	out, err := st.Publish(ctx, store.PublishInput{Author: "bob", Message: "add reports", Check: check})
	if err != nil {
		t.Fatalf("the finding acknowledged on live must not be asked again: %v", err)
	}
	acked := out.Version.CheckResults().Acknowledged
	if len(acked) != 1 || acked[0].Ack != deepAck || acked[0].CarriedFrom != 2 || acked[0].By != "alice" {
		t.Fatalf("carried acknowledgement: %+v", acked)
	}
	if s := out.Version.Standing(); len(s) != 1 || s[0].Version != 2 || s[0].Author != "alice" {
		t.Fatalf("standing on v3 must still name v2 by alice: %+v", s)
	}
	park(config.TierFast)
	var cf *store.ChecksFailedError
	_, err = st.Publish(ctx, store.PublishInput{Author: "bob", Message: "park fast", Check: check})
	if !errors.As(err, &cf) || len(cf.Blocking) == 0 {
		t.Fatalf("a new finding must still ask: %v", err)
	}
	for _, f := range cf.Blocking {
		if f.Ack == nil || f.Ack.Tier != config.TierFast {
			t.Fatalf("only the fast tier may block, got %+v", f)
		}
	}
	fastAck := config.Ack{RouteGroup: "default", Tier: config.TierFast}
	out, err = st.Publish(ctx, store.PublishInput{Author: "bob", Message: "park fast", Check: check, Acknowledge: []config.Ack{fastAck}})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Version.Standing()
	if d, ok := config.FindStanding(s, deepAck); !ok || d.Version != 2 || d.Author != "alice" {
		t.Fatalf("deep still carried from v2: %+v", s)
	}
	if f, ok := config.FindStanding(s, fastAck); !ok || f.Version != 4 || f.Author != "bob" {
		t.Fatalf("fast given on v4 by bob: %+v", s)
	}
}
