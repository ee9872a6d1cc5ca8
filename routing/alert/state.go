package alert

import (
	"sort"
	"strconv"
	"time"
)

// Status is where one alert stands.
type Status string

// Statuses. A resolved alert leaves the state table; its resolution is a
// notice.
const (
	// StatusPending: the condition holds, not yet for the rule's For.
	StatusPending Status = "pending"
	// StatusFiring: the condition has held for For; a firing notice went out.
	StatusFiring Status = "firing"
)

// State is one rule × subject whose condition holds.
type State struct {
	RuleID  int64
	Subject Subject
	Status  Status
	// Since is when the condition was first found; FiredAt when it fired.
	Since   time.Time
	FiredAt time.Time
	// Value is the latest value found.
	Value float64
}

// Event is what a notice says happened.
type Event string

// Events.
const (
	EventFiring   Event = "firing"
	EventResolved Event = "resolved"
)

// Notice is one message to send: an alert fired or resolved.
type Notice struct {
	Rule    Rule
	Subject Subject
	Event   Event
	Value   float64
	// FiredAt is when the alert fired; At when this event happened.
	FiredAt time.Time
	At      time.Time
}

// DedupKey names one notice for good: the same alert firing (or resolving)
// is one key however often the evaluator runs, restarts or changes hands,
// so a notice is stored and delivered once.
func (n Notice) DedupKey() string {
	return strconv.FormatInt(n.Rule.ID, 10) + "|" + n.Subject.Key() + "|" + strconv.FormatInt(n.FiredAt.UnixMilli(), 10) + "|" + string(n.Event)
}

// Step is one evaluation of rule: prev are its states from the last pass,
// found what holds now. It returns the rule's states for the next pass
// and the notices to send: a finding held for the rule's For fires once,
// a firing alert whose finding is gone resolves once, and a pending one
// whose finding is gone is forgotten without a word. A disabled rule keeps
// no state and sends nothing.
func Step(rule Rule, prev []State, found []Finding, now time.Time) (next []State, notices []Notice) {
	if !rule.Enabled {
		return nil, nil
	}
	was := make(map[string]State, len(prev))
	for _, s := range prev {
		was[s.Subject.Key()] = s
	}
	seen := make(map[string]bool, len(found))
	for _, f := range found {
		k := f.Subject.Key()
		if seen[k] {
			continue
		}
		seen[k] = true
		s, ok := was[k]
		if !ok {
			s = State{RuleID: rule.ID, Subject: f.Subject, Status: StatusPending, Since: now}
		}
		s.Value = f.Value
		if s.Status == StatusPending && now.Sub(s.Since) >= rule.For {
			s.Status, s.FiredAt = StatusFiring, now
			notices = append(notices, Notice{Rule: rule, Subject: s.Subject, Event: EventFiring, Value: s.Value, FiredAt: now, At: now})
		}
		next = append(next, s)
	}
	for _, s := range prev {
		if seen[s.Subject.Key()] || s.Status != StatusFiring {
			continue
		}
		notices = append(notices, Notice{Rule: rule, Subject: s.Subject, Event: EventResolved, Value: s.Value, FiredAt: s.FiredAt, At: now})
	}
	sort.Slice(next, func(i, j int) bool { return next[i].Subject.Key() < next[j].Subject.Key() })
	return next, notices
}
