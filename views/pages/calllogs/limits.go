package calllogs

import (
	"math"
	"strconv"
	"strings"
	"time"

	"switchyard/routing/limit"
	"switchyard/routing/record"
	"switchyard/views/components"
)

// The words of a refusal's limit. The call log stores the limit as a code
// (routing/limit.Kind) with its value and reset; these turn them into the
// few words of the list and the sentence of the detail. A kind this build
// does not know is shown by its code, with its value.

// LimitShort is the list's label of the limit, e.g. "rpm 2",
// "deployment cap 4"; "" when no limit refused the call.
func LimitShort(r record.Call) string {
	if r.LimitKind == limit.KindNone {
		return ""
	}
	v := ""
	if r.LimitValue != nil {
		v = " " + limitValue(r.LimitKind, *r.LimitValue, r.Currency)
	}
	switch r.LimitKind {
	case limit.KindInstance:
		return "instance cap" + v
	case limit.KindDeploymentCap:
		return "deployment cap" + v
	case limit.KindDaily:
		return "daily tokens" + v
	case limit.KindBudget:
		return "monthly budget" + v
	case limit.KindQueueFull:
		return "queue full" + v
	case limit.KindQueueShed:
		return "shed from queue"
	case limit.KindCountTokens:
		return "count_tokens rpm" + v
	case limit.KindBodyBytes:
		return "body bytes in flight" + v
	}
	return string(r.LimitKind) + v
}

// queueName is "the normal queue" (the caller's class), or "its queue" on
// a row without a class.
func queueName(r record.Call) string {
	if r.PriorityClass == "" {
		return "its priority class's queue"
	}
	return "the " + string(r.PriorityClass) + " queue"
}

// LimitWords names the limit in a phrase, e.g. "the rate limit of 2
// requests per minute".
func LimitWords(r record.Call) string {
	var v int64
	known := r.LimitValue != nil
	if known {
		v = *r.LimitValue
	}
	n := func(unit string) string {
		if !known {
			return ""
		}
		return " of " + limitValue(r.LimitKind, v, r.Currency) + unit
	}
	switch r.LimitKind {
	case limit.KindNone:
		return ""
	case limit.KindRPM:
		return "the rate limit" + n(" requests per minute") + " (rpm)"
	case limit.KindTPM:
		return "the rate limit" + n(" tokens per minute") + " (tpm)"
	case limit.KindBodyBytes:
		return "the instance's bound on request-body bytes in flight" + n(" bytes") + " (SWITCHYARD_MAX_BODY_BYTES_IN_FLIGHT: other large bodies were being read)"
	case limit.KindCountTokens:
		return "count_tokens' own rate limit" + n(" requests per minute") + " (a multiple of the caller's rpm on the tier, SWITCHYARD_COUNT_TOKENS_PER_RPM)"
	case limit.KindDaily:
		return "the daily token quota" + n(" tokens")
	case limit.KindBudget:
		return "the monthly budget" + n("")
	case limit.KindInstance:
		return "the instance's in-flight cap" + n(" requests") + " (this gateway instance had no free slot, and the caller's priority class does not queue)"
	case limit.KindDeploymentCap:
		s := "the deployment cap: every deployment that could serve was at its max concurrency"
		if known {
			s += " (" + limitValue(r.LimitKind, v, r.Currency) + " slots in all, every one busy)"
		}
		return s
	case limit.KindQueueFull:
		s := queueName(r) + " of this gateway instance, full"
		if known {
			s += " at " + limitValue(r.LimitKind, v, r.Currency) + " waiting"
		}
		return s
	case limit.KindQueueShed:
		return queueName(r) + " of this gateway instance, which shed it to make room for an interactive request"
	}
	return "the limit " + string(r.LimitKind) + n("")
}

// limitValue formats a limit's configured value: money for a budget
// (micro-units), a plain number otherwise.
func limitValue(k limit.Kind, v int64, currency string) string {
	if k == limit.KindBudget {
		return components.Money(v, currency)
	}
	return groupThousands(v)
}

func groupThousands(v int64) string {
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// ResetShort is how long after the refusal the limit let a request pass,
// e.g. "38.3 s", "6 h 12 min"; "" when unknown.
func ResetShort(r record.Call) string {
	if r.LimitResetMS == nil {
		return ""
	}
	return duration(time.Duration(*r.LimitResetMS) * time.Millisecond)
}

// ResetWords says when the limit reset: "it reset 38.3 s after the
// refusal, at 12:00:38 UTC".
func ResetWords(r record.Call) string {
	d := ResetShort(r)
	if d == "" {
		return ""
	}
	at := r.At.Add(time.Duration(*r.LimitResetMS) * time.Millisecond).UTC()
	return "it lets a request pass again " + d + " after the refusal, at " + at.Format("2006-01-02 15:04:05") + " UTC"
}

func duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(math.Round(d.Seconds()*10)/10, 'f', -1, 64) + " s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min " + strconv.Itoa(int(d%time.Minute/time.Second)) + " s"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h " + strconv.Itoa(int(d%time.Hour/time.Minute)) + " min"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " days " + strconv.Itoa(int(d%(24*time.Hour)/time.Hour)) + " h"
}

// ExplainLimit explains a call a limit refused, naming the limit, its
// value and its reset; "" when no limit is recorded (rows written before
// limits were stored fall back to ExplainRejection).
func ExplainLimit(r record.Call) string {
	if r.LimitKind == limit.KindNone {
		return ""
	}
	who := "the caller"
	if r.Caller != "" {
		who = "caller " + r.Caller
	}
	on := ""
	if r.Tier != "" {
		on = " on tier " + string(r.Tier)
	}
	http := ""
	if r.HTTPStatus != 0 {
		http = " The caller got " + strconv.Itoa(r.HTTPStatus)
		if r.LimitResetMS != nil {
			http += " with Retry-After"
		}
		http += "; nothing was spent."
	}
	reset := ""
	if w := ResetWords(r); w != "" {
		reset = " " + strings.ToUpper(w[:1]) + w[1:] + "."
	}
	switch r.LimitKind {
	case limit.KindInstance:
		return "Rejected by Switchyard before any vendor call: " + LimitWords(r) + " refused " + who + on + "." + reset + http
	case limit.KindDeploymentCap:
		return "No vendor was called: " + LimitWords(r) + on + ". A slot frees as soon as a request in flight ends." + reset + http
	case limit.KindBudget:
		return "Rejected by Switchyard before any vendor call: " + who + " has spent " + LimitWords(r) + "." + reset + http
	}
	return "Rejected by Switchyard before any vendor call: " + who + " reached " + LimitWords(r) + on + "." + reset + http
}
