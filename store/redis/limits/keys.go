package limits

import (
	"strconv"
	"strings"
	"time"
)

// maxCachedKeys bounds the key cache (callers × tiers seen); when full it
// starts over.
const maxCachedKeys = 100_000

// keySet names a request's Redis keys. All of one caller's keys share the
// hash tag {c<id>}, so the script runs unchanged on Redis Cluster:
//
//	<prefix>:{c42}:rpm:<tier>             GCRA TAT of requests
//	<prefix>:{c42}:tpm:<tier>             GCRA TAT of tokens
//	<prefix>:{c42}:day:<tier>:2026-03-14  daily tokens used (local day)
//	<prefix>:{c42}:month:2026-03          monthly spend in micro-units
type keySet struct {
	caller               int64
	rpm, tpm, day, month string
	// boxed holds the four keys as script arguments (check: all four;
	// settle: the last three), boxed once; rpmBoxed the RPM window's with
	// the counters (a lease's release of requests).
	boxed    *[4]any
	rpmBoxed *[3]any
}

// keyID is one caller's limits in one tier.
type keyID struct {
	caller int64
	tier   string
}

func (l *Limiter) keys(callerID int64, tier string, cal *calendar) keySet {
	return l.keysFor(callerID, tier, cal.day, cal.month)
}

// keysFor returns the keys of a caller × tier on a day and month: the same
// strings for every request of the day (they were built anew on each
// request, a tenth of the limit check's allocations).
func (l *Limiter) keysFor(callerID int64, tier, day, month string) keySet {
	id := keyID{callerID, tier}
	l.kmu.RLock()
	k, ok := l.kcache[id]
	l.kmu.RUnlock()
	if ok && strings.HasSuffix(k.day, ":"+day) && strings.HasSuffix(k.month, ":"+month) {
		return k
	}
	base := l.prefix + ":{c" + strconv.FormatInt(callerID, 10) + "}:"
	k = keySet{
		caller: callerID,
		rpm:    base + "rpm:" + tier,
		tpm:    base + "tpm:" + tier,
		day:    base + "day:" + tier + ":" + day,
		month:  base + "month:" + month,
	}
	k.boxed = &[4]any{k.rpm, k.tpm, k.day, k.month}
	k.rpmBoxed = &[3]any{k.rpm, k.day, k.month}
	l.kmu.Lock()
	if l.kcache == nil || len(l.kcache) >= maxCachedKeys {
		l.kcache = make(map[keyID]keySet)
	}
	l.kcache[id] = k
	l.kmu.Unlock()
	return k
}

// calendar is the local day and month of an instant in Options.Location,
// cached until the day ends.
type calendar struct {
	day      string    // 2006-01-02
	month    string    // 2006-01
	start    time.Time // local midnight that began the day
	midnight time.Time // local midnight that ends the day
	monthEnd time.Time // start of the next local month
}

// monthTTL keeps a monthly counter two days past the month's end.
func (c *calendar) monthTTL(now time.Time) time.Duration {
	return max(c.monthEnd.Sub(now), 0) + dayTTL
}

func (l *Limiter) calendar() *calendar {
	now := l.clock()
	if c := l.cal.Load(); c != nil && !now.Before(c.start) && now.Before(c.midnight) {
		return c
	}
	c := newCalendar(now, l.loc)
	l.cal.Store(c)
	return c
}

func newCalendar(now time.Time, loc *time.Location) *calendar {
	t := now.In(loc)
	y, m, d := t.Date()
	return &calendar{
		day:      t.Format("2006-01-02"),
		month:    t.Format("2006-01"),
		start:    time.Date(y, m, d, 0, 0, 0, 0, loc),
		midnight: time.Date(y, m, d+1, 0, 0, 0, 0, loc),
		monthEnd: time.Date(y, m+1, 1, 0, 0, 0, 0, loc),
	}
}
