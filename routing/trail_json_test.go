package routing

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"switchyard/routing/adapter"
	"switchyard/routing/reason"
)

// The call log's trail is json.Marshal's encoding, whichever way it was
// written: random trails, with strings that need escaping, skips, and the
// ladder's rungs among them, encode byte for byte alike.
func TestTrailJSONIsMarshals(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	plain := []string{"", "gpt-4o", "claude-sonnet-4", "openai-main", "sk-…a1b2", "línea", "timeout", "server", "ok", "failed"}
	odd := []string{"\u2029", `upstream said "no"`, "a<b>&c", "tab\there", "nul\x00", "\u2028", "back\\slash", "\x7f", "bad\xffutf8"}
	pick := func() string {
		if rng.IntN(40) == 0 {
			return odd[rng.IntN(len(odd))]
		}
		return plain[rng.IntN(len(plain))]
	}
	fast := 0
	for i := range 5000 {
		var tr Trail
		for range rng.IntN(4) {
			a := Attempt{Model: pick(), Deployment: pick(), Provider: pick(), Key: pick(), Outcome: AttemptOutcome(pick()),
				Class: adapter.Class(pick()), Reason: pick(), LatencyMS: rng.Int64N(100000) - 10,
				Fallback: rng.IntN(4) == 0}
			if rng.IntN(2) == 0 {
				a.DeploymentID = rng.Int64N(1 << 40)
			}
			if rng.IntN(3) == 0 {
				a.Status = 200 + rng.IntN(400)
			}
			if rng.IntN(8) == 0 {
				r := reason.Reason{Code: reason.Code(pick())}
				a.Skip = &r
			}
			tr.Attempts = append(tr.Attempts, a)
		}
		switch rng.IntN(12) {
		case 0:
			tr.Skips = []Skip{{Model: pick(), Reason: reason.Reason{Code: reason.Code(pick())}}}
		case 1:
			tr.Fallback = pick()
		case 2:
			tr.Degraded = []Degraded{{Level: pick(), From: pick()}}
		case 3:
			tr.QueuedMS = rng.Int64N(100)
		case 4:
			tr.Attempts = []Attempt{}
		}
		want, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		if got := trailJSON(&tr); !bytes.Equal(got, want) {
			t.Fatalf("trail %d:\n got %s\nwant %s", i, got, want)
		}
		if _, ok := appendTrail(nil, &tr); ok && len(tr.Attempts) > 0 {
			fast++
		}
	}
	if fast < 1000 {
		t.Fatalf("only %d of 5000 trails with attempts took the hand-written path", fast)
	}
}

// A request served at the first try: what nearly every row's trail is.
func servedTrail() *Trail {
	return &Trail{Attempts: []Attempt{{Model: "gpt-4o-mini", DeploymentID: 1042, Deployment: "openai-eu-1", Provider: "openai",
		Key: "sk-…9c1e", Outcome: AttemptOK, Status: 200, LatencyMS: 412}}}
}

func BenchmarkTrailJSON(b *testing.B) {
	tr := servedTrail()
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = trailJSON(tr)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(*tr)
		}
	})
}
