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
}
