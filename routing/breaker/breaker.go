// Package breaker is the per-deployment circuit breaker of the protection design, with
// resilience4j COUNT_BASED semantics (PROTOCOLS.md, "Resilience semantics"):
//
//   - closed: a ring buffer holds the last Window outcomes; the failure rate
//     is not evaluated below MinCalls; the breaker opens when
//     failures*100 >= FailurePercent*calls;
//   - open: every call is refused until Open has elapsed, then half-open;
//   - half-open: at most HalfOpenProbes probe calls are admitted, recorded in
//     a fresh window of HalfOpenProbes calls; once the window is full the
//     breaker closes (fresh window) if the failure rate is below the
//     threshold and opens again otherwise. It opens as soon as the failures
//     already recorded make the threshold unavoidable.
//
// Only Success and Failure outcomes count; Ignored (429, auth, content
// filter, bad request, client cancel) counts as neither and gives a half-open
// permit back. The caller maps failure classes to outcomes.
package breaker

import (
	"log/slog"
	"sync"
	"time"
)

// State is a breaker's state.
type State uint8

// The three states.
const (
	Closed State = iota
	Open
	HalfOpen
)

var stateNames = [...]string{Closed: "closed", Open: "open", HalfOpen: "half_open"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// MarshalText encodes the state as its name ("closed", "open", "half_open").
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes a state name.
func (s *State) UnmarshalText(b []byte) error {
	for i, n := range stateNames {
		if n == string(b) {
			*s = State(i)
			return nil
		}
	}
	*s = Closed
	return nil
}

// Outcome is how a permitted call ended, as far as the breaker is concerned.
type Outcome uint8

// Outcomes. The zero Outcome is treated as Ignored.
const (
	// Success counts as a successful call.
	Success Outcome = iota + 1
	// Failure counts as a failed call: only server, timeout and network
	// failure classes.
	Failure
	// Ignored counts as neither: rate limited, auth, billing, content
	// filter, bad request, client cancelled.
	Ignored
)

// Settings of one deployment's breaker. A zero field means the default.
type Settings struct {
	Window         int           // outcomes kept in the closed-state window
	MinCalls       int           // calls needed before the rate is evaluated
	FailurePercent int           // open at failures*100 >= FailurePercent*calls
	Open           time.Duration // how long an open breaker refuses calls
	HalfOpenProbes int           // probe calls admitted when half-open
}

// Defaults are the protection design's: window 50, minimum 20, open at >= 40 % failures,
// open 15 s, 3 half-open probes.
var Defaults = Settings{Window: 50, MinCalls: 20, FailurePercent: 40, Open: 15 * time.Second, HalfOpenProbes: 3}

// WithDefaults fills zero fields from Defaults and clamps the rest: MinCalls
// to at most Window (as resilience4j does) and FailurePercent to 1..100.
func (s Settings) WithDefaults() Settings {
	if s.Window <= 0 {
		s.Window = Defaults.Window
	}
	if s.MinCalls <= 0 {
		s.MinCalls = Defaults.MinCalls
	}
	s.MinCalls = min(s.MinCalls, s.Window)
	if s.FailurePercent <= 0 {
		s.FailurePercent = Defaults.FailurePercent
	}
	s.FailurePercent = min(s.FailurePercent, 100)
	if s.Open <= 0 {
		s.Open = Defaults.Open
	}
	if s.HalfOpenProbes <= 0 {
		s.HalfOpenProbes = Defaults.HalfOpenProbes
	}
	return s
}

// Status is one breaker as the console shows it.
type Status struct {
	State State `json:"state"`
	// FailureRate is in percent: of the closed window, of the half-open
	// probe window, or, when open, the rate that opened it.
	FailureRate float64   `json:"failure_rate"`
	Calls       int       `json:"calls"`
	Failures    int       `json:"failures"`
	OpenedAt    time.Time `json:"opened_at,omitzero"`
	// ProbesInFlight counts half-open probe permits not yet done.
	ProbesInFlight int      `json:"probes_in_flight,omitempty"`
	Settings       Settings `json:"settings"`
}

// Options configure a Set.
type Options struct {
	// Clock returns the current time; tests pass a fake. Default time.Now.
	Clock func() time.Time
	// OnStateChange, if set, is called after every transition, outside the
	// breaker's lock.
	OnStateChange func(id int64, from, to State)
	// Logger receives "breaker state change" records. Default slog.Default().
	Logger *slog.Logger
	// ProbeTimeout is how long a half-open probe permit stays reserved
	// without Done before it is reclaimed, so a dropped permit cannot wedge
	// the breaker half-open. Default 60 s.
	ProbeTimeout time.Duration
}

// Set holds one breaker per deployment id, created on first use.
type Set struct {
	clock        func() time.Time
	onChange     func(id int64, from, to State)
	log          *slog.Logger
	probeTimeout time.Duration

	mu       sync.RWMutex
	breakers map[int64]*breaker

	// changed is signalled (without blocking) on every transition; the
	// Reporter publishes on it.
	changed chan struct{}
}

// NewSet returns an empty Set.
func NewSet(opts Options) *Set {
	s := &Set{
		clock:        opts.Clock,
		onChange:     opts.OnStateChange,
		log:          opts.Logger,
		probeTimeout: opts.ProbeTimeout,
		breakers:     make(map[int64]*breaker),
		changed:      make(chan struct{}, 1),
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.probeTimeout <= 0 {
		s.probeTimeout = 60 * time.Second
	}
	return s
}

// Permit is the right to make one call. It must be completed exactly once
// with Done. The zero Permit (returned with ok=false) ignores Done.
type Permit struct {
	b      *breaker
	gen    uint64 // the breaker's state generation when admitted
	ticket uint64 // half-open probe ticket; 0 for a closed-state permit
	slot   int32
}

// Done records the call's outcome. An outcome from a permit granted in an
// earlier state (the breaker has transitioned since) is not counted.
func (p Permit) Done(o Outcome) {
	if p.b != nil {
		p.b.done(p, o)
	}
}

// Allow asks whether a call to deployment id may go ahead under settings st
// (which replace the breaker's settings when they changed). When ok is true
// the returned Permit must be completed with Done.
func (s *Set) Allow(id int64, st Settings) (p Permit, ok bool) {
	b := s.get(id, st)
	b.mu.Lock()
	if st != b.raw {
		b.apply(st)
	}
	if b.state == Closed {
		p = Permit{b: b, gen: b.gen, slot: -1}
		b.mu.Unlock()
		return p, true
	}
	var ev event
	p, ok = b.allowSlow(s.clock(), &ev)
	b.mu.Unlock()
	s.emit(ev)
	return p, ok
}

// State is deployment id's current state (Closed for an unknown id).
func (s *Set) State(id int64) State {
	s.mu.RLock()
	b := s.breakers[id]
	s.mu.RUnlock()
	if b == nil {
		return Closed
	}
	var ev event
	b.mu.Lock()
	b.advance(s.clock(), &ev)
	st := b.state
	b.mu.Unlock()
	s.emit(ev)
	return st
}

// OpenUntil reports whether deployment id's breaker is open (refusing every
// call) and, if so, when it turns half-open and admits probes again.
func (s *Set) OpenUntil(id int64) (until time.Time, open bool) {
	s.mu.RLock()
	b := s.breakers[id]
	s.mu.RUnlock()
	if b == nil {
		return time.Time{}, false
	}
	var ev event
	b.mu.Lock()
	b.advance(s.clock(), &ev)
	if b.state == Open {
		until, open = b.openedAt.Add(b.st.Open), true
	}
	b.mu.Unlock()
	s.emit(ev)
	return until, open
}

// Snapshot returns the status of every breaker of this instance.
func (s *Set) Snapshot() map[int64]Status {
	s.mu.RLock()
	bs := make([]*breaker, 0, len(s.breakers))
	for _, b := range s.breakers {
		bs = append(bs, b)
	}
	s.mu.RUnlock()

	now := s.clock()
	out := make(map[int64]Status, len(bs))
	for _, b := range bs {
		var ev event
		b.mu.Lock()
		b.advance(now, &ev)
		out[b.id] = b.status()
		b.mu.Unlock()
		s.emit(ev)
	}
	return out
}

// Forget drops deployment id's breaker (e.g. the deployment was deleted).
// Outstanding permits of it complete harmlessly.
func (s *Set) Forget(id int64) {
	s.mu.Lock()
	delete(s.breakers, id)
	s.mu.Unlock()
}

func (s *Set) get(id int64, st Settings) *breaker {
	s.mu.RLock()
	b := s.breakers[id]
	s.mu.RUnlock()
	if b != nil {
		return b
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b = s.breakers[id]; b == nil {
		b = newBreaker(s, id, st)
		s.breakers[id] = b
	}
	return b
}

// event is a transition to report once the breaker's lock is released.
type event struct {
	happened bool
	id       int64
	from, to State
	rate     float64
	calls    int
}

func (s *Set) emit(ev event) {
	if !ev.happened {
		return
	}
	s.log.Info("breaker state change",
		slog.Int64("deployment_id", ev.id),
		slog.String("from", ev.from.String()),
		slog.String("to", ev.to.String()),
		slog.Float64("failure_rate", ev.rate),
		slog.Int("calls", ev.calls))
	if s.onChange != nil {
		s.onChange(ev.id, ev.from, ev.to)
	}
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// probe is one half-open permit slot; ticket 0 means free.
type probe struct {
	ticket   uint64
	deadline time.Time
}

type breaker struct {
	set *Set
	id  int64

	mu  sync.Mutex
	raw Settings // as last passed to Allow, to detect changes cheaply
	st  Settings // raw with defaults applied

	state State
	gen   uint64 // bumped on every transition; stale permits are ignored

	// closed window: ring[i] is true for a failure.
	ring     []bool
	pos      int
	calls    int
	failures int

	openedAt time.Time
	// the window that opened the breaker
	openRate     float64
	openN        int
	openFailures int

	// half-open window
	probes     []probe
	nextTicket uint64
	hoCalls    int
	hoFailures int
}

func newBreaker(s *Set, id int64, raw Settings) *breaker {
	b := &breaker{set: s, id: id, raw: raw, st: raw.WithDefaults()}
	b.ring = make([]bool, b.st.Window)
	b.probes = make([]probe, b.st.HalfOpenProbes)
	return b
}

// apply switches to new settings, keeping the most recent outcomes that fit
// the new window. A half-open breaker starts a fresh probe window.
func (b *breaker) apply(raw Settings) {
	old := b.st
	b.raw, b.st = raw, raw.WithDefaults()
	if b.st.Window != old.Window {
		keep := min(b.calls, b.st.Window)
		ring := make([]bool, b.st.Window)
		failures := 0
		for i := range keep {
			// the i-th most recent outcome, oldest first
			f := b.ring[(b.pos-keep+i+2*len(b.ring))%len(b.ring)]
			ring[i] = f
			if f {
				failures++
			}
		}
		b.ring, b.calls, b.failures = ring, keep, failures
		b.pos = keep % b.st.Window
	}
	if b.st.HalfOpenProbes != old.HalfOpenProbes {
		b.probes = make([]probe, b.st.HalfOpenProbes)
		if b.state == HalfOpen {
			b.gen++
			b.hoCalls, b.hoFailures = 0, 0
		}
	}
}

// advance moves an open breaker whose open duration has elapsed to half-open.
func (b *breaker) advance(now time.Time, ev *event) {
	if b.state == Open && now.Sub(b.openedAt) >= b.st.Open {
		b.transition(HalfOpen, now, ev)
	}
}

func (b *breaker) allowSlow(now time.Time, ev *event) (Permit, bool) {
	b.advance(now, ev)
	switch b.state {
	case Closed:
		return Permit{b: b, gen: b.gen, slot: -1}, true
	case Open:
		return Permit{}, false
	}
	// half-open: admitted probes = in flight + recorded <= HalfOpenProbes
	inFlight, free := 0, -1
	for i := range b.probes {
		pr := &b.probes[i]
		if pr.ticket != 0 && now.After(pr.deadline) {
			b.set.log.Warn("breaker probe permit expired without Done",
				slog.Int64("deployment_id", b.id))
			pr.ticket = 0
		}
		if pr.ticket != 0 {
			inFlight++
		} else if free < 0 {
			free = i
		}
	}
	if free < 0 || inFlight+b.hoCalls >= b.st.HalfOpenProbes {
		return Permit{}, false
	}
	b.nextTicket++
	b.probes[free] = probe{ticket: b.nextTicket, deadline: now.Add(b.set.probeTimeout)}
	return Permit{b: b, gen: b.gen, ticket: b.nextTicket, slot: int32(free)}, true
}

func (b *breaker) done(p Permit, o Outcome) {
	var ev event
	b.mu.Lock()
	if p.gen == b.gen {
		switch b.state {
		case Closed:
			if o == Success || o == Failure {
				b.record(o == Failure, &ev)
			}
		case HalfOpen:
			b.doneProbe(p, o, &ev)
		}
	}
	b.mu.Unlock()
	b.set.emit(ev)
}

// record adds a closed-state outcome to the window and opens the breaker
// when the threshold is reached. The clock is only read then.
func (b *breaker) record(failure bool, ev *event) {
	if b.calls == len(b.ring) {
		if b.ring[b.pos] {
			b.failures--
		}
	} else {
		b.calls++
	}
	b.ring[b.pos] = failure
	if failure {
		b.failures++
	}
	b.pos++
	if b.pos == len(b.ring) {
		b.pos = 0
	}
	// Evaluated after every recorded call, successes included, as
	// resilience4j does.
	if b.calls >= b.st.MinCalls && b.failures*100 >= b.st.FailurePercent*b.calls {
		b.openRate, b.openN, b.openFailures = rate(b.failures, b.calls), b.calls, b.failures
		b.transition(Open, b.set.clock(), ev)
	}
}

func (b *breaker) doneProbe(p Permit, o Outcome, ev *event) {
	if p.slot < 0 || int(p.slot) >= len(b.probes) || b.probes[p.slot].ticket != p.ticket {
		return // already done, or reclaimed after its deadline
	}
	b.probes[p.slot].ticket = 0
	if o != Success && o != Failure {
		return // Ignored: the permit goes back, nothing is recorded
	}
	b.hoCalls++
	if o == Failure {
		b.hoFailures++
	}
	n := b.st.HalfOpenProbes
	switch {
	case b.hoFailures*100 >= b.st.FailurePercent*n:
		// The window's rate reaches the threshold whatever the rest do.
		b.openRate, b.openN, b.openFailures = rate(b.hoFailures, b.hoCalls), b.hoCalls, b.hoFailures
		b.transition(Open, b.set.clock(), ev)
	case b.hoCalls >= n:
		b.transition(Closed, time.Time{}, ev)
	}
}

func (b *breaker) transition(to State, now time.Time, ev *event) {
	from := b.state
	*ev = event{happened: true, id: b.id, from: from, to: to}
	switch from {
	case Closed:
		ev.rate, ev.calls = rate(b.failures, b.calls), b.calls
	case HalfOpen:
		ev.rate, ev.calls = rate(b.hoFailures, b.hoCalls), b.hoCalls
	case Open:
		ev.rate, ev.calls = b.openRate, b.openN
	}
	b.state = to
	b.gen++
	switch to {
	case Open:
		b.openedAt = now
	case HalfOpen:
		b.hoCalls, b.hoFailures = 0, 0
		clear(b.probes)
	case Closed:
		clear(b.ring)
		b.pos, b.calls, b.failures = 0, 0, 0
		b.openedAt = time.Time{}
		clear(b.probes)
	}
}

func (b *breaker) status() Status {
	st := Status{State: b.state, Settings: b.st}
	switch b.state {
	case Closed:
		st.Calls, st.Failures = b.calls, b.failures
		st.FailureRate = rate(b.failures, b.calls)
	case Open:
		st.Calls, st.Failures, st.FailureRate = b.openN, b.openFailures, b.openRate
		st.OpenedAt = b.openedAt
	case HalfOpen:
		st.Calls, st.Failures = b.hoCalls, b.hoFailures
		st.FailureRate = rate(b.hoFailures, b.hoCalls)
		st.OpenedAt = b.openedAt
		for _, pr := range b.probes {
			if pr.ticket != 0 {
				st.ProbesInFlight++
			}
		}
	}
	return st
}

func rate(failures, calls int) float64 {
	if calls == 0 {
		return 0
	}
	return float64(failures) * 100 / float64(calls)
}

// Changed is signalled (without blocking) on every state transition, so a
// reporter can publish the new states at once instead of at its next tick.
func (s *Set) Changed() <-chan struct{} { return s.changed }
