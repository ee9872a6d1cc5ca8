package routing

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"switchyard/routing/config"
	"switchyard/routing/reason"
	"switchyard/routing/record"
)

// The impact preview: what publishing a draft would do to the traffic of
// the last day. The call log's requests, grouped into distinct shapes
// (caller, model asked for, stream, needs, fields set), are routed against
// the live version and against the draft exactly as the journey routes
// them (Resolve, then Build) but with no runtime state and no vendor call:
// configuration alone decides. Since a request's first deployment is a
// weighted random draw, each version's expected share of first choices is
// computed from the weights (firstChoice, checked against sampling Build),
// and the day's cost follows from the tokens per request the log recorded
// and the deployments' prices.

// Check ids of the impact preview's findings.
const (
	// CheckTrafficLost: a caller's working traffic on a tier (or a logic
	// model it names) would go to zero. Blocks unless acknowledged.
	CheckTrafficLost = "traffic_lost"
	// CheckTrafficPartlyLost: some of a caller's working requests would
	// fail, the rest still served. A warning.
	CheckTrafficPartlyLost = "traffic_partly_lost"
)

// TrafficShape is one distinct request shape of the call log over a window,
// with how often it came and the tokens it used.
type TrafficShape struct {
	CallerID int64        `json:"caller_id"`
	Caller   string       `json:"caller"`
	Model    string       `json:"model"` // what the caller put in model: a tier, an alias or a logic model code
	Stream   bool         `json:"stream,omitempty"`
	Needs    record.Needs `json:"needs,omitempty"`
	Fields   uint64       `json:"fields,omitempty"`
	Requests int64        `json:"requests"`
	// Served counts the requests that ended ok: the caller's working traffic.
	Served int64 `json:"served"`
	// Usage counts the requests with known token usage; the token sums
	// are theirs.
	Usage            int64 `json:"usage"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
}

// Impact is what a draft would change, per day at the traffic of Window.
type Impact struct {
	Window        time.Duration `json:"-"`
	WindowSeconds int64         `json:"window_seconds"`
	Shapes        int           `json:"shapes"`
	Requests      int64         `json:"requests"` // replayed (callers in both versions)
	// Lost are the requests that the live version serves and the draft
	// would refuse, by caller, target and what refuses them.
	Lost []Loss `json:"lost"`
	// Deployments and Providers are the expected first-choice requests per
	// day, live → draft, for every deployment or provider either sends any.
	Deployments []Shift `json:"deployments"`
	Providers   []Shift `json:"providers"`
	// Costs are the expected cost per day by currency, live → draft.
	Costs []CostShift `json:"costs"`
	// Unpriced counts requests without usage in the log: not in Costs.
	Unpriced int64 `json:"unpriced"`
	// Gone counts requests of callers the draft removes or disables: their
	// loss is the change itself, not a routing consequence.
	Gone []GoneCaller `json:"gone,omitempty"`
}

// Loss is a caller's traffic on one target that the draft would refuse.
type Loss struct {
	CallerID   int64           `json:"caller_id"`
	Caller     string          `json:"caller"`
	RouteGroup string          `json:"route_group"` // the caller's group in the draft
	Tier       config.TierName `json:"tier,omitempty"`
	LogicModel string          `json:"logic_model,omitempty"` // an explicit request's model
	// Code is what the caller would get: no_available_model,
	// unsupported_parameter (Param) or model_not_found.
	Code  ErrorCode `json:"code"`
	Param string    `json:"param,omitempty"`
	// Requests and Served count the lost requests and, of them, the ones
	// that ended ok in the log; Total and TotalServed are the caller's
	// whole traffic on the target.
	Requests    int64 `json:"requests"`
	Served      int64 `json:"served"`
	Total       int64 `json:"total"`
	TotalServed int64 `json:"total_served"`
	// AllLost: every working request of the caller on the target would
	// fail — a blocking finding unless acknowledged.
	AllLost bool `json:"all_lost"`
	// Skips are the draft's typed skip reasons for those requests.
	Skips []Skip `json:"skips"`
}

// Target is the tier or logic model of the loss.
func (l Loss) Target() string {
	if l.LogicModel != "" {
		return l.LogicModel
	}
	return string(l.Tier)
}

// Ack is what acknowledges the loss.
func (l Loss) Ack() config.Ack {
	return config.Ack{RouteGroup: l.RouteGroup, Tier: l.Tier, LogicModel: l.LogicModel}
}

// Shift is one deployment's or provider's expected first-choice requests
// per day, live → draft.
type Shift struct {
	Key        string  `json:"key"` // "model/provider/upstream" or the provider's name
	LogicModel string  `json:"logic_model,omitempty"`
	Provider   string  `json:"provider"`
	Upstream   string  `json:"upstream_model,omitempty"`
	Before     float64 `json:"before"`
	After      float64 `json:"after"`
}

// CostShift is the expected cost per day in one currency, live → draft,
// in micro-units.
type CostShift struct {
	Currency string `json:"currency"`
	Before   int64  `json:"before_micros"`
	After    int64  `json:"after_micros"`
}

// GoneCaller is a caller the draft removes or disables, with its traffic.
type GoneCaller struct {
	Caller   string `json:"caller"`
	Removed  bool   `json:"removed"` // removed, else disabled
	Requests int64  `json:"requests"`
}

// Findings are the impact's findings for the dry-run: traffic_lost (needs
// acknowledging by the loss's group/target) and traffic_partly_lost.
func (im *Impact) Findings() (lost, partly []config.Finding) {
	for _, l := range im.Lost {
		if l.Served == 0 {
			continue // nothing that worked is lost
		}
		obj := config.ObjectRef{Kind: "tier", Name: l.RouteGroup + " / " + string(l.Tier), Group: l.RouteGroup, Tier: l.Tier}
		if l.LogicModel != "" {
			// Named explicitly: the fix is the group's tiers, which must
			// list the model for its callers to reach it.
			obj = config.ObjectRef{Kind: "route_group", Name: l.RouteGroup, Model: l.LogicModel}
		}
		f := config.Finding{Object: obj, Callers: []string{l.Caller},
			Params: map[string]string{"caller": l.Caller, "route_group": l.RouteGroup, "target": l.Target(), "code": string(l.Code),
				"served": fmt.Sprint(l.Served), "total_served": fmt.Sprint(l.TotalServed)}}
		if l.AllLost {
			a := l.Ack()
			f.Ack = &a
			f.Message = fmt.Sprintf("caller %s's %s traffic would stop: all %d request(s) served in the last %s would get %s (%s)",
				l.Caller, l.Target(), l.Served, windowWords(im.Window), l.Code, skipWords(l.Skips))
			lost = append(lost, f)
			continue
		}
		f.Message = fmt.Sprintf("%d of caller %s's %d served %s request(s) in the last %s would get %s (%s)",
			l.Served, l.Caller, l.TotalServed, l.Target(), windowWords(im.Window), l.Code, skipWords(l.Skips))
		partly = append(partly, f)
	}
	return lost, partly
}

func windowWords(d time.Duration) string {
	if d == 24*time.Hour {
		return "24 h"
	}
	return d.String()
}

func skipWords(skips []Skip) string {
	var parts []string
	for _, s := range skips {
		w := s.Model
		if s.Deployment != "" {
			w += " on " + s.Deployment
		}
		parts = append(parts, w+": "+s.Reason.String())
		if len(parts) == 4 && len(skips) > 4 {
			parts = append(parts, fmt.Sprintf("and %d more", len(skips)-4))
			break
		}
	}
	if len(parts) == 0 {
		return "nothing to try"
	}
	return strings.Join(parts, "; ")
}

// CompileForReplay compiles a snapshot for routing only: key secrets and
// secret header values are placeholders (the replay calls no vendor).
func CompileForReplay(s config.Snapshot) (*config.Runtime, error) {
	creds := config.Credentials{ProviderKeySecrets: map[int64]string{}, ProviderHeaderSecrets: map[int64]config.HeaderSecret{}}
	for _, p := range s.Providers {
		for _, k := range p.Keys {
			creds.ProviderKeySecrets[k.ID] = ""
		}
		for _, h := range p.Headers {
			if h.Secret {
				creds.ProviderHeaderSecrets[h.SecretID] = config.HeaderSecret{ProviderID: p.ID}
			}
		}
	}
	return config.Compile(0, s, creds)
}

// replayed is one shape routed against one version.
type replayed struct {
	gone     bool // caller not in the version, or disabled
	removed  bool
	group    string
	target   Target
	code     ErrorCode // "" when a deployment would serve
	param    string
	skips    []Skip
	first    []share
	resolved bool
}

type share struct {
	d *config.RDeployment
	p float64
}

// ErrNoLive is returned by Replay without a live version to compare with.
var ErrNoLive = errors.New("routing: nothing is published yet, so there is nothing to compare the draft with")

// Replay routes the shapes against the live version and the draft.
func Replay(live, draft *config.Runtime, shapes []TrafficShape, window time.Duration) (*Impact, error) {
	if live == nil {
		return nil, ErrNoLive
	}
	if window <= 0 {
		window = 24 * time.Hour
	}
	im := &Impact{Window: window, WindowSeconds: int64(window / time.Second), Shapes: len(shapes)}
	acc := newReplayAcc(float64(24*time.Hour) / float64(window))
	for _, sh := range shapes {
		before := replayShape(live, sh)
		if before.gone {
			continue // not a caller of the live version: nothing to compare
		}
		after := replayShape(draft, sh)
		if after.gone {
			acc.addGone(sh, after)
			continue
		}
		im.Requests += sh.Requests
		if sh.Usage <= 0 {
			im.Unpriced += sh.Requests
		}
		acc.addServed(sh, before, after)
		acc.addFirstChoices(sh, before, after)
	}
	acc.lost(im)
	acc.shifts(im)
	for _, g := range acc.gone {
		im.Gone = append(im.Gone, *g)
	}
	slices.SortFunc(im.Gone, func(a, b GoneCaller) int { return cmp.Compare(a.Caller, b.Caller) })
	return im, nil
}

type (
	lossKey struct {
		caller int64
		target string
		code   ErrorCode
	}
	targetKey struct {
		caller int64
		target string
	}
)

// replayAcc accumulates a replay, shape by shape.
type replayAcc struct {
	perDay float64 // the window's requests scaled to a day
	losses map[lossKey]*Loss
	totals map[targetKey]*[4]int64 // total, total served, served before, served after
	gone   map[string]*GoneCaller
	deps   map[string]*depAcc
}

func newReplayAcc(perDay float64) *replayAcc {
	return &replayAcc{perDay: perDay, losses: map[lossKey]*Loss{}, totals: map[targetKey]*[4]int64{},
		gone: map[string]*GoneCaller{}, deps: map[string]*depAcc{}}
}

// addGone counts a shape whose caller the draft removes.
func (acc *replayAcc) addGone(sh TrafficShape, after replayed) {
	g := acc.gone[sh.Caller]
	if g == nil {
		g = &GoneCaller{Caller: sh.Caller, Removed: after.removed}
		acc.gone[sh.Caller] = g
	}
	g.Requests += sh.Requests
}

// addServed counts a shape against its target, both versions, and as a
// loss when the draft refuses what the live version served.
func (acc *replayAcc) addServed(sh TrafficShape, before, after replayed) {
	tname := after.target.Name()
	if !after.resolved {
		tname = before.target.Name()
	}
	tk := targetKey{sh.CallerID, tname}
	tot := acc.totals[tk]
	if tot == nil {
		tot = &[4]int64{}
		acc.totals[tk] = tot
	}
	tot[0] += sh.Requests
	tot[1] += sh.Served
	if before.code == "" {
		tot[2] += sh.Served
	}
	if after.code == "" {
		tot[3] += sh.Served
	}
	if before.code != "" || after.code == "" {
		return
	}
	lk := lossKey{sh.CallerID, tname, after.code}
	l := acc.losses[lk]
	if l == nil {
		l = &Loss{CallerID: sh.CallerID, Caller: sh.Caller, RouteGroup: after.group, Code: after.code, Param: after.param}
		if t := after.target; t.Explicit != nil || (!after.resolved && before.target.Explicit != nil) {
			l.LogicModel = tname
		} else if after.resolved {
			l.Tier = t.Tier
		} else {
			l.Tier = before.target.Tier
		}
		acc.losses[lk] = l
	}
	l.Requests += sh.Requests
	l.Served += sh.Served
	l.Skips = mergeSkips(l.Skips, after.skips)
}

// addFirstChoices adds a shape's expected first choices and their tokens,
// both versions.
func (acc *replayAcc) addFirstChoices(sh TrafficShape, before, after replayed) {
	tokens := [3]float64{}
	if sh.Usage > 0 {
		scale := float64(sh.Requests) / float64(sh.Usage) * acc.perDay
		tokens = [3]float64{float64(sh.PromptTokens) * scale, float64(sh.CompletionTokens) * scale, float64(sh.CachedTokens) * scale}
	}
	for side, r := range []replayed{before, after} {
		for _, s := range r.first {
			a := acc.deps[depKey(s.d)]
			if a == nil {
				a = &depAcc{d: s.d}
				acc.deps[depKey(s.d)] = a
			}
			if side == 1 {
				a.d = s.d // the draft's prices win for the draft's side
			}
			a.req[side] += float64(sh.Requests) * acc.perDay * s.p
			for i := range tokens {
				a.tok[side][i] += tokens[i] * s.p
			}
			a.dep[side] = s.d
		}
	}
}

// lost fills im.Lost, most served first.
func (acc *replayAcc) lost(im *Impact) {
	for k, l := range acc.losses {
		t := acc.totals[targetKey{k.caller, k.target}]
		l.Total, l.TotalServed = t[0], t[1]
		l.AllLost = t[2] > 0 && t[3] == 0
		im.Lost = append(im.Lost, *l)
	}
	slices.SortFunc(im.Lost, func(a, b Loss) int {
		return cmp.Or(cmp.Compare(b.Served, a.Served), cmp.Compare(a.Caller, b.Caller), cmp.Compare(a.Target(), b.Target()), cmp.Compare(a.Code, b.Code))
	})
}

// shifts fills the per-deployment and per-provider request shifts and the
// cost per currency.
func (acc *replayAcc) shifts(im *Impact) {
	providers := map[string]*Shift{}
	costs := map[string]*CostShift{}
	for key, a := range acc.deps {
		d := a.d
		im.Deployments = append(im.Deployments, Shift{Key: key, LogicModel: d.Model.Code, Provider: d.Provider.Name, Upstream: d.UpstreamModel, Before: a.req[0], After: a.req[1]})
		p := providers[d.Provider.Name]
		if p == nil {
			p = &Shift{Key: d.Provider.Name, Provider: d.Provider.Name}
			providers[d.Provider.Name] = p
		}
		p.Before += a.req[0]
		p.After += a.req[1]
		a.addCosts(costs)
	}
	slices.SortFunc(im.Deployments, func(a, b Shift) int { return cmp.Compare(a.Key, b.Key) })
	for _, p := range providers {
		im.Providers = append(im.Providers, *p)
	}
	slices.SortFunc(im.Providers, func(a, b Shift) int { return cmp.Compare(a.Key, b.Key) })
	for _, c := range costs {
		im.Costs = append(im.Costs, *c)
	}
	slices.SortFunc(im.Costs, func(a, b CostShift) int { return cmp.Compare(a.Currency, b.Currency) })
}

// addCosts adds the deployment's expected cost, both versions, to its
// currency's.
func (a *depAcc) addCosts(costs map[string]*CostShift) {
	for side := range 2 {
		dd := a.dep[side]
		if dd == nil {
			continue
		}
		cur := dd.Prices.Currency
		if cur == "" {
			cur = config.DefaultCurrency
		}
		c := costs[cur]
		if c == nil {
			c = &CostShift{Currency: cur}
			costs[cur] = c
		}
		t := a.tok[side]
		v := dd.Prices.CostMicros(round(t[0]), round(t[1]), round(t[2]))
		if side == 0 {
			c.Before = satAdd(c.Before, v)
		} else {
			c.After = satAdd(c.After, v)
		}
	}
}

type depAcc struct {
	d   *config.RDeployment
	dep [2]*config.RDeployment // the deployment in the live version, in the draft
	req [2]float64             // expected first-choice requests per day
	tok [2][3]float64          // expected prompt, completion, cached tokens per day
}

// depKey names a deployment across versions by identity, not database id.
func depKey(d *config.RDeployment) string {
	return d.Model.Code + "/" + d.Provider.Name + "/" + d.UpstreamModel
}

func round(f float64) int64 {
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(math.Round(f))
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mergeSkips(have, add []Skip) []Skip {
	for _, s := range add {
		if !slices.ContainsFunc(have, func(h Skip) bool {
			return h.Model == s.Model && h.DeploymentID == s.DeploymentID && h.Reason == s.Reason && h.Fallback == s.Fallback
		}) {
			have = append(have, s)
		}
	}
	return have
}

// replayShape routes one shape against rt as the journey would, with no
// runtime state.
func replayShape(rt *config.Runtime, sh TrafficShape) replayed {
	var r replayed
	caller := rt.Callers[sh.CallerID]
	if caller == nil || !caller.Enabled {
		return replayed{gone: true, removed: caller == nil}
	}
	r.group = caller.Group.Name
	needs := ReplayNeeds(sh.Needs, sh.Fields)
	target, err := Resolve(caller, sh.Model, needs.Kind, needs.Thinking)
	if err != nil {
		r.code = CodeModelNotFound
		return r
	}
	r.target, r.resolved = target, true
	p := NewPlan()
	defer p.Release()
	Build(p, caller, target, needs, nil)
	if len(p.Steps) == 0 {
		r.code = CodeNoAvailableModel
		for _, s := range p.Skips {
			if s.Reason.Code == reason.UnsupportedParameter && r.param == "" {
				r.code, r.param = CodeUnsupportedParameter, s.Reason.Param
			}
		}
		r.skips = slices.Clone(p.Skips)
		return r
	}
	r.first = firstChoice(caller, target, needs)
	return r
}

// firstChoice is the probability of each deployment being a request's
// first step, as Build draws it: the first priority level with a candidate
// that has a usable deployment; among its candidates, in proportion to
// their weights (the first of a weighted draw without replacement to land
// in any subset falls on each member in proportion to its weight); within
// the logic model, in proportion to the deployments' weights. A dedicated
// group's fallback tier comes in only when the group's own tier has
// nothing.
func firstChoice(caller *config.RCaller, t Target, needs Needs) []share {
	if t.Explicit != nil {
		return modelShares(t.Explicit, needs, 1, nil)
	}
	g := caller.Group
	out := tierShares(g.Tier(t.Tier), needs)
	if len(out) == 0 && g.Tenant != "" && g.Fallback != nil {
		out = tierShares(g.Fallback.Tier(t.Tier), needs)
	}
	return out
}

func tierShares(t *config.RTier, needs Needs) []share {
	if t == nil {
		return nil
	}
	for _, l := range t.Levels {
		total := 0
		n := 0
		for _, c := range l.Candidates {
			if c.Model.Kind != needs.Kind || c.Parked || c.Weight <= 0 || n == 32 {
				continue
			}
			n++
			if hasUsable(c.Model, needs) {
				total += c.Weight
			}
		}
		if total == 0 {
			continue
		}
		var out []share
		n = 0
		for _, c := range l.Candidates {
			if c.Model.Kind != needs.Kind || c.Parked || c.Weight <= 0 || n == 32 {
				continue
			}
			n++
			if hasUsable(c.Model, needs) {
				out = modelShares(c.Model, needs, float64(c.Weight)/float64(total), out)
			}
		}
		return out
	}
	return nil
}

func hasUsable(m *config.RModel, needs Needs) bool {
	for _, d := range m.Deployments {
		if unusable(d, needs, nil).Code == "" {
			return true
		}
	}
	return false
}

// modelShares adds m's usable deployments with their share of weight p.
func modelShares(m *config.RModel, needs Needs, p float64, out []share) []share {
	total := 0
	for _, d := range m.Deployments {
		if unusable(d, needs, nil).Code == "" {
			total += d.Weight
		}
	}
	if total <= 0 {
		return out
	}
	for _, d := range m.Deployments {
		if unusable(d, needs, nil).Code != "" {
			continue
		}
		q := p * float64(d.Weight) / float64(total)
		if i := slices.IndexFunc(out, func(s share) bool { return s.d == d }); i >= 0 {
			out[i].p += q // the same model at one level twice
		} else {
			out = append(out, share{d, q})
		}
	}
	return out
}
