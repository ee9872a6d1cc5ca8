package limits

import (
	"context"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Leases take the Redis round trip off the request path. An instance that
// sees a caller × tier busy leases a slice of its allowance ahead of need:
// a few requests of its RPM and a few tokens of its TPM and daily quota,
// spent in Redis by the same script as a check (the 'l' operation), so the
// shared count already holds them. A request then decides on this
// instance, taking from the slice; when the slice runs low a background
// refresh tops it up, sized to the demand of the next leaseHorizon. A
// request that finds the slice dry (or larger than it) is checked in Redis
// as before, and that check asks for the next slice in the same run.
//
// What this keeps exact (the bound make test checks across instances):
//
//   - No limit is ever exceeded: a request admitted from a slice was
//     counted in Redis before it came.
//   - A limit can refuse early by what other instances hold unused: at most
//     a slice each, never more than a burst / leaseShare of a rate or a
//     quota / leaseQuotaShare of a daily quota, and only until the slice is
//     given back — leaseTTL after its last grant, or at a graceful stop
//     (Close).
//   - An instance that crashes loses its slice: the requests and TPM tokens
//     come back as the minute's window refills, the daily tokens stay
//     counted until the day ends (at most quota / leaseQuotaShare a crash).
//   - The monthly budget is checked against the spend Redis reported at
//     the slice's last grant, at most leaseTTL old (a budget check never
//     held back the requests in flight either).
//
// A slice's rate-limit headers are computed from the window Redis reported
// at its grant with this instance's own spending since then, so a lone
// instance reports what a check in Redis would have. Peeks and limits too
// small to slice (a burst under leaseShare, a request larger than a slice)
// always go to Redis. When Redis is unreachable, held slices are still
// spent (they were counted) and then the per-instance fallback decides.

// leaseTTL is how long a slice is kept after its last grant; what is left
// then goes back to Redis.
const leaseTTL = time.Second

// leaseHorizon sizes a slice: the units this instance took in the last
// leaseHorizon, as measured since the previous grant.
const leaseHorizon = 100 * time.Millisecond

// leaseShare bounds a slice of a rate to a 1/leaseShare of its burst.
const leaseShare = 16

// leaseMinRPM is the smallest requests-per-minute limit that is leased: a
// slice pays when a caller can send a request every leaseHorizon, and a
// smaller limit stays exact request by request.
const leaseMinRPM = int64(time.Minute / leaseHorizon)

// leaseQuotaShare bounds a slice of a daily quota: the part a crashed
// instance can lose for the rest of the day.
const leaseQuotaShare = 64

// lease is one caller × tier's slice on this instance.
type lease struct {
	id         keyID
	mu         sync.Mutex
	lim        Limits // the limits it was granted under; others void it
	day, month string
	monthTTL   time.Duration
	k          keySet
	reqs, toks int64     // units held
	tatR, tatT time.Time // the shared windows' TATs after the last grant, on this clock
	spent      int64     // the month's spend at the last grant
	granted    time.Time // the last grant; zero: none held
	sliceR     int64     // held just after the last grant
	sliceT     int64
	takenR     int64 // units taken since the last grant (demand)
	takenT     int64
	lastExact  time.Time // the last request decided in Redis
	refreshing bool
	timer      *time.Timer
}

// leaseBook holds a Limiter's leases.
type leaseBook struct {
	mu     sync.RWMutex
	m      map[keyID]*lease
	leased atomic.Uint64 // decisions taken from a slice
}

// get returns the lease of id, made empty on first use.
func (b *leaseBook) get(id keyID) *lease {
	b.mu.RLock()
	ls := b.m[id]
	b.mu.RUnlock()
	if ls != nil {
		return ls
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if ls = b.m[id]; ls == nil {
		if b.m == nil || len(b.m) >= maxCachedKeys { // start over; the timers of the dropped give their slices back
			b.m = make(map[keyID]*lease)
		}
		ls = &lease{id: id}
		b.m[id] = ls
	}
	return ls
}

// forget drops ls from the book, unless it was replaced. A request that
// still holds it may spend what is left or be granted more; its timer
// gives that back.
func (b *leaseBook) forget(ls *lease) {
	b.mu.Lock()
	if b.m[ls.id] == ls {
		delete(b.m, ls.id)
	}
	b.mu.Unlock()
}

// all returns every lease (Close).
func (b *leaseBook) all() []*lease {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return slices.Collect(maps.Values(b.m))
}

// LeasedDecisions counts decisions taken from a leased slice, without a
// Redis round trip.
func (l *Limiter) LeasedDecisions() uint64 { return l.leases.leased.Load() }

// leasable reports whether a request of est tokens under lim can be sliced.
func leasable(lim Limits, est int64) bool {
	if lim.RPM > 0 && (lim.RPM < leaseMinRPM || lim.RPMBurst < leaseShare) {
		return false
	}
	capT, limited := tokenSlice(lim)
	return !limited || (capT > 0 && est <= capT)
}

// tokenSlice is the most tokens a slice may hold, and whether tokens are
// limited at all (TPM or a daily quota).
func tokenSlice(lim Limits) (int64, bool) {
	c, limited := int64(math.MaxInt64), false
	if lim.TPM > 0 {
		c, limited = lim.TPMBurst/leaseShare, true
	}
	if lim.DailyTokens > 0 {
		c, limited = min(c, lim.DailyTokens/leaseQuotaShare), true
	}
	return c, limited
}

// fromLease decides req from this instance's slice; false when it cannot
// (no slice, dry, void, or the budget spent), and the request goes to
// Redis.
func (l *Limiter) fromLease(req Request, lim Limits, cal *calendar, k keySet) (Decision, bool) {
	ls := l.leases.get(keyID{req.CallerID, req.Tier})
	now := time.Now()
	est := req.EstimatedTokens
	_, tokensLimited := tokenSlice(lim)
	ls.mu.Lock()
	if !ls.holds(lim, cal, now) || (lim.RPM > 0 && ls.reqs < 1) || (tokensLimited && ls.toks < est) ||
		(lim.MonthlyBudgetMicros > 0 && ls.spent >= lim.MonthlyBudgetMicros) {
		ls.mu.Unlock()
		return Decision{}, false
	}
	if lim.RPM > 0 {
		ls.reqs--
		ls.takenR++
	}
	if tokensLimited {
		ls.toks -= est
		ls.takenT += est
	}
	out := ls.outcome(lim, now)
	wr, wt, refresh := ls.wantRefresh(lim, now)
	refresh = refresh && !l.degraded.Load() // a held slice is spent through an outage, not refreshed
	if refresh {
		ls.refreshing = true
	}
	ls.mu.Unlock()
	if refresh {
		l.bg.run(func() { l.refreshLease(ls, req.CallerID, lim, cal, k, wr, wt) })
	}
	l.leases.leased.Add(1)
	d := l.decide(req, lim, cal, out, false, false)
	d.Leased = true
	return d, true
}

// holds reports whether the slice is live and granted under lim this day
// and month.
func (ls *lease) holds(lim Limits, cal *calendar, now time.Time) bool {
	return !ls.granted.IsZero() && now.Before(ls.granted.Add(leaseTTL)) &&
		ls.lim == lim && ls.day == cal.day && ls.month == cal.month
}

// outcome is the windows as a check in Redis would report them now: the
// TATs of the last grant less what this instance holds unspent.
func (ls *lease) outcome(lim Limits, now time.Time) outcome {
	out := outcome{used: 0, spent: ls.spent}
	if lim.RPM > 0 {
		out.rpm = leaseWindow(lim.RPM, lim.RPMBurst, ls.tatR, ls.reqs, now)
	}
	if lim.TPM > 0 {
		out.tpm = leaseWindow(lim.TPM, lim.TPMBurst, ls.tatT, ls.toks, now)
	}
	return out
}

// leaseWindow is a GCRA window of rate and burst whose TAT is tat with held
// units not spent.
func leaseWindow(rate, burst int64, tat time.Time, held int64, now time.Time) gcraView {
	interval := float64(period) / float64(rate)
	exact := tat.Add(-time.Duration(float64(held) * interval))
	reset := max(exact.Sub(now), 0)
	remaining := int64(math.Floor(float64(burst) - float64(reset)/interval))
	return gcraView{remaining: max(min(remaining, burst), 0), reset: reset}
}

// wantRefresh says whether a refresh should start now, and what it asks
// for: when half the slice is gone, or half its life.
func (ls *lease) wantRefresh(lim Limits, now time.Time) (wr, wt int64, ok bool) {
	if ls.refreshing {
		return 0, 0, false
	}
	_, tokensLimited := tokenSlice(lim)
	low := now.Sub(ls.granted) >= leaseTTL/2 ||
		(lim.RPM > 0 && ls.sliceR > 0 && ls.reqs*2 <= ls.sliceR) ||
		(tokensLimited && ls.sliceT > 0 && ls.toks*2 <= ls.sliceT)
	if !low {
		return 0, 0, false
	}
	wr, wt = ls.wants(lim, now)
	return wr, wt, true
}

// wants is what the next grant should ask for: the units taken in the
// last leaseHorizon (at least one request, or the last request's tokens),
// within the slice's bound, less what is held.
func (ls *lease) wants(lim Limits, now time.Time) (wr, wt int64) {
	// Demand is measured over at least a tenth of the horizon: a request
	// just after a grant is not a rate of thousands a second.
	elapsed := max(now.Sub(ls.granted), leaseHorizon/10)
	if ls.granted.IsZero() {
		elapsed = leaseHorizon
	}
	scale := func(n int64) int64 {
		return int64(math.Ceil(float64(n) * float64(leaseHorizon) / float64(elapsed)))
	}
	if lim.RPM > 0 {
		wr = min(max(scale(ls.takenR), 1), lim.RPMBurst/leaseShare) - ls.reqs
	}
	if capT, limited := tokenSlice(lim); limited {
		wt = min(scale(ls.takenT), capT) - ls.toks
	}
	return max(wr, 0), max(wt, 0)
}

// exactWants is what a check in Redis asks for beside its own request: a
// slice once the caller × tier shows demand (two requests within leaseTTL
// on this instance), nothing while a refresh is out.
func (l *Limiter) exactWants(req Request, lim Limits) (ls *lease, wr, wt int64, ok bool) {
	ls = l.leases.get(keyID{req.CallerID, req.Tier})
	now := time.Now()
	var voided heldUnits
	defer func() { l.release(voided) }() // after the unlock below
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.lim != lim { // granted under other limits: given back, not kept
		voided = ls.drainLocked()
	}
	busy := !ls.lastExact.IsZero() && now.Sub(ls.lastExact) < leaseTTL
	ls.lastExact = now
	if !busy || ls.refreshing {
		return ls, 0, 0, false
	}
	if ls.takenR == 0 && ls.takenT == 0 { // the first slice: the next request's worth
		ls.takenR, ls.takenT = 1, req.EstimatedTokens
	}
	wr, wt = ls.wants(lim, now)
	ls.refreshing = true // one ask at a time: concurrent checks ask for nothing
	return ls, wr, wt, true
}

// askFailed ends an ask that got no answer.
func (ls *lease) askFailed() {
	ls.mu.Lock()
	ls.refreshing = false
	ls.mu.Unlock()
}

// refreshLease asks Redis for a slice with no request of its own.
func (l *Limiter) refreshLease(ls *lease, callerID int64, lim Limits, cal *calendar, k keySet, wr, wt int64) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	out, err := l.checkRedis(ctx, k, callerID, lim, 0, cal, leaseAsk{refresh: true, reqs: wr, toks: wt})
	if err != nil {
		ls.askFailed()
		l.down(err)
		return
	}
	l.up()
	l.granted(ls, lim, cal, k, out)
}

// granted adds a grant's units to the slice (or gives them back at once
// when the slice was voided meanwhile) and arms its expiry.
func (l *Limiter) granted(ls *lease, lim Limits, cal *calendar, k keySet, out outcome) {
	now := time.Now()
	ls.mu.Lock()
	ls.refreshing = false
	if out.failed != 0 {
		ls.spent = out.spent
		ls.mu.Unlock()
		return
	}
	if ls.lim != lim || ls.day != cal.day || ls.month != cal.month {
		old := ls.drainLocked()
		ls.lim, ls.day, ls.month, ls.k, ls.monthTTL = lim, cal.day, cal.month, k, cal.monthTTL(now)
		defer l.release(old)
	}
	ls.reqs += out.gotR
	ls.toks += out.gotT
	ls.sliceR, ls.sliceT = ls.reqs, ls.toks
	ls.takenR, ls.takenT = 0, 0
	ls.tatR, ls.tatT = now.Add(out.rpm.reset), now.Add(out.tpm.reset)
	ls.spent = out.spent
	ls.granted = now
	if ls.timer == nil {
		ls.timer = time.AfterFunc(leaseTTL, func() { l.expire(ls) })
	} else {
		ls.timer.Reset(leaseTTL)
	}
	ls.mu.Unlock()
}

// expire gives back what a slice holds leaseTTL after its last grant, and
// forgets the caller × tier until it is busy again (so the book holds the
// busy ones only).
func (l *Limiter) expire(ls *lease) {
	ls.mu.Lock()
	if !ls.granted.IsZero() && time.Since(ls.granted) < leaseTTL { // granted again as the timer fired
		ls.mu.Unlock()
		return
	}
	held := ls.drainLocked()
	ls.mu.Unlock()
	l.leases.forget(ls)
	l.release(held)
}

// heldUnits is what a slice gave back: its units with the keys and limits
// they were taken under.
type heldUnits struct {
	k          keySet
	lim        Limits
	monthTTL   time.Duration
	reqs, toks int64
}

// drainLocked empties the slice and returns what it held.
func (ls *lease) drainLocked() heldUnits {
	h := heldUnits{k: ls.k, lim: ls.lim, monthTTL: ls.monthTTL, reqs: ls.reqs, toks: ls.toks}
	ls.reqs, ls.toks, ls.sliceR, ls.sliceT = 0, 0, 0, 0
	ls.granted = time.Time{}
	return h
}

// release gives held units back to Redis with the next pipeline (a
// settlement of minus the units on each window; the daily tokens return to
// the quota), or keeps the daily tokens for the replay while Redis is
// unreachable.
func (l *Limiter) release(h heldUnits) {
	if h.reqs > 0 && h.lim.RPM > 0 && l.tryRedis() {
		l.settleKeys(h.k, h.k.rpmBoxed[:], h.lim.RPM, -h.reqs, false, 0, h.monthTTL)
	}
	if h.toks > 0 {
		daily := h.lim.DailyTokens > 0
		if l.tryRedis() {
			l.settleKeys(h.k, h.k.boxed[1:], h.lim.TPM, -h.toks, daily, 0, h.monthTTL)
		} else {
			l.keepForReplay(h.k, daily, -h.toks, 0, h.monthTTL)
		}
	}
}

// Close gives every slice back and flushes: a stopping instance leaves
// the shared counts as if it had never leased.
func (l *Limiter) Close(ctx context.Context) error {
	for _, ls := range l.leases.all() {
		ls.mu.Lock()
		if ls.timer != nil {
			ls.timer.Stop()
		}
		held := ls.drainLocked()
		ls.mu.Unlock()
		l.release(held)
	}
	return l.Flush(ctx)
}

// unleased is a check's outcome as the caller sees it when the same run
// granted a slice: the windows without the slice's units, which are still
// this instance's to spend.
func (o outcome) unleased(lim Limits) outcome {
	if o.failed != 0 {
		return o
	}
	if lim.RPM > 0 && o.gotR > 0 {
		o.rpm.remaining += o.gotR
		o.rpm.reset = max(o.rpm.reset-time.Duration(float64(o.gotR)*float64(period)/float64(lim.RPM)), 0)
	}
	if lim.TPM > 0 && o.gotT > 0 {
		o.tpm.remaining += o.gotT
		o.tpm.reset = max(o.tpm.reset-time.Duration(float64(o.gotT)*float64(period)/float64(lim.TPM)), 0)
	}
	return o
}
