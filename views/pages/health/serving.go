package health

import (
	"strconv"
	"strings"
	"time"

	"switchyard/routing/reason"
	"switchyard/views/components"
)

// servingBadge is the Serving column's badge: its kind and word, from the
// first block (the most fundamental), or "serving".
func servingBadge(r Row) (kind, word string) {
	if len(r.Blocks) == 0 {
		if r.Evaluated && r.State == "degraded" {
			return "warn", "serving, degraded"
		}
		return "ok", "serving"
	}
	switch r.Blocks[0].Code {
	case reason.DisabledByOperator:
		return "bad", "disabled"
	case reason.Parked:
		return "warn", "parked"
	case reason.ProviderDisabled:
		return "bad", "provider disabled"
	case reason.NoActiveKey, reason.NoKeys, reason.KeysQuarantined:
		return "bad", "no usable key"
	case reason.KeysCooling:
		return "warn", "keys cooling"
	case reason.BreakerOpen:
		return "bad", "breaker open"
	case reason.Unhealthy:
		return "bad", "unhealthy"
	}
	return "bad", "not serving"
}

// servingAttr is the row's data-serving: yes, parked or no.
func servingAttr(r Row) string {
	switch {
	case r.Serving():
		return "yes"
	case r.Blocks[0].Code == reason.Parked:
		return "parked"
	}
	return "no"
}

// Why is one reason a deployment cannot serve, in words, with the place
// that fixes it (Href "" when it passes by itself).
type Why struct {
	Code       string
	Text       string
	Href, Link string
}

// whys words every block of r.
func whys(r Row, rules Rules) []Why {
	out := make([]Why, 0, len(r.Blocks))
	models := "/logic-models#model-" + components.I64(r.ModelID)
	for _, b := range r.Blocks {
		w := Why{Code: string(b.Code)}
		switch b.Code {
		case reason.DisabledByOperator:
			w.Text = "Disabled by an operator: it gets no traffic and is not probed."
			w.Href, w.Link = models, "Enable it on Logic models"
		case reason.Parked:
			w.Text = "Parked: it gets no traffic (it is still probed)."
			w.Href, w.Link = models, "Unpark it on Logic models"
		case reason.ProviderDisabled:
			w.Text = "Its provider " + b.Provider + " is disabled."
			// Providers, not its Edit form: every role may follow the link
			// (the role table), and an admin finds Edit there.
			w.Href, w.Link = "/providers#pool-"+components.I64(r.ProviderID), "Enable the provider on Providers"
		case reason.NoActiveKey, reason.NoKeys:
			w.Text = "Its provider " + r.Provider + " has no active key."
			w.Href, w.Link = "/providers", "Add or enable a key on Providers"
		case reason.KeysQuarantined:
			w.Text = keysWords(r.Keys, "quarantined")
			w.Href, w.Link = "/providers", "Re-enable the key on Providers once the vendor accepts it"
		case reason.KeysCooling:
			w.Text = keysWords(r.Keys, "cooling")
		case reason.BreakerOpen:
			w.Text = "Its circuit breaker is open on " + strconv.Itoa(r.BreakerOpenOn) + " of " + strconv.Itoa(r.Instances) +
				" instance(s): recent calls failed too often. It half-opens by itself and closes when calls succeed again."
		case reason.Unhealthy:
			w.Text = "Down by health score: " + Pct(r.Score) + " over the last " + Dur(rules.Window) + " (" + components.I64(r.Samples) +
				" samples) is below " + Pct(rules.DownBelow) + ". It comes back after " + strconv.Itoa(rules.RecoverProbes) + " successful probes in a row."
		default:
			w.Text = "Not serving: " + strings.TrimPrefix(components.SkipWords(b), "skipped: ") + "."
		}
		out = append(out, w)
	}
	return out
}

// keysWords says why no key of the pool is usable: "Its only key … is
// quarantined: refused as unauthorised (HTTP 401)." or every key in turn.
func keysWords(keys []KeyBlock, status string) string {
	if len(keys) == 0 {
		if status == "cooling" {
			return "Every key of its provider is cooling after the vendor's 429."
		}
		return "Every key of its provider is quarantined."
	}
	each := make([]string, len(keys))
	for i, k := range keys {
		sep := " "
		if len(keys) == 1 {
			sep = ", " // "Its only key, main (…ab12), is …"
		}
		s := keyName(k) + sep
		switch {
		case k.Status == "cooling" && !k.Until.IsZero():
			s += "is cooling after the vendor's 429 until " + k.Until.UTC().Format("15:04:05") + " UTC"
		case k.Status == "cooling":
			s += "is cooling after the vendor's 429"
		default:
			s += "is quarantined"
			if why := components.KeyStateWords(k.Status, k.Fault, k.Legacy); why != "" {
				s += ": " + strings.TrimRight(strings.TrimSpace(why), ".")
			}
		}
		each[i] = s
	}
	if len(keys) == 1 {
		return "Its only key, " + each[0] + "."
	}
	return "None of its " + strconv.Itoa(len(keys)) + " keys is usable: " + strings.Join(each, "; ") + "."
}

func keyName(k KeyBlock) string {
	if k.Label != "" {
		return k.Label + " (" + k.Fingerprint + ")"
	}
	return k.Fingerprint
}

// scoreState is the health state to show beside the score: the score's
// verdict for a deployment that serves or is down by score, nothing for one
// blocked by something else (a disabled deployment never reads "healthy").
func scoreState(r Row) string {
	if !r.Evaluated {
		return ""
	}
	if r.Serving() || r.Has(reason.Unhealthy) {
		return r.State
	}
	return ""
}

// Summary counts the rows by what they can do now.
type Summary struct {
	Serving, Parked, Blocked int
}

func summarize(rows []Row) Summary {
	var s Summary
	for _, r := range rows {
		switch servingAttr(r) {
		case "yes":
			s.Serving++
		case "parked":
			s.Parked++
		default:
			s.Blocked++
		}
	}
	return s
}

// Dur is a window or interval in words: "5 min", "90 s", "2 h".
func Dur(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + " h"
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + " min"
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
	}
	return d.String()
}

// probeTotalWords is the 24 h probe cost said plainly: no probes sent, no
// cost reported, or the figure per currency.
func probeTotalWords(t Totals) string {
	switch {
	case t.Sent == 0:
		return "no probes sent"
	case len(t.Micros) == 0:
		return "no cost reported"
	}
	return components.MoneyByCurrency(t.Micros)
}
