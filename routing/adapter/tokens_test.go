package adapter

import (
	"os"
	"os/exec"
	"sync"
	"testing"
)

// TestCountTokensFirstUse: the tokenizer loads on first use, and counts
// that start together before it has loaded all wait for the one load and
// get the right count. It runs in a process of its own, so that its counts
// are the first.
func TestCountTokensFirstUse(t *testing.T) {
	if os.Getenv("TOKENS_FIRST_USE") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCountTokensFirstUse$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TOKENS_FIRST_USE=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("first use in a fresh process: %v\n%s", err, out)
		}
		return
	}
	const text = "hello world, counted by the gateway"
	var wg sync.WaitGroup
	counts := make([]int64, 8)
	start := make(chan struct{})
	for i := range counts {
		wg.Go(func() {
			<-start
			counts[i] = CountTokens(text)
		})
	}
	close(start)
	wg.Wait()
	enc, err := tokenEncoding()
	if err != nil {
		t.Fatalf("the embedded tokenizer did not load: %v", err)
	}
	want := int64(len(enc.EncodeOrdinary(text)))
	if want == int64(len(text)+3)/4 {
		t.Fatalf("the count %d is the four-bytes fallback's", want)
	}
	for i, n := range counts {
		if n != want {
			t.Errorf("count %d: %d tokens, want %d", i, n, want)
		}
	}
}
