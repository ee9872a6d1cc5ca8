package testroute

import (
	"strconv"
	"time"
)

// Resilience is a tier's retry budget and the group's degradation ladder
// as Test route shows them.
type Resilience struct {
	Group, Tier string

	BudgetOff  bool
	BudgetRule string // the rule in words
	// Firsts, Retries and Allowance are the shared window now.
	Firsts, Retries, Allowance int64
	BudgetLocal                bool // counted on this instance only (Redis unreachable)
	// Window is the budget's window ("10s"); MinPerS its floor of
	// retries per second.
	Window        string
	MinPerS       int
	BudgetProblem string // the budget could not be read

	Ladder bool // the group opted in
	// StepDown is the tier's step-down rule in words ("" none); the SLA
	// figures are this instance's window.
	StepDown     string
	SLACalls     int64
	SLAP95       time.Duration
	SLAErrors    float64
	SteppedDown  bool
	SteppedUntil time.Time
	// Stepped says how the route was stepped down ("" when it was not).
	Stepped []string

	Cache        string // the answer cache in words ("" off)
	CacheSize    int64
	CacheProblem string
	Static       string // the static answer ("" none)
}

// BudgetLeft is how many retries the window still allows.
func (r Resilience) BudgetLeft() int64 { return max(r.Allowance-r.Retries, 0) }

// BudgetNow says the shared window's state in plain words, e.g. "In the
// last 10s: no first attempts and no retries. Up to 30 retries may be made
// now — the floor of 3 per second, as there is no traffic to take a share
// of."
func (r Resilience) BudgetNow() string {
	s := "In the last " + r.Window + ": " + count(r.Firsts, "first attempt", "first attempts") + " and " +
		count(r.Retries, "retry", "retries") + ", across every instance. "
	left := r.BudgetLeft()
	switch {
	case left == 0:
		return s + "No retry is allowed now: a request whose attempt fails gets that error (503 retry_budget_exhausted) instead of trying its next step."
	case r.Retries == 0 && r.Allowance <= int64(r.MinPerS)*windowSeconds(r.Window):
		return s + "Up to " + count(left, "retry", "retries") + " may be made now — the floor of " + strconv.Itoa(r.MinPerS) + " per second, which holds while traffic is light."
	}
	return s + "Up to " + count(left, "more retry", "more retries") + " may be made now."
}

func count(n int64, one, many string) string {
	switch n {
	case 0:
		return "no " + many
	case 1:
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

func windowSeconds(w string) int64 {
	d, err := time.ParseDuration(w)
	if err != nil || d < time.Second {
		return 1
	}
	return int64(d / time.Second)
}
