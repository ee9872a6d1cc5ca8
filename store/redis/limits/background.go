package limits

import (
	"sync/atomic"
	"time"
)

// background runs the Limiter's own round trips — slice refreshes, and
// settlements no check carried — on goroutines it keeps between jobs.
// go-redis' call path is deep: a goroutine started for each job grew its
// stack from 2 KB to 16 KB, copying it three times, every time (5 % of the
// gateway's CPU at 200 requests a second). A job goes to a worker waiting
// for one, or to a new worker when none waits, so a job never queues
// behind another; a worker leaves after backgroundIdle without a job.
type background struct {
	jobs    chan func()
	idle    time.Duration // how long a worker waits for its next job
	started atomic.Int64  // workers started, ever
	live    atomic.Int64  // workers now
}

// backgroundIdle is how long a worker waits for its next job.
const backgroundIdle = 10 * time.Second

func newBackground() *background { return &background{jobs: make(chan func()), idle: backgroundIdle} }

// run starts fn on a waiting worker, or on a new one.
func (b *background) run(fn func()) {
	select {
	case b.jobs <- fn:
	default:
		b.started.Add(1)
		b.live.Add(1)
		go b.work(fn)
	}
}

func (b *background) work(fn func()) {
	defer b.live.Add(-1)
	idle := time.NewTimer(b.idle)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(b.idle)
		select {
		case fn = <-b.jobs:
		case <-idle.C:
			return
		}
	}
}
