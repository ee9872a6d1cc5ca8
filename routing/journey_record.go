package routing

import (
	"context"
	"log/slog"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/record"
)

// rowNumbers holds the optional numbers of a request's call-log row, so
// that its pointers cost one allocation per request instead of one each.
// They must not point into the exchange: a row waiting in the call-log
// writer's queue would keep the whole request, and the configuration it
// was served with, alive.
type rowNumbers struct {
	i64   [12]int64
	n64   int
	ints  [2]int
	nInts int
}

// int64p returns a pointer to a copy of v for the call-log row.
func (x *exchange) int64p(v int64) *int64 {
	if x.nums == nil || x.nums.n64 == len(x.nums.i64) {
		x.nums = new(rowNumbers)
	}
	p := &x.nums.i64[x.nums.n64]
	x.nums.n64++
	*p = v
	return p
}

// intp returns a pointer to a copy of v for the call-log row.
func (x *exchange) intp(v int) *int {
	if x.nums == nil || x.nums.nInts == len(x.nums.ints) {
		x.nums = new(rowNumbers)
	}
	p := &x.nums.ints[x.nums.nInts]
	x.nums.nInts++
	*p = v
	return p
}

// recordTiming puts the request's latency and retries on its row and
// returns how long it took.
func (x *exchange) recordTiming() time.Duration {
	elapsed := x.j.now().Sub(x.start)
	x.rec.LatencyMS = int(elapsed.Milliseconds())
	x.rec.Retries = max(countAttempts(x.trail)-1, 0)
	return elapsed
}

// recordTrail puts the tier and the attempt trail on the row.
func (x *exchange) recordTrail() {
	if x.rec.Tier == "" {
		x.rec.Tier = config.TierName(x.tier)
	}
	if len(x.trail.Attempts) > 0 || len(x.trail.Skips) > 0 || len(x.trail.Degraded) > 0 {
		x.rec.Attempts = trailJSON(&x.trail)
		x.rec.Fallback = x.trail.Fallback
	}
}

// writeRow hands the finished row to the call log, the process log and the
// observer (metrics).
func (x *exchange) writeRow(elapsed time.Duration) {
	if x.j.Calls != nil {
		x.j.Calls.Write(x.rec)
	}
	x.logRequest()
	if x.j.Watch != nil {
		x.j.Watch.Finished(&x.rec, &x.trail, elapsed)
	}
}

// releaseHeld gives back what the request held while it ran: its share of
// the body budget, its in-flight slot and its plan.
func (x *exchange) releaseHeld() {
	x.releaseBody()
	if x.release != nil {
		x.release()
	}
	x.releasePlan()
}

// releasePlan gives the plan back to its pool once nothing reads it (a
// stream that committed keeps only its deployment: its plan, a few
// kilobytes, would otherwise be held for as long as the stream lasts).
func (x *exchange) releasePlan() {
	if x.plan != nil {
		x.plan.Release()
		x.plan = nil
	}
}

// logRequest writes one structured line per request: failures at warn,
// everything else at debug (the call log is the full record).
func (x *exchange) logRequest() {
	level := slog.LevelDebug
	if x.rec.Status == record.StatusUpstreamError {
		level = slog.LevelWarn
	}
	if !x.j.Log.Enabled(context.Background(), level) {
		return
	}
	x.j.Log.Log(context.Background(), level, "data-plane request",
		"request_id", x.rec.RequestID, "caller", x.rec.Caller, "tier", x.rec.Tier, "model", x.rec.LogicModel,
		"provider", x.rec.Provider, "status", x.rec.Status, "http_status", x.rec.HTTPStatus,
		"error_class", x.rec.ErrorClass, "error_code", x.rec.ErrorCode, "latency_ms", x.rec.LatencyMS,
		"attempts", len(x.trail.Attempts))
}
