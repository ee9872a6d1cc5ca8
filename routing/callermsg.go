package routing

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/reason"
)

// ToldCode is what kind of thing a caller is told about a request that was
// not served.
type ToldCode string

// What a caller can be told. The parameters each code uses are noted beside it.
const (
	// ToldUpstreamFailed: the vendors failed for reasons that are ours to
	// fix (auth, billing, rate limits on our keys, server errors, timeouts,
	// network, unknown). Class, Model, Tier, Steps, MidStream.
	ToldUpstreamFailed ToldCode = "upstream_failed"
	// ToldVendorRefused: the vendor refused the request itself (bad
	// request, e.g. a context-length overflow). Vendor, MidStream.
	ToldVendorRefused ToldCode = "vendor_refused"
	// ToldContentFiltered: the vendor's content filter. Vendor, MidStream.
	ToldContentFiltered ToldCode = "content_filtered"
	// ToldNoModel: nothing in the chain could be tried. Model, Tier,
	// Group, Steps.
	ToldNoModel ToldCode = "no_model"
	// ToldBudgetSpent: the request's time budget ran out. Attempts, Model,
	// Tier, Steps.
	ToldBudgetSpent ToldCode = "budget_spent"
	// ToldCancelled: the caller went away (nobody reads it).
	ToldCancelled ToldCode = "client_cancelled"
	// ToldUnsupportedParameter: no deployment's protocol can carry a field
	// the request set. Param, Model, Tier, Steps.
	ToldUnsupportedParameter ToldCode = "unsupported_parameter"
	// ToldQueueRefused: the request's class queue was full, or it was shed
	// for an interactive request. Queue, QueueBound, Shed, Model, Tier,
	// Steps (empty at the instance gate).
	ToldQueueRefused ToldCode = "queue_refused"
)

// Told is what a caller is told about a request that was not served (or a
// stream that broke): a code and its parameters, turned into words once, by
// Text. The vendor's own words are carried only for failures the caller
// caused (bad request, content filter), and Text scrubs them; every other
// failure is told in our words. The full vendor text stays in the attempt
// trail (call log and console), never here.
type Told struct {
	Code  ToldCode
	Class adapter.Class
	// Model is the logic model: the one asked for, else the one the last
	// failure was on.
	Model string
	// Tier is the tier asked for ("" for an explicit logic model).
	Tier string
	// Group is the route group, named when a tier has no candidates.
	Group string
	// Vendor is the vendor's message (scrubbed when rendered).
	Vendor string
	// Attempts counts the calls made (ToldBudgetSpent).
	Attempts int
	// MidStream is set when the answer had started streaming.
	MidStream bool
	// Steps is what the chain did, in our words.
	Steps []ToldStep
	// Param is the request field no deployment can carry
	// (ToldUnsupportedParameter).
	Param string
	// Budget is the retry budget that stopped the request after a failed
	// attempt (reason.RetryBudgetExhausted); Group names its route group.
	Budget *reason.Reason
	// Dimension is our own finding that ended the request: an embedding of
	// the wrong size (the caller may have asked for dimensions the model
	// does not support).
	Dimension *DimensionMismatch
	// Queue is the priority class whose queue the request waited in or was
	// refused by; Queued how long it waited (ToldBudgetSpent); QueueBound
	// the full queue's bound and Shed whether it was shed
	// (ToldQueueRefused).
	Queue      string
	Queued     time.Duration
	QueueBound int
	Shed       bool
}

// DimensionMismatch is an embedding deployment that returned a vector of
// the wrong size.
type DimensionMismatch struct {
	Deployment string // the deployment's label
	Model      string // the logic model
	Got, Want  int    // dimensions
	Input      int    // index of the input
}

func (d *DimensionMismatch) Error() string {
	return fmt.Sprintf("deployment %s returned a %d-dimensional vector for input %d; logic model %s expects %d", d.Deployment, d.Got, d.Input, d.Model, d.Want)
}

// ToldStep is one step of the chain as the caller is told it: a skip with
// its typed reason, or a failed attempt with its class and HTTP status
// (never the vendor's words, never a key).
type ToldStep struct {
	Model      string // logic model code
	Provider   string
	Deployment string // the upstream model
	Skip       *reason.Reason
	Class      adapter.Class
	Status     int
	Keys       int // failed attempts with different keys, merged (>= 1)
}

// Text renders t for the caller; requestID, when set, is named so the
// caller can quote it to an operator, who finds the vendor's details in
// the call log.
func (t Told) Text(requestID string) string {
	var b strings.Builder
	t.headline(&b)
	if requestID != "" {
		b.WriteString(" (request id ")
		b.WriteString(requestID)
		b.WriteString(")")
	}
	if t.Dimension != nil && t.Code == ToldUpstreamFailed {
		b.WriteString("; ")
		b.WriteString(t.Dimension.Error())
	}
	t.budgetWords(&b)
	switch t.Code {
	case ToldNoModel, ToldBudgetSpent, ToldUpstreamFailed, ToldUnsupportedParameter, ToldQueueRefused:
		if s := t.chain(); s != "" {
			b.WriteString("; ")
			b.WriteString(s)
		}
	}
	return b.String()
}

// headline says what happened, by the told code.
func (t Told) headline(b *strings.Builder) {
	switch t.Code {
	case ToldVendorRefused:
		b.WriteString("the vendor refused the request")
		if t.MidStream {
			b.WriteString(" after the answer started")
		}
		t.vendor(b)
	case ToldContentFiltered:
		if t.MidStream {
			b.WriteString("the vendor's content filter stopped the answer")
		} else {
			b.WriteString("the vendor's content filter blocked this request")
		}
		t.vendor(b)
	case ToldNoModel:
		b.WriteString("no model is available for ")
		b.WriteString(t.target())
	case ToldBudgetSpent:
		b.WriteString("the request's time budget ran out after ")
		b.WriteString(strconv.Itoa(t.Attempts))
		b.WriteString(" attempt(s) for ")
		b.WriteString(t.target())
		if t.Queue != "" {
			b.WriteString(", after waiting ")
			b.WriteString(t.Queued.Round(time.Millisecond).String())
			b.WriteString(" in the ")
			b.WriteString(t.Queue)
			b.WriteString(" queue for a deployment at capacity")
		}
	case ToldQueueRefused:
		t.queueWords(b)
	case ToldCancelled:
		b.WriteString("the client went away")
	case ToldUnsupportedParameter:
		b.WriteString("parameter ")
		b.WriteString(t.Param)
		b.WriteString(" is not supported by any deployment that could serve ")
		b.WriteString(t.target())
		b.WriteString(` (see "Request fields" in the gateway's manual, /manual/fields.md)`)
	default: // ToldUpstreamFailed, and anything unknown: our words only
		b.WriteString("the upstream for ")
		b.WriteString(t.target())
		b.WriteString(" failed")
		if t.MidStream {
			b.WriteString(" after the answer started")
		}
		b.WriteString(": ")
		b.WriteString(UpstreamCode(t.Class))
	}
}

// queueWords says which queue refused the request and why.
func (t Told) queueWords(b *strings.Builder) {
	if t.Shed {
		b.WriteString("this ")
		b.WriteString(t.Queue)
		b.WriteString(" request was shed from its queue to make room for an interactive request")
	} else {
		b.WriteString("the ")
		b.WriteString(t.Queue)
		b.WriteString(" queue of this gateway instance is full (")
		b.WriteString(strconv.Itoa(t.QueueBound))
		b.WriteString(" waiting)")
	}
	if len(t.Steps) > 0 {
		b.WriteString(": every deployment for ")
		b.WriteString(t.target())
		b.WriteString(" is at capacity")
	} else {
		b.WriteString(": the instance is at its in-flight cap")
	}
	b.WriteString("; retry shortly")
}

// budgetWords says which retry budget stopped the request, if one did.
func (t Told) budgetWords(b *strings.Builder) {
	r := t.Budget
	if r == nil {
		return
	}
	b.WriteString("; the retry budget of route group ")
	b.WriteString(t.Group)
	b.WriteString(", tier ")
	b.WriteString(r.Tier)
	b.WriteString(" is spent (")
	b.WriteString(strconv.Itoa(r.Percent))
	b.WriteString("% of first attempts, at least ")
	b.WriteString(strconv.Itoa(r.PerSecond))
	b.WriteString("/s, over ")
	b.WriteString((time.Duration(r.WindowMS) * time.Millisecond).String())
	b.WriteString("), so the next step was not tried: retry_budget_exhausted")
}

// UpstreamCode names an upstream failure class for the caller:
// upstream_auth, upstream_billing, upstream_rate_limited, upstream_server,
// upstream_timeout, upstream_network, else upstream_unknown.
func UpstreamCode(c adapter.Class) string {
	switch c {
	case adapter.ClassAuth, adapter.ClassBilling, adapter.ClassRateLimited, adapter.ClassServer,
		adapter.ClassTimeout, adapter.ClassNetwork, adapter.ClassContentFilter, adapter.ClassBadRequest:
		return "upstream_" + string(c)
	}
	return "upstream_unknown"
}

func (t Told) vendor(b *strings.Builder) {
	if v := strings.TrimSpace(adapter.Scrub(t.Vendor)); v != "" {
		b.WriteString(": ")
		b.WriteString(v)
	}
}

// target is "logic model X", "logic model X on tier T" or "tier T".
func (t Told) target() string {
	switch {
	case t.Model != "" && t.Tier != "":
		return "logic model " + t.Model + " on tier " + t.Tier
	case t.Model != "":
		return "logic model " + t.Model
	case t.Tier != "":
		return "tier " + t.Tier
	}
	return "this request"
}

// chain lists the steps in order, or says why there were none.
func (t Told) chain() string {
	if len(t.Steps) == 0 {
		if t.Code != ToldNoModel {
			return ""
		}
		if t.Group != "" && t.Tier != "" {
			return "tier " + t.Tier + " of route group " + t.Group + " has no candidates"
		}
		return "nothing in the chain"
	}
	parts := make([]string, 0, len(t.Steps))
	for _, s := range t.Steps {
		what := s.Model
		if s.Provider != "" || s.Deployment != "" {
			what += " on " + s.Provider
			if s.Deployment != "" {
				what += "/" + s.Deployment
			}
		}
		if s.Skip != nil {
			parts = append(parts, what+": skipped, "+callerSkip(*s.Skip))
			continue
		}
		p := what + ": " + string(s.Class)
		if s.Status != 0 {
			p += " (HTTP " + strconv.Itoa(s.Status) + ")"
		}
		if s.Keys > 1 {
			p += " with " + strconv.Itoa(s.Keys) + " keys"
		}
		parts = append(parts, p)
	}
	return "the chain: " + strings.Join(parts, "; ")
}

// callerSkip is a skip reason in the caller's words: the reason's own
// words, without text from outside the router (a load counter's error).
func callerSkip(r reason.Reason) string {
	switch r.Code {
	case reason.LoadUnavailable:
		return "load counter unavailable"
	case reason.Legacy:
		return adapter.Scrub(r.Detail)
	}
	return r.String()
}

// toldFailure is what the caller is told when ue ended the request: the
// vendor's message for a failure the caller caused, our words otherwise.
func toldFailure(ue *adapter.Error, p *Plan, tr *Trail) Told {
	switch ue.Class {
	case adapter.ClassBadRequest:
		return Told{Code: ToldVendorRefused, Class: ue.Class, Vendor: ue.Message}
	case adapter.ClassContentFilter:
		return Told{Code: ToldContentFiltered, Class: ue.Class, Vendor: ue.Message}
	}
	t := Told{Code: ToldUpstreamFailed, Class: ue.Class, Steps: toldSteps(tr)}
	t.Model, t.Tier = toldTarget(p)
	errors.As(ue, &t.Dimension)
	if t.Model == "" {
		// A tier: name the logic model the last failure was on.
		for i := len(tr.Attempts) - 1; i >= 0; i-- {
			if tr.Attempts[i].Outcome == AttemptFailed {
				t.Model = tr.Attempts[i].Model
				break
			}
		}
	}
	return t
}

// toldMidStream is what the caller is told when a stream broke after its
// first content chunk, on a deployment of logic model model.
func toldMidStream(err error, model string) Told {
	class := adapter.ClassOf(err)
	vendor := ""
	var ue *adapter.Error
	if errors.As(err, &ue) {
		vendor = ue.Message
	}
	switch class {
	case adapter.ClassBadRequest:
		return Told{Code: ToldVendorRefused, Class: class, Vendor: vendor, MidStream: true}
	case adapter.ClassContentFilter:
		return Told{Code: ToldContentFiltered, Class: class, Vendor: vendor, MidStream: true}
	}
	return Told{Code: ToldUpstreamFailed, Class: class, Model: model, MidStream: true}
}

// toldTarget is the logic model (explicit) or the tier asked for.
func toldTarget(p *Plan) (model, tier string) {
	if p.Target.Explicit != nil {
		return p.Target.Explicit.Code, ""
	}
	return "", string(p.Target.Tier)
}

// toldSteps turns the trail into the caller's steps: skips, then attempts,
// failed attempts of one deployment with the same class and status merged
// (one per key tried).
func toldSteps(tr *Trail) []ToldStep {
	var steps []ToldStep
	for _, s := range tr.Skips {
		r := s.Reason
		prov, dep, _ := strings.Cut(s.Deployment, "/")
		steps = append(steps, ToldStep{Model: s.Model, Provider: prov, Deployment: dep, Skip: &r})
	}
	for _, a := range tr.Attempts {
		st := ToldStep{Model: a.Model, Provider: a.Provider, Deployment: upstreamOf(a.Deployment)}
		switch a.Outcome {
		case AttemptSkipped:
			r := reason.Reason{Code: reason.Legacy, Detail: a.Reason}
			if a.Skip != nil {
				r = *a.Skip
			}
			st.Skip = &r
		case AttemptFailed:
			st.Class, st.Status, st.Keys = a.Class, a.Status, 1
			if n := len(steps); n > 0 {
				if last := &steps[n-1]; last.Skip == nil && last.Model == st.Model && last.Provider == st.Provider &&
					last.Deployment == st.Deployment && last.Class == st.Class && last.Status == st.Status {
					last.Keys++
					continue
				}
			}
		default:
			continue
		}
		steps = append(steps, st)
	}
	return steps
}

// upstreamOf is the upstream model of a deployment label
// ("main on pa (m-a)" → "m-a").
func upstreamOf(label string) string {
	if i := strings.LastIndex(label, " ("); i >= 0 && strings.HasSuffix(label, ")") {
		return label[i+2 : len(label)-1]
	}
	return label
}
