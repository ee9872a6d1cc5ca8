package components

import (
	"strconv"

	"switchyard/routing"
	"switchyard/routing/adapter"
)

// KeyStateWords says why a provider key is out of rotation: a vendor's
// refusal for a quarantined key, the Retry-After for a cooling one. legacy
// is the text of states recorded before faults were typed.
func KeyStateWords(status string, f *routing.KeyFault, legacy string) string {
	switch {
	case f != nil:
		s := "refused"
		switch f.Class {
		case adapter.ClassAuth:
			s = "refused as unauthorised"
		case adapter.ClassBilling:
			s = "refused for billing or exhausted credit"
		}
		if f.Status != 0 {
			s += " (HTTP " + strconv.Itoa(f.Status) + ")"
		}
		if f.Detail != "" {
			s += ": " + f.Detail
		}
		return s
	case legacy != "":
		return legacy
	case status == "cooling":
		return "rate limited by the vendor"
	}
	return ""
}
