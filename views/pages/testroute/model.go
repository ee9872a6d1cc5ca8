// Package testroute renders the Test route page: a caller + model name (a
// tier, a logic model, or a name the group's aliases map) + flags resolved
// and planned exactly like the data plane,
// with the live state of every step, the limit check the caller would meet,
// and the result of a real test request.
package testroute

import (
	"net/url"
	"strconv"
	"time"

	"switchyard/views/components"

	"switchyard/views/layout"
	"switchyard/views/pages/calllogs"
)

// Form is what the operator chose.
type Form struct {
	CallerID  int64
	Model     string // a tier, a logic model code or any name a client sends
	Stream    bool
	Thinking  bool
	Vision    bool
	Tools     bool
	Embedding bool
	Message   string
	// Door is the front door the request comes through (DoorChat,
	// DoorMessages or DoorResponses); Body, when set, is a whole request body in that
	// door's shape, explained instead of one made from the flags.
	Door string
	Body string
	// Draft explains the draft instead of the live version (compiled
	// without secrets: no vendor is called). A real test request always
	// goes to the live version.
	Draft bool
}

// Front doors Test route can explain.
const (
	DoorChat     = "chat_completions"
	DoorMessages = "messages"
	// DoorResponses is OpenAI's Responses API (POST /v1/responses).
	DoorResponses = "responses"
)

// Doors are the front-door choices.
var Doors = []Option{
	{Value: DoorChat, Label: "Chat completions (POST /v1/chat/completions)"},
	{Value: DoorMessages, Label: "Anthropic Messages (POST /v1/messages)"},
	{Value: DoorResponses, Label: "OpenAI Responses (POST /v1/responses)"},
}

// Query encodes the form as the Explain URL's parameters.
func (f Form) Query() url.Values {
	v := url.Values{}
	if f.CallerID != 0 {
		v.Set("caller", strconv.FormatInt(f.CallerID, 10))
	}
	if f.Model != "" {
		v.Set("model", f.Model)
	}
	for _, k := range f.Flags() {
		v.Set(k, "on")
	}
	if f.Door != "" && f.Door != DoorChat {
		v.Set("door", f.Door)
	}
	if f.Body != "" {
		v.Set("body", f.Body)
	}
	if f.Draft {
		v.Set("version", VersionDraft)
	}
	return v
}

// The version choices: what Explain route reads.
const (
	VersionLive  = "live"
	VersionDraft = "draft"
)

// Flags lists the flags that are on, in a fixed order.
func (f Form) Flags() []string {
	var out []string
	for _, x := range []struct {
		name string
		on   bool
	}{{"stream", f.Stream}, {"thinking", f.Thinking}, {"vision", f.Vision}, {"tools", f.Tools}, {"embedding", f.Embedding}} {
		if x.on {
			out = append(out, x.name)
		}
	}
	return out
}

// DefaultMessage is the test request's user message unless one is typed.
const DefaultMessage = "Say hello in five words."

func messageOr(m string) string {
	if m == "" {
		return DefaultMessage
	}
	return m
}

// Option is a caller or model choice.
type Option struct {
	Value, Label string
}

// Page is the Test route page.
type Page struct {
	Page layout.Page
	// Problem says why nothing can be explained here (no data plane on
	// this instance, nothing published); empty when the page works.
	Problem string
	Callers []Option
	Tiers   []string
	Models  []Option
	Form    Form
	Explain *Explain
	Send    *SendResult
}

// Explain is the resolved route and the limit check (the htmx fragment of
// "Explain route").
type Explain struct {
	Form Form
	// Problem says why there is no plan (caller not live, model unknown);
	// the rest is then empty.
	Problem string
	Version int64

	Caller        string
	CallerEnabled bool
	PriorityClass string
	Group         string
	Tenant        string
	Target        string // what was resolved: tier or logic model
	Explicit      bool
	Forced        bool // a reasoning request moved to deep
	Tier          string
	Timeout       time.Duration
	FirstChunk    time.Duration

	// Alias is the pattern of the group's model alias the model field
	// resolved through ("" when none); AliasTier or AliasModel what it
	// names (before a reasoning request's move to deep).
	Alias      string
	AliasTier  string
	AliasModel string

	Steps []PlanStep
	Skips []SkipView
	// StateNote says which live state could not be read.
	StateNote string
	// Pool describes the dedicated/shared pool and the fallback policy.
	Pool string

	Limits Limits
	// Resilience is the tier's retry budget and the group's ladder.
	Resilience Resilience

	CanSend bool
	CSRF    string
}

// Servable reports whether a real request could be tried on a vendor: the
// caller is enabled and the chain holds a step.
func (x *Explain) Servable() bool { return x.CallerEnabled && len(x.Steps) > 0 }

// Overall is the one verdict of an explanation: whether a real request
// would reach a vendor, and if not the answer it would get. ok is false
// when it would not.
func (x *Explain) Overall() (ok bool, words string) {
	switch {
	case !x.CallerEnabled:
		return false, "A real request would be refused with 403 caller_disabled before routing."
	case len(x.Steps) == 0:
		return false, "A real request would get 503 no_available_model: nothing in the chain can serve it — the skip reasons below say why."
	case x.Limits.Unavailable == "" && !x.Limits.Allowed:
		return false, "A real request " + x.Limits.Verdict
	}
	s := x.Steps[0]
	return true, "A real request would be tried first on " + s.Model + " (" + s.Provider + " " + s.UpstreamModel + ")."
}

// VersionWords names what was explained: "live version 7" or "the draft".
func (x *Explain) VersionWords() string {
	if x.Form.Draft {
		return "the draft (not published)"
	}
	return "live version " + strconv.FormatInt(x.Version, 10)
}

// PlanStep is one deployment of the chain with its live state.
type PlanStep struct {
	N             int
	Model         string
	DeploymentID  int64
	Deployment    string
	Provider      string
	UpstreamModel string
	Weight        int
	Fallback      bool
	Breakers      []BreakerView
	KeysUsable    int
	KeysCooling   int
	KeysQuar      int
	KeyNotes      []string
	Load          int64
	MaxConc       int
	// Warning predicts a run-time skip in words ("" when it would be tried).
	Warning string
	// Wire says how a front door's request reaches this deployment:
	// "native" (passed through in the door's own shape), "translated", or
	// "" for chat completions to an OpenAI-protocol deployment.
	Wire string
	// Dropped lists the request's fields this deployment would not get
	// (the field policy's drops).
	Dropped []string
}

// BreakerView is one instance's breaker for a deployment.
type BreakerView struct {
	Instance string
	State    string // closed | open | half_open
	Note     string
}

// Kind is the badge kind of the breaker state.
func (b BreakerView) Kind() string { return components.BreakerKind(b.State) }

// SkipView is a plan skip in plain words.
type SkipView struct {
	Model      string
	Deployment string
	Reason     string // the skip code, for tests and styling
	Words      string
	Fallback   bool
}

// Limits is the limit check the caller would meet now.
type Limits struct {
	// Unavailable says why the check could not run.
	Unavailable string
	Allowed     bool
	Verdict     string // "would be admitted" or "would be rejected: …"
	Local       bool   // decided by the per-instance fallback (Redis down)

	RPM, RPMRemaining int64
	RPMReset          time.Duration
	TPM, TPMRemaining int64
	DailyQuota        int64
	DailyUsed         int64
	Budget            string // "" when unlimited
	BudgetSpent       string
}

// SendResult is the outcome of "Send test request".
type SendResult struct {
	Status    int
	RequestID string
	Answer    string
	Error     string // the error object, pretty-printed
	Tier      string
	Model     string
	Provider  string
	Steps     []calllogs.Step
	// Degraded is the rung of the degradation ladder that answered ("" none)
	// and DegradedWords why.
	Degraded      string
	DegradedWords []string
	// Problem says why nothing was sent.
	Problem string
}

// OK reports a 2xx answer.
func (s SendResult) OK() bool { return s.Status >= 200 && s.Status < 300 }

func dur(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return d.Round(time.Millisecond).String()
}
