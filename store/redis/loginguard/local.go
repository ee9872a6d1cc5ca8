package loginguard

import (
	"sort"
	"sync"
	"time"
)

// localStore is the per-instance fallback while Redis is unreachable: the
// same counting as failScript and checkScript, in memory, timed by this
// instance's clock. It is deliberately not merged into Redis on recovery:
// it only exists so that an outage does not switch the throttle off.
type localStore struct {
	now func() time.Time

	mu        sync.Mutex
	subjects  map[subject]*localState
	lastSweep time.Time
}

type localState struct {
	n       int
	until   time.Time
	locked  bool
	expires time.Time
}

// maxLocal bounds the fallback's memory under a flood of made-up usernames;
// past it, the oldest-expiring entries are dropped (the address is still
// counted).
const maxLocal = 50_000

func newLocalStore(now func() time.Time) *localStore {
	return &localStore{now: now, subjects: map[subject]*localState{}, lastSweep: now()}
}

func (s *localStore) check(subs []subject) Verdict {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var v Verdict
	for _, sub := range subs {
		st := s.subjects[sub]
		if st == nil || !now.Before(st.expires) || !now.Before(st.until) {
			continue
		}
		v = longer(v, Verdict{Blocked: true, Kind: sub.kind, RetryAfter: st.until.Sub(now), Locked: st.locked, Local: true})
	}
	v.Local = true
	return v
}

func (s *localStore) fail(subs []subject, set Settings) (Verdict, []failed) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)
	var v Verdict
	var out []failed
	for _, sub := range subs {
		st := s.subjects[sub]
		if st == nil || !now.Before(st.expires) {
			st = &localState{}
			s.subjects[sub] = st
		}
		wasLocked := st.locked && now.Before(st.until)
		st.n++
		l := set.limits(sub.kind)
		var wait time.Duration
		locked := false
		switch {
		case st.n >= l.LockoutAfter:
			wait, locked = set.LockoutFor, true
		case st.n >= l.BackoffAfter:
			wait = set.BackoffBase
			for i := 0; i < st.n-l.BackoffAfter && wait < set.LockoutFor; i++ {
				wait *= 2
			}
			wait = min(wait, set.LockoutFor)
		}
		if wait > 0 {
			st.until, st.locked = now.Add(wait), locked
		}
		if locked {
			st.expires = now.Add(wait) // a lockout ends with a clean slate
		} else {
			st.expires = now.Add(set.LockoutFor)
		}
		f := failed{sub: sub, failures: st.n, wait: wait, locked: locked, newly: locked && !wasLocked}
		out = append(out, f)
		v = longer(v, f.verdict())
	}
	v.Local = true
	return v, out
}

func (s *localStore) clear(sub subject) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.subjects, sub)
}

func (s *localStore) locks() []Lock {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Lock
	for sub, st := range s.subjects {
		if st.locked && now.Before(st.until) && now.Before(st.expires) {
			out = append(out, Lock{Kind: sub.kind, Subject: sub.name, Until: st.until, Local: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Until.Before(out[j].Until) })
	return out
}

// sweepLocked drops expired entries once a minute, and the soonest-expiring
// ones when the map is full.
func (s *localStore) sweepLocked(now time.Time) {
	if now.Sub(s.lastSweep) < time.Minute && len(s.subjects) < maxLocal {
		return
	}
	s.lastSweep = now
	for sub, st := range s.subjects {
		if !now.Before(st.expires) {
			delete(s.subjects, sub)
		}
	}
	if len(s.subjects) < maxLocal {
		return
	}
	type entry struct {
		sub     subject
		expires time.Time
	}
	all := make([]entry, 0, len(s.subjects))
	for sub, st := range s.subjects {
		all = append(all, entry{sub, st.expires})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].expires.Before(all[j].expires) })
	for _, e := range all[:len(all)-maxLocal/2] {
		delete(s.subjects, e.sub)
	}
}
