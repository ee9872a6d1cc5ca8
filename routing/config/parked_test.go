package config

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// parkedSnapshot parks deployment 0 of logic model 0 (weight kept) and the
// deep candidate.
func parkedSnapshot() Snapshot {
	s := validSnapshot()
	s.LogicModels[0].Deployments[0].Parked = true
	s.RouteGroups[0].Tiers[2].Candidates[0].Parked = true
	return s
}

// TestParkedRoundTripsThroughTheCodec: parked is written as "parked: true"
// beside the weight it keeps, by the fast writer exactly as by the YAML
// library, and read back by the reader and the library alike.
func TestParkedRoundTripsThroughTheCodec(t *testing.T) {
	s := parkedSnapshot()
	fast, err := encode(s, true)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := encode(s, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fast, lib) {
		t.Fatalf("the fast writer differs from the library:\n%s\n---\n%s", fast, lib)
	}
	if n := strings.Count(string(fast), "parked: true"); n != 2 {
		t.Fatalf("%d parked lines, want 2:\n%s", n, fast)
	}
	want := Clone(s)
	Canonicalize(&want)
	for _, mode := range []readMode{readerOnly, libraryOnly} {
		got, err := decode(fast, mode)
		if err != nil {
			t.Fatalf("mode %d: %v", mode, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("mode %d: read back\n%+v\nwant\n%+v", mode, got, want)
		}
	}
	if unparked, _ := Encode(validSnapshot()); strings.Contains(string(unparked), "parked") {
		t.Fatal("an unparked snapshot must not mention parked (the text of old versions stays the same)")
	}
}

// TestOldParkingByWeightImportsAsParked: a snapshot exported before the
// flag (parked by a weight of 0 or less) reads as parked, the weight kept
// as the positive share it remembered.
func TestOldParkingByWeightImportsAsParked(t *testing.T) {
	text, err := Encode(validSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(text), "weight: 100", "weight: -30", 1) // the first deployment
	old = strings.Replace(old, "weight: 100", "weight: 0", 1)             // the next weight 100
	s, err := Decode([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	var parked []int
	for _, m := range s.LogicModels {
		for _, d := range m.Deployments {
			if d.Weight < 0 {
				t.Fatalf("a negative weight survived: %+v", d)
			}
			if d.Parked {
				parked = append(parked, d.Weight)
			}
		}
	}
	for _, g := range s.RouteGroups {
		for _, tr := range g.Tiers {
			for _, c := range tr.Candidates {
				if c.Parked {
					parked = append(parked, c.Weight)
				}
			}
		}
	}
	if len(parked) != 2 || parked[0]+parked[1] != 30 {
		t.Fatalf("parked weights %v, want 30 and 0", parked)
	}
	for _, m := range s.LogicModels {
		for _, d := range m.Deployments {
			if msg := ValidateDeployment(d)["weight"]; msg != "" {
				t.Fatalf("an imported parked deployment must validate: %s", msg)
			}
		}
	}
}

// TestDiffSaysParkedNeverWeights: parking and unparking a deployment or a
// candidate is one change of field "parked"; the weight it keeps is no
// change, so a rollback never shows weights either.
func TestDiffSaysParkedNeverWeights(t *testing.T) {
	a, b := validSnapshot(), parkedSnapshot()
	for _, tc := range []struct {
		name     string
		from, to Snapshot
		want     string
	}{{"park", a, b, "true"}, {"unpark (a rollback)", b, a, "false"}} {
		got := Changes(tc.from, tc.to)
		if len(got) != 2 {
			t.Fatalf("%s: %+v", tc.name, got)
		}
		kinds := map[string]bool{}
		for _, c := range got {
			if c.Field != "parked" || c.To != tc.want || c.Op != Changed {
				t.Errorf("%s: %+v, want field parked → %s", tc.name, c, tc.want)
			}
			kinds[c.Object.Kind] = true
		}
		if !kinds["deployment"] || !kinds["candidate"] {
			t.Errorf("%s: kinds %v", tc.name, kinds)
		}
	}
	// The old encoding against the new: the same configuration, no change.
	old := validSnapshot()
	old.LogicModels[0].Deployments[0].Weight = -old.LogicModels[0].Deployments[0].Weight
	old.RouteGroups[0].Tiers[2].Candidates[0].Weight = -old.RouteGroups[0].Tiers[2].Candidates[0].Weight
	if got := Changes(old, b); len(got) != 0 {
		t.Fatalf("parked by weight vs parked by flag: %+v", got)
	}
}
