package routing

import (
	"math/rand/v2"
	"sync"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/reason"
	"switchyard/routing/record"
)

// Needs are what a request requires of a deployment.
type Needs struct {
	Kind     config.Kind
	Thinking bool
	Vision   bool
	Tools    bool
	// Chat is the chat request, when there is one: a deployment whose
	// protocol refuses one of its fields is skipped (unsupported_parameter).
	Chat *adapter.ChatRequest
	// Estimate, when set, is the request's estimated tokens on a tier
	// (prompt + expected output, the limiter's estimate); Build keeps it as
	// Plan.Tokens and weighs deployments with a token cap by it.
	Estimate Estimator
}

// Estimator estimates a request's tokens on a tier.
type Estimator interface{ Estimate(tier string) int64 }

// EstimateFunc is a function as an Estimator.
type EstimateFunc func(tier string) int64

// Estimate calls f.
func (f EstimateFunc) Estimate(tier string) int64 { return f(tier) }

// Record is the needs as the call log keeps them (the impact preview
// replays them): the need bits and the chat fields set.
func (n Needs) Record() (record.Needs, uint64) {
	var r record.Needs
	if n.Kind == config.KindEmbedding {
		r |= record.NeedEmbedding
	}
	if n.Thinking {
		r |= record.NeedThinking
	}
	if n.Vision {
		r |= record.NeedVision
	}
	if n.Tools {
		r |= record.NeedTools
	}
	if n.Chat == nil {
		return r, 0
	}
	if len(n.Chat.Unknown) > 0 {
		r |= record.NeedOtherField
	}
	return r, uint64(n.Chat.Set)
}

// ReplayNeeds rebuilds the needs of a request from its call-log shape:
// what routing decides by. A field's value is not kept, so a refusal that
// depends on one (Anthropic's temperature above 1) is not replayed.
func ReplayNeeds(r record.Needs, fields uint64) Needs {
	n := Needs{Kind: config.KindChat, Thinking: r.Has(record.NeedThinking), Vision: r.Has(record.NeedVision), Tools: r.Has(record.NeedTools)}
	if r.Has(record.NeedEmbedding) {
		return Needs{Kind: config.KindEmbedding}
	}
	if fields != 0 || r.Has(record.NeedOtherField) {
		n.Chat = &adapter.ChatRequest{Set: adapter.FieldSet(fields)}
		if r.Has(record.NeedOtherField) {
			n.Chat.Unknown = []string{"(a field this build does not know)"}
		}
	}
	return n
}

// Step is one deployment to try, in order.
type Step struct {
	Deployment *config.RDeployment
	// Fallback marks steps that come from a dedicated group's fallback group.
	Fallback bool
}

// Skip records a candidate or deployment the plan left out, and why.
type Skip struct {
	Model        string        `json:"model"`
	DeploymentID int64         `json:"deployment_id,omitempty"`
	Deployment   string        `json:"deployment,omitempty"`
	Reason       reason.Reason `json:"reason"`
	Fallback     bool          `json:"fallback,omitempty"`
}

// Plan is a request's ordered chain of deployments. Plans are pooled:
// building one does not allocate once the pool is warm.
type Plan struct {
	Target Target
	Group  *config.RGroup
	// Tier supplies the timeouts (for an explicit model: the first tier of
	// the caller's group that lists it, else the group's standard tier).
	Tier     *config.RTier
	Steps    []Step
	Skips    []Skip
	Fallback *config.RGroup // the shared group a dedicated group may fall back to
	// Tokens is the request's estimated tokens on Tier (Needs.Estimate).
	Tokens int64

	weights [32]int
	order   [32]int
}

// A plan is held for its request's whole life, a stream's included, so a
// pooled one stays small: Skips (240 bytes each) grow only when a plan
// skips something, and a plan that grew past pooledCap is not kept.
var planPool = sync.Pool{New: func() any { return &Plan{Steps: make([]Step, 0, 8)} }}

// pooledCap bounds the Steps and Skips a pooled plan keeps.
const pooledCap = 32

// NewPlan takes a plan from the pool.
func NewPlan() *Plan { return planPool.Get().(*Plan) }

// Release returns the plan to the pool; it must not be used afterwards.
func (p *Plan) Release() {
	p.Target, p.Group, p.Tier, p.Fallback, p.Tokens = Target{}, nil, nil, nil, 0
	clear(p.Steps)
	p.Steps = p.Steps[:0]
	clear(p.Skips)
	p.Skips = p.Skips[:0]
	if cap(p.Steps) > pooledCap || cap(p.Skips) > pooledCap {
		return
	}
	planPool.Put(p)
}

// Build fills p with the chain for target. Priority decides order first;
// among candidates of one priority the order is a weighted random draw
// without replacement (canary weights), and each logic model expands into
// its deployments by a weighted draw over weight × free capacity, the rest
// kept as ordered backups. Weighted random needs no shared mutable state, so
// concurrent requests and many instances need no coordination, and over
// 10,000 requests a 90/10 split lands within a fraction of a percent.
func Build(p *Plan, caller *config.RCaller, t Target, needs Needs, st *State) {
	p.Target, p.Group = t, caller.Group
	if g := caller.Group; g.Tenant != "" && g.Fallback != nil {
		p.Fallback = g.Fallback
	}
	if t.Explicit != nil {
		p.Tier = tierListing(caller.Group, t.Explicit)
		if p.Tier == nil && p.Fallback != nil {
			p.Tier = tierListing(p.Fallback, t.Explicit)
		}
		if p.Tier == nil {
			p.Tier = caller.Group.Tier(config.TierStandard)
		}
		p.estimate(needs)
		p.addModel(t.Explicit, needs, st, false)
		return
	}
	p.Tier = caller.Group.Tier(t.Tier)
	p.estimate(needs)
	p.addTier(p.Tier, needs, st, false)
	if p.Fallback != nil {
		p.addTier(p.Fallback.Tier(t.Tier), needs, st, true)
	}
}

func (p *Plan) estimate(needs Needs) {
	if needs.Estimate != nil && p.Tier != nil {
		p.Tokens = needs.Estimate.Estimate(string(p.Tier.Name))
	}
}

func tierListing(g *config.RGroup, m *config.RModel) *config.RTier {
	for _, t := range g.Tiers {
		for _, l := range t.Levels {
			for _, c := range l.Candidates {
				if c.Model == m {
					return t
				}
			}
		}
	}
	return nil
}

func (p *Plan) skip(model string, d *config.RDeployment, r reason.Reason, fallback bool) {
	s := Skip{Model: model, Reason: r, Fallback: fallback}
	if d != nil {
		s.DeploymentID, s.Deployment = d.ID, d.Provider.Name+"/"+d.UpstreamModel
	}
	p.Skips = append(p.Skips, s)
}

func (p *Plan) addTier(t *config.RTier, needs Needs, st *State, fallback bool) {
	if t == nil {
		return
	}
	for _, l := range t.Levels {
		n := 0
		for i, c := range l.Candidates {
			switch {
			case c.Model.Kind != needs.Kind:
				p.skip(c.Model.Code, nil, reason.Reason{Code: reason.WrongKind, Kind: string(c.Model.Kind), Want: string(needs.Kind)}, fallback)
			case c.Parked || c.Weight <= 0:
				p.skip(c.Model.Code, nil, reason.Of(reason.CandidateParked), fallback)
			case n == len(p.weights):
				p.skip(c.Model.Code, nil, reason.Reason{Code: reason.ChainFull, Max: len(p.weights)}, fallback)
			default:
				p.weights[n], p.order[n] = c.Weight, i
				n++
			}
		}
		order := weightedOrder(p.weights[:n], p.order[:n])
		// order is a permutation of candidate indexes; copy it out of the
		// scratch arrays, which addModel reuses.
		var picked [32]int
		copy(picked[:], order)
		for _, i := range picked[:n] {
			p.addModel(l.Candidates[i].Model, needs, st, fallback)
		}
	}
}

func (p *Plan) addModel(m *config.RModel, needs Needs, st *State, fallback bool) {
	n := 0
	for i, d := range m.Deployments {
		if r := unusable(d, needs, st); r.Code != "" {
			p.skip(m.Code, d, r, fallback)
			continue
		}
		if p.has(d) {
			p.skip(m.Code, d, reason.Of(reason.AlreadyInChain), fallback)
			continue
		}
		if n == len(p.weights) {
			p.skip(m.Code, d, reason.Reason{Code: reason.ChainFull, Max: len(p.weights)}, fallback)
			continue
		}
		w := d.Weight
		if st != nil && st.Load != nil && (d.MaxConcurrency > 0 || d.MaxInflightTokens > 0) {
			slots, tokens := st.Load.Load(d.ID)
			w = effectiveWeight(d.Weight, slots, d.MaxConcurrency, tokens+p.Tokens, d.MaxInflightTokens)
		}
		p.weights[n], p.order[n] = w, i
		n++
	}
	if n == 0 && len(m.Deployments) == 0 {
		p.skip(m.Code, nil, reason.Of(reason.NoDeployments), fallback)
	}
	for _, i := range weightedOrder(p.weights[:n], p.order[:n]) {
		p.Steps = append(p.Steps, Step{Deployment: m.Deployments[i], Fallback: fallback})
	}
}

func (p *Plan) has(d *config.RDeployment) bool {
	for _, s := range p.Steps {
		if s.Deployment == d {
			return true
		}
	}
	return false
}

// unusable is the skip reason of a deployment for this request; the zero
// Reason when it can be tried.
func unusable(d *config.RDeployment, needs Needs, st *State) reason.Reason {
	switch {
	case d.StaticSkip.Code != "":
		return d.StaticSkip
	case needs.Thinking && !d.Capabilities.Thinking:
		return reason.Reason{Code: reason.LacksCapability, Capability: "thinking"}
	case needs.Vision && !d.Capabilities.Vision:
		return reason.Reason{Code: reason.LacksCapability, Capability: "vision"}
	case needs.Tools && !d.Capabilities.Tools:
		return reason.Reason{Code: reason.LacksCapability, Capability: "tools"}
	}
	if needs.Chat != nil {
		if f := refusedField(d, needs.Chat); f != "" {
			return reason.Reason{Code: reason.UnsupportedParameter, Param: f, Protocol: string(d.Provider.Protocol)}
		}
	}
	switch {
	case st == nil:
		return reason.Reason{}
	case st.Health != nil && st.Health.Down(d.ID):
		return reason.Of(reason.Unhealthy)
	}
	if st.Breakers != nil {
		if until, open := st.Breakers.Open(d.ID); open {
			return reason.Reason{Code: reason.BreakerOpen, Until: reason.UntilOf(until)}
		}
	}
	if st.Keys != nil {
		if skip, ok := st.Keys.Usable(d.Provider.ActiveKey); !ok {
			return skip
		}
	}
	return reason.Reason{}
}

// effectiveWeight is weight × the smaller free share of the deployment's
// two caps: free slots / max slots, and free tokens / max in-flight tokens,
// where tokens are those in flight plus this request's estimate (so one
// 12k-token call weighs what it costs, and a long request shuns a deployment
// busy with long ones even when their slot counts are equal). A cap of 0 is
// no constraint. Floored at 1 so a full deployment is still ordered (last)
// rather than dropped.
func effectiveWeight(weight, inFlight, maxSlots int, tokens, maxTokens int64) int {
	w := weight
	if maxSlots > 0 {
		w = min(w, weight*min(max(maxSlots-inFlight, 0), maxSlots)/maxSlots)
	}
	if maxTokens > 0 {
		free := min(max(maxTokens-tokens, 0), maxTokens)
		w = min(w, int(int64(weight)*free/maxTokens))
	}
	return max(w, 1)
}

// weightedOrder reorders idx (in place) by repeated weighted draws without
// replacement, using weights w (also consumed in place). Zero weights sort
// last in their original order.
func weightedOrder(w, idx []int) []int {
	for k := 0; k < len(w); k++ {
		total := 0
		for _, x := range w[k:] {
			total += x
		}
		if total <= 0 {
			break
		}
		r := rand.IntN(total)
		j := k
		for ; j < len(w); j++ {
			if r < w[j] {
				break
			}
			r -= w[j]
		}
		w[k], w[j] = w[j], w[k]
		idx[k], idx[j] = idx[j], idx[k]
	}
	return idx
}
