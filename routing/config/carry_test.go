package config

import "testing"

// TestCarryKeepsWhereAnAcknowledgementWasGiven: a standing ack whose finding
// is still there is carried with the version and author it was first given
// on; one typed again is not carried (it is given anew), and one whose
// finding is gone is dropped.
func TestCarryKeepsWhereAnAcknowledgementWasGiven(t *testing.T) {
	deep := Ack{RouteGroup: "default", Tier: TierDeep}
	fast := Ack{RouteGroup: "default", Tier: TierFast}
	gone := Ack{RouteGroup: "other", Tier: TierDeep}
	r := Result{Findings: []Finding{
		{Check: CheckTierUnservable, Severity: SeverityAcknowledge, Ack: &deep, Callers: []string{"a", "b"}},
		{Check: CheckTierUnservable, Severity: SeverityAcknowledge, Ack: &fast},
	}}
	// v5 by bob carried deep from v2 by alice, and gave fast and gone itself.
	standing := StandingAcks([]Acknowledgement{{Ack: deep, CarriedFrom: 2, By: "alice"}, {Ack: fast}, {Ack: gone}}, 5, "bob")
	got := r.Carry(standing, nil)
	if len(got) != 2 || got[0].Ack != deep || got[0].CarriedFrom != 2 || got[0].By != "alice" || len(got[0].Callers) != 2 ||
		got[1].Ack != fast || got[1].CarriedFrom != 5 || got[1].By != "bob" {
		t.Fatalf("carried: %+v", got)
	}
	if got := r.Carry(standing, []Ack{fast}); len(got) != 1 || got[0].Ack != deep {
		t.Fatalf("typed again must not be carried: %+v", got)
	}
	if len(r.Unacknowledged(StandingKeys(standing))) != 0 {
		t.Fatal("standing acks must admit their findings")
	}
}
