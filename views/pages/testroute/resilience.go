package testroute

import "time"

// Resilience is a tier's retry budget and the group's degradation ladder
// as Test route shows them.
type Resilience struct {
	Group, Tier string

	BudgetOff  bool
	BudgetRule string // the rule in words
	// Firsts, Retries and Allowance are the shared window now.
	Firsts, Retries, Allowance int64
	BudgetLocal                bool   // counted on this instance only (Redis unreachable)
	BudgetProblem              string // the budget could not be read

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
