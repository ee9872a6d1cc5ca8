package config

import (
	"fmt"
	"strings"
)

// Ack names what an operator accepts to lose by publishing anyway: a tier
// of a route group, or a logic model that callers bound to the group ask
// for by name. Its text form is "group/tier" or "group/logic-model" (a
// logic model code can be neither a tier nor contain "/"), e.g.
// "default/deep": "publish anyway: deep will answer 503".
//
// In JSON an Ack is its text form, so the admin API's dry-run answer names
// in each finding's "ack" exactly what a publish's "acknowledge" list takes.
type Ack struct {
	RouteGroup string
	Tier       TierName
	LogicModel string
}

// MarshalText is the text form.
func (a Ack) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText parses the text form.
func (a *Ack) UnmarshalText(b []byte) error {
	v, err := ParseAck(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// String is the ack's text form, what an operator types to give it.
func (a Ack) String() string {
	if a.LogicModel != "" {
		return a.RouteGroup + "/" + a.LogicModel
	}
	return a.RouteGroup + "/" + string(a.Tier)
}

// Target is the tier or the logic model the ack is about.
func (a Ack) Target() string {
	if a.LogicModel != "" {
		return a.LogicModel
	}
	return string(a.Tier)
}

// ParseAck reads an ack's text form.
func ParseAck(s string) (Ack, error) {
	s = strings.TrimSpace(s)
	g, t, ok := strings.Cut(s, "/")
	if !ok || g == "" || t == "" || strings.Contains(t, "/") {
		return Ack{}, fmt.Errorf("acknowledgement %q must be route-group/tier (e.g. default/deep) or route-group/logic-model", s)
	}
	if ValidTier(t) {
		return Ack{RouteGroup: g, Tier: TierName(t)}, nil
	}
	return Ack{RouteGroup: g, LogicModel: t}, nil
}

// ParseAcks reads a list of acks; the error is a field error on
// "acknowledge" naming the first bad one.
func ParseAcks(list []string) ([]Ack, error) {
	var out []Ack
	for _, s := range list {
		if strings.TrimSpace(s) == "" {
			continue
		}
		a, err := ParseAck(s)
		if err != nil {
			return nil, (FieldErrors{"acknowledge": err.Error()}).Err()
		}
		out = append(out, a)
	}
	return out, nil
}

// Acknowledgement is one acknowledged finding, recorded on the version
// published with it.
type Acknowledgement struct {
	Ack     Ack      `json:"ack"`
	Check   string   `json:"check"`
	Callers []string `json:"callers,omitempty"`
	Message string   `json:"message"`
	// CarriedFrom, when set, is the version the operator gave this
	// acknowledgement on, By its author: a later publish carried it over
	// because the same finding still stood and nobody typed it again.
	CarriedFrom int64  `json:"carried_from,omitempty"`
	By          string `json:"by,omitempty"`
}

// Standing is an acknowledgement still in force on a published version:
// what a later publish need not ask again while the same finding (the same
// Ack) stands. Version and Author say where the operator gave it.
type Standing struct {
	Acknowledgement
	Version int64
	Author  string
}

// StandingAcks lists the acknowledgements recorded on version number,
// published by author: each keeps the version and author it was first given
// on (a carried one names an older version), the others were given there.
func StandingAcks(acks []Acknowledgement, number int64, author string) []Standing {
	out := make([]Standing, 0, len(acks))
	for _, a := range acks {
		s := Standing{Acknowledgement: a, Version: number, Author: author}
		if a.CarriedFrom != 0 {
			s.Version, s.Author = a.CarriedFrom, a.By
		}
		out = append(out, s)
	}
	return out
}

// FindStanding returns the standing acknowledgement of a, if any.
func FindStanding(standing []Standing, a Ack) (Standing, bool) {
	for _, s := range standing {
		if s.Ack == a {
			return s, true
		}
	}
	return Standing{}, false
}
