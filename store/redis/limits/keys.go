package limits

import (
	"strconv"
	"time"
)

// keySet names a request's Redis keys. All of one caller's keys share the
// hash tag {c<id>}, so the script runs unchanged on Redis Cluster:
//
//	<prefix>:{c42}:rpm:<tier>             GCRA TAT of requests
//	<prefix>:{c42}:tpm:<tier>             GCRA TAT of tokens
//	<prefix>:{c42}:day:<tier>:2026-03-14  daily tokens used (local day)
//	<prefix>:{c42}:month:2026-03          monthly spend in micro-units
type keySet struct {
	rpm, tpm, day, month string
}

func (l *Limiter) keys(callerID int64, tier string, cal *calendar) keySet {
	return l.keysFor(callerID, tier, cal.day, cal.month)
}

func (l *Limiter) keysFor(callerID int64, tier, day, month string) keySet {
	base := l.prefix + ":{c" + strconv.FormatInt(callerID, 10) + "}:"
	return keySet{
		rpm:   base + "rpm:" + tier,
		tpm:   base + "tpm:" + tier,
		day:   base + "day:" + tier + ":" + day,
		month: base + "month:" + month,
	}
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
