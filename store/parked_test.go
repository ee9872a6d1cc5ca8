package store_test

import (
	"context"
	"testing"

	"switchyard/routing/config"
	"switchyard/store/storetest"
)

// TestParkKeepsTheWeight: parking a deployment or a candidate sets only its
// parked flag (the weight it keeps gives its share back on unpark), the
// draft reads it back, and the table refuses the old encoding (a negative
// weight, or 0 unparked), so nothing can park by weight again.
func TestParkKeepsTheWeight(t *testing.T) {
	t.Parallel()
	st, _ := storetest.New(t)
	ctx := context.Background()
	seed(t, st)
	snap, _, err := st.Draft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dep := snap.LogicModels[0].Deployments[0]
	cand := snap.RouteGroups[0].Tier(config.TierDeep).Candidates[0]
	if err := st.SetDeploymentParked(ctx, dep.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := st.SetCandidateParked(ctx, cand.ID, true); err != nil {
		t.Fatal(err)
	}
	snap, _, _ = st.Draft(ctx)
	d, c := snap.LogicModels[0].Deployments[0], snap.RouteGroups[0].Tier(config.TierDeep).Candidates[0]
	if !d.Parked || d.Weight != dep.Weight || !c.Parked || c.Weight != cand.Weight {
		t.Fatalf("parked: deployment %+v candidate %+v", d, c)
	}
	if err := st.SetDeploymentParked(ctx, dep.ID, false); err != nil {
		t.Fatal(err)
	}
	snap, _, _ = st.Draft(ctx)
	if d := snap.LogicModels[0].Deployments[0]; d.Parked || d.Weight != dep.Weight {
		t.Fatalf("unparked: %+v", d)
	}
	for _, q := range []string{
		`UPDATE deployments SET weight=-30 WHERE id=$1`,
		`UPDATE deployments SET weight=0, parked=false WHERE id=$1`,
	} {
		if _, err := st.DB().ExecContext(ctx, q, dep.ID); err == nil {
			t.Errorf("%s: accepted", q)
		}
	}
	if err := st.SetDeploymentWeight(ctx, dep.ID, -30); err == nil {
		t.Error("a negative weight must be refused: parking is its own flag")
	}
}
