package handlers

import (
	"runtime"
	"sync"
	"testing"
)

// PeakInFlight reports the most requests in flight at once since it was
// last read, even when they have all ended since, and then starts again
// from those in flight.
func TestPeakInFlight(t *testing.T) {
	var d DataPlane
	var wg sync.WaitGroup
	hold := make(chan struct{})
	for range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.started()
			<-hold
			d.inFlight.Add(-1)
		}()
	}
	for d.InFlight() < 300 {
		runtime.Gosched() // until all have started
	}
	close(hold)
	wg.Wait()
	d.started() // one still in flight
	if got := d.PeakInFlight(); got != 300 {
		t.Fatalf("peak %d after 300 at once, want 300", got)
	}
	if got := d.PeakInFlight(); got != 1 {
		t.Fatalf("peak %d on the next read with 1 in flight, want 1", got)
	}
}
