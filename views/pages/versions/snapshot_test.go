package versions

import "testing"

func TestSnapshotTextSaysUnlimited(t *testing.T) {
	in := "      - tier: fast\n        rpm: 2\n        tpm: 0\n        daily_tokens: 0\n    budget: 0"
	want := "      - tier: fast\n        rpm: 2\n        tpm: 0  # unlimited\n        daily_tokens: 0  # unlimited\n    budget: 0"
	if got := SnapshotText(in); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
