package limits

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// epoch2017 is the origin of GCRA time, as in the Redis script.
const epoch2017 = 1483228800

// localStore is the per-instance fallback: the same checks as limitScript
// over in-memory state, timed by this instance's clock.
//
// Its counters also remember the last daily and monthly values Redis
// reported (known), so an outage starts from the shared usage rather than
// from zero, and collect what was spent while Redis missed it (pending), to
// be replayed into Redis on recovery.
type localStore struct {
	now func() time.Time

	mu        sync.Mutex
	tats      map[string]float64 // GCRA TAT, seconds since 2017
	counters  map[string]*counter
	lastSweep time.Time
	// pendingN counts counters with pending != 0; written under mu, read
	// without it on every successful Redis call.
	pendingN atomic.Int64
}

type counter struct {
	known   int64 // last value read from Redis
	pending int64 // spent locally, not yet in Redis
	ttl     time.Duration
	expires time.Time
}

// sweepEvery bounds how long expired entries are kept.
const sweepEvery = time.Minute

func newLocalStore(now func() time.Time) *localStore {
	return &localStore{
		now:       now,
		tats:      map[string]float64{},
		counters:  map[string]*counter{},
		lastSweep: now(),
	}
}

// gcraSeconds is t as GCRA time.
func gcraSeconds(t time.Time) float64 {
	return float64(t.Unix()-epoch2017) + float64(t.Nanosecond()/1000)/1e6
}

// gcra is limitScript's GCRA: whether cost is admitted at now, the TAT to
// store if so, the window after spending cost and the untouched window (a
// rejection reports the untouched one with its retry-after). Times are
// seconds; the windows hold Durations, as the script's reply does.
func gcra(tat, now, rate, burst, cost float64) (ok bool, newTAT float64, after, peek gcraView) {
	interval := period.Seconds() / rate
	tat = math.Max(tat, now)
	newTAT = tat + interval*cost
	diff := now - (newTAT - interval*burst)
	peekRem := math.Floor((now - (tat - interval*burst)) / interval)
	peek = gcraView{remaining: int64(math.Max(peekRem, 0)), reset: seconds(tat - now)}
	if diff < 0 {
		peek.retry = seconds(-diff)
		return false, tat, peek, peek
	}
	return true, newTAT, gcraView{remaining: int64(math.Floor(diff / interval)), reset: seconds(newTAT - now)}, peek
}

func (s *localStore) check(k keySet, lim Limits, est int64, dry bool) outcome {
	now := s.now()
	t := gcraSeconds(now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)

	var out outcome
	var rpmTAT, tpmTAT float64
	var rpmPeek, tpmPeek gcraView
	if lim.RPM > 0 {
		var ok bool
		ok, rpmTAT, out.rpm, rpmPeek = gcra(s.tats[k.rpm], t, float64(lim.RPM), float64(lim.RPMBurst), 1)
		if !ok {
			out.failed |= failRPM
		}
	}
	if lim.TPM > 0 {
		var ok bool
		ok, tpmTAT, out.tpm, tpmPeek = gcra(s.tats[k.tpm], t, float64(lim.TPM), float64(lim.TPMBurst), float64(est))
		if !ok {
			out.failed |= failTPM
		}
	}
	if lim.DailyTokens > 0 {
		out.used = s.valueLocked(k.day)
		if out.used >= lim.DailyTokens || out.used+est > lim.DailyTokens {
			out.failed |= failQuota
		}
	}
	if lim.MonthlyBudgetMicros > 0 {
		out.spent = s.valueLocked(k.month)
		if out.spent >= lim.MonthlyBudgetMicros {
			out.failed |= failBudget
		}
	}
	if out.failed != 0 {
		out.rpm, out.tpm = rpmPeek, tpmPeek
		return out
	}
	if dry {
		return out
	}
	if lim.RPM > 0 {
		s.tats[k.rpm] = rpmTAT
	}
	if lim.TPM > 0 && est > 0 {
		s.tats[k.tpm] = tpmTAT
	}
	if lim.DailyTokens > 0 && est > 0 {
		s.addPendingLocked(k.day, est, dayTTL, now)
		out.used += est
	}
	return out
}

func (s *localStore) settle(k keySet, r Reservation, delta, cost int64) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.TPM > 0 && delta != 0 {
		t := gcraSeconds(now)
		interval := period.Seconds() / float64(r.TPM)
		tat, ok := s.tats[k.tpm]
		if !ok {
			tat = t
		}
		var newTAT float64
		if delta < 0 {
			newTAT = math.Max(tat+float64(delta)*interval, t)
		} else {
			newTAT = math.Max(tat, t) + float64(delta)*interval
		}
		if newTAT > t {
			s.tats[k.tpm] = newTAT
		} else {
			delete(s.tats, k.tpm)
		}
	}
	if r.Daily && delta != 0 {
		// Never below zero, as in limitScript.
		if v := s.valueLocked(k.day); v+delta < 0 {
			delta = -v
		}
		s.addPendingLocked(k.day, delta, dayTTL, now)
	}
	if cost > 0 {
		s.addPendingLocked(k.month, cost, r.MonthTTL, now)
	}
}

// observe records a counter's value as Redis reported it.
func (s *localStore) observe(key string, v int64, ttl time.Duration) {
	now := s.now()
	s.mu.Lock()
	s.sweepLocked(now) // counters are observed while healthy too: keep them bounded
	c := s.counterLocked(key, ttl, now)
	c.known = v
	s.mu.Unlock()
}

// addPending records delta spent while Redis did not see it.
func (s *localStore) addPending(key string, delta int64, ttl time.Duration) {
	now := s.now()
	s.mu.Lock()
	s.addPendingLocked(key, delta, ttl, now)
	s.mu.Unlock()
}

func (s *localStore) addPendingLocked(key string, delta int64, ttl time.Duration, now time.Time) {
	c := s.counterLocked(key, ttl, now)
	was := c.pending != 0
	c.pending += delta
	switch is := c.pending != 0; {
	case is && !was:
		s.pendingN.Add(1)
	case was && !is:
		s.pendingN.Add(-1)
	}
}

func (s *localStore) counterLocked(key string, ttl time.Duration, now time.Time) *counter {
	c := s.counters[key]
	if c == nil {
		c = &counter{}
		s.counters[key] = c
	}
	c.ttl = ttl
	c.expires = now.Add(ttl)
	return c
}

func (s *localStore) valueLocked(key string) int64 {
	if c := s.counters[key]; c != nil {
		return c.known + c.pending
	}
	return 0
}

func (s *localStore) counterValue(key string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.valueLocked(key)
}

func (s *localStore) hasPending() bool { return s.pendingN.Load() > 0 }

type pendingDelta struct {
	key   string
	delta int64
	ttl   time.Duration
}

func (s *localStore) pendingBatch() []pendingDelta {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b []pendingDelta
	for k, c := range s.counters {
		if c.pending != 0 {
			b = append(b, pendingDelta{key: k, delta: c.pending, ttl: c.ttl})
		}
	}
	return b
}

// ackPending moves replayed deltas from pending to known.
func (s *localStore) ackPending(done []pendingDelta) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range done {
		c := s.counterLocked(p.key, p.ttl, now)
		c.known += p.delta
		was := c.pending != 0
		c.pending -= p.delta
		if was && c.pending == 0 {
			s.pendingN.Add(-1)
		} else if !was && c.pending != 0 {
			s.pendingN.Add(1)
		}
	}
}

// sweepLocked drops TATs in the past and expired counters, once a minute.
func (s *localStore) sweepLocked(now time.Time) {
	if now.Sub(s.lastSweep) < sweepEvery {
		return
	}
	s.lastSweep = now
	t := gcraSeconds(now)
	for k, tat := range s.tats {
		if tat <= t {
			delete(s.tats, k)
		}
	}
	for k, c := range s.counters {
		if now.After(c.expires) {
			if c.pending != 0 {
				s.pendingN.Add(-1)
			}
			delete(s.counters, k)
		}
	}
}
