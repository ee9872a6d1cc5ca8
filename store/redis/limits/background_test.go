package limits

import (
	"sync"
	"testing"
	"time"
)

// Jobs that come one after another run on the worker the first one
// started, which keeps its grown stack between them.
func TestBackgroundReusesAWaitingWorker(t *testing.T) {
	b := newBackground()
	for range 20 {
		done := make(chan struct{})
		b.run(func() { close(done) })
		<-done
		time.Sleep(5 * time.Millisecond) // the worker is back waiting
	}
	if n := b.started.Load(); n > 2 {
		t.Fatalf("20 jobs one after another started %d workers, want 1 (2 at most on a slow machine)", n)
	}
}

// A job never waits for another: with every worker busy, a new one
// starts.
func TestBackgroundNeverQueues(t *testing.T) {
	b := newBackground()
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	b.run(func() { defer wg.Done(); <-release })
	second := make(chan struct{})
	b.run(func() { close(second) })
	select {
	case <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("the second job waited for the first")
	}
	close(release)
	wg.Wait()
	if n := b.started.Load(); n != 2 {
		t.Fatalf("started %d workers, want 2", n)
	}
}

// A worker with no job for its idle time leaves.
func TestBackgroundWorkersLeaveWhenIdle(t *testing.T) {
	b := newBackground()
	b.idle = 20 * time.Millisecond
	done := make(chan struct{})
	b.run(func() { close(done) })
	<-done
	for deadline := time.Now().Add(5 * time.Second); b.live.Load() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers still live after their idle time", b.live.Load())
		}
	}
}

// BenchmarkBackgroundDeepJob is a job as deep as a round trip through
// go-redis, started on a goroutine of its own against run on a kept
// worker: the difference is growing a new goroutine's stack.
func BenchmarkBackgroundDeepJob(b *testing.B) {
	job := func(done chan struct{}) func() {
		return func() { deepStack(24); done <- struct{}{} }
	}
	b.Run("go", func(b *testing.B) {
		done := make(chan struct{})
		for b.Loop() {
			go job(done)()
			<-done
		}
	})
	b.Run("background", func(b *testing.B) {
		bg := newBackground()
		done := make(chan struct{})
		fn := job(done)
		for b.Loop() {
			bg.run(fn)
			<-done
		}
	})
}

// deepStack uses some 12 KB of stack: n frames of 512 bytes.
//
//go:noinline
func deepStack(n int) byte {
	var pad [480]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		return pad[0]
	}
	return deepStack(n-1) + pad[n%len(pad)]
}
