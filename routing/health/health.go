// Package health scores deployments (health and the worker role) and tells the router which
// ones are down.
//
// Samples land in Redis minute buckets (Settings.Bucket): live outcomes of
// the data plane (aggregated in memory by each instance's Tracker and
// flushed once a second) and the worker's probe results. The score of a
// deployment is its success rate over the sliding window (Settings.Window),
// probes and live traffic together; only server, timeout and network
// failures count against it, as for the circuit breaker.
//
// The worker's probe job evaluates every deployment (Settings.Next, under
// its lease) and writes the states to one Redis hash; every instance's
// Tracker reads that hash every second into a map, so Down is a map read.
// A down deployment receives no traffic and comes back only through probes:
// RecoverProbes successful probes in a row make it degraded with a fresh
// window. Health never touches configuration: a deployment, provider or key
// an operator disabled is not probed and stays disabled whatever its state.
package health

import (
	"switchyard/routing/config"

	"errors"
	"fmt"
	"strconv"
	"time"
)

// State is a deployment's health.
type State string

// Health states.
const (
	Healthy  State = "healthy"
	Degraded State = "degraded"
	Down     State = "down"
)

// Settings are the scoring window and thresholds.
type Settings struct {
	// Bucket is the width of one Redis bucket (default one minute).
	Bucket time.Duration
	// Window is the sliding window scored (default five minutes); it is
	// rounded up to whole buckets.
	Window time.Duration
	// MinSamples: with fewer samples in the window the state is kept
	// (default 3).
	MinSamples int64
	// DegradedBelow: a score below it is degraded (default 0.9).
	DegradedBelow float64
	// DownBelow: a score below it is down (default 0.5).
	DownBelow float64
	// RecoverProbes is how many successful probes in a row bring a down
	// deployment back (default 2).
	RecoverProbes int
}

// WithDefaults fills unset fields.
func (s Settings) WithDefaults() Settings {
	if s.Bucket <= 0 {
		s.Bucket = time.Minute
	}
	if s.Window <= 0 {
		s.Window = 5 * time.Minute
	}
	if s.Window < s.Bucket {
		s.Window = s.Bucket
	}
	if s.MinSamples <= 0 {
		s.MinSamples = 3
	}
	if s.DegradedBelow == 0 {
		s.DegradedBelow = 0.9
	}
	if s.DownBelow == 0 {
		s.DownBelow = 0.5
	}
	if s.RecoverProbes <= 0 {
		s.RecoverProbes = 2
	}
	return s
}

// Validate checks thresholds an operator may set.
func (s Settings) Validate() error {
	var errs []error
	if s.DownBelow < 0 || s.DownBelow > 1 || s.DegradedBelow < 0 || s.DegradedBelow > 1 {
		errs = append(errs, errors.New("health thresholds are fractions between 0 and 1"))
	}
	if s.DownBelow > s.DegradedBelow {
		errs = append(errs, fmt.Errorf("the down threshold (%g) must not be above the degraded threshold (%g)", s.DownBelow, s.DegradedBelow))
	}
	if s.Bucket > 0 && s.Bucket < 10*time.Millisecond {
		errs = append(errs, errors.New("the health bucket must be at least 10ms"))
	}
	return errors.Join(errs...)
}

// Buckets is the number of buckets the window spans.
func (s Settings) Buckets() int64 {
	n := int64((s.Window + s.Bucket - 1) / s.Bucket)
	return max(n, 1)
}

// BucketOf is the index of the bucket holding t.
func (s Settings) BucketOf(t time.Time) int64 { return t.UnixMilli() / s.Bucket.Milliseconds() }

// Counts are the samples of a deployment in a window.
type Counts struct {
	OK          int64 `json:"ok"`
	Failed      int64 `json:"failed"`
	ProbeOK     int64 `json:"probe_ok"`
	ProbeFailed int64 `json:"probe_failed"`
}

// Samples is every counted outcome.
func (c Counts) Samples() int64 { return c.OK + c.Failed + c.ProbeOK + c.ProbeFailed }

// Score is the success rate, 0 without samples.
func (c Counts) Score() float64 {
	n := c.Samples()
	if n == 0 {
		return 0
	}
	return float64(c.OK+c.ProbeOK) / float64(n)
}

// Status is a deployment's evaluated health, as stored in Redis.
type Status struct {
	State   State     `json:"state"`
	Score   float64   `json:"score"`
	Samples int64     `json:"samples"`
	Counts  Counts    `json:"counts"`
	Since   time.Time `json:"since"`  // when State began
	Reason  string    `json:"reason"` // why State began
	// Streak is the run of probe results: n > 0 successes, n < 0 failures.
	Streak int `json:"streak"`
	// From is the first bucket the window counts (set on recovery, so the
	// failures that took the deployment down no longer count).
	From    int64     `json:"from,omitempty"`
	Updated time.Time `json:"updated"`
}

// Probe is one probe's verdict for the state machine.
type Probe int

// Probe verdicts.
const (
	NoProbe     Probe = iota // not probed, or inconclusive
	ProbePassed              // answered
	ProbeFailed              // server, timeout or network failure
)

func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 0, 64) + "%" }

// Next is the state machine. cur is the last status (zero for a deployment
// seen first), c the window's counts (from cur.From on), p this round's
// probe, bucket the current bucket.
//
//   - down stays down until RecoverProbes probes in a row passed; then it is
//     degraded and its window restarts at the next bucket;
//   - otherwise, with at least MinSamples samples, a score below DownBelow
//     is down, below DegradedBelow degraded, else healthy; with fewer the
//     state is kept.
func (s Settings) Next(cur Status, c Counts, p Probe, now time.Time, bucket int64) Status {
	next := cur
	if next.State == "" {
		next.State, next.Since = Healthy, now
	}
	switch p {
	case ProbePassed:
		next.Streak = max(next.Streak, 0) + 1
	case ProbeFailed:
		next.Streak = min(next.Streak, 0) - 1
	}
	next.Counts, next.Samples, next.Score, next.Updated = c, c.Samples(), c.Score(), now
	to, reason := next.State, ""
	window := s.Window.String()
	switch {
	case next.State == Down:
		if next.Streak >= s.RecoverProbes {
			to = Degraded
			reason = fmt.Sprintf("%d probes in a row succeeded; scoring restarts with a fresh window", next.Streak)
			next.From = bucket + 1
			next.Counts, next.Samples, next.Score = Counts{}, 0, 0
		}
	case next.Samples < s.MinSamples:
	case next.Score < s.DownBelow:
		to = Down
		reason = fmt.Sprintf("score %s over the last %s (%d samples) is below %s", pct(next.Score), window, next.Samples, pct(s.DownBelow))
	case next.Score < s.DegradedBelow:
		to = Degraded
		reason = fmt.Sprintf("score %s over the last %s (%d samples) is below %s", pct(next.Score), window, next.Samples, pct(s.DegradedBelow))
	default:
		to = Healthy
		reason = fmt.Sprintf("score %s over the last %s (%d samples)", pct(next.Score), window, next.Samples)
	}
	if to != next.State {
		next.State, next.Since, next.Reason = to, now, reason
	}
	return next
}

// Transition is a change of state found by an evaluation.
type Transition struct {
	DeploymentID int64
	From, To     State
	At           time.Time
	Score        float64
	Samples      int64
	Reason       string
}

// NotProbed says why the prober leaves d alone, or "" when it probes it:
// it probes enabled deployments (parked ones included: an operator may want
// to know before unparking) whose provider is enabled and has an active key.
func NotProbed(d *config.RDeployment) string {
	switch {
	case !d.Enabled:
		return "deployment disabled"
	case !d.Provider.Enabled:
		return "provider " + d.Provider.Name + " disabled"
	case len(d.Provider.ActiveKey) == 0:
		return "provider " + d.Provider.Name + " has no active key"
	}
	return ""
}

// ProbeSkip is why the prober left out a deployment's due probe this round
// (a code; the console words it).
type ProbeSkip string

// Probe skip reasons.
const (
	// SkipLiveTraffic: the deployment served a successful live request
	// within the probe interval; its live outcomes already feed the score,
	// so a billed probe would tell nothing new.
	SkipLiveTraffic ProbeSkip = "live_traffic"
)

// ProbeLedger is a deployment's probing over the last 24 hours (whole
// hours): probes actually sent and what they cost, probes skipped, and the
// latest skip and live success.
type ProbeLedger struct {
	Sent    int64
	Skipped int64
	// CostMicros is the cost of the probes sent, in micro-units of the
	// deployment's price currency (usage the vendor reported × prices).
	CostMicros int64
	// LastSkip is when the latest probe was skipped for live traffic (zero
	// when a probe was sent since).
	LastSkip   time.Time
	LastLiveOK time.Time
}
