package worker

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/frontdoor"
	"switchyard/routing/health"
	"switchyard/routing/reason"
	"switchyard/store"
	"switchyard/store/redis/healthboard"
)

// ProbeLog records probes and health changes (store.Store).
type ProbeLog interface {
	AddProbes(ctx context.Context, probes []store.Probe) error
	AddHealthEvents(ctx context.Context, events []store.HealthEvent) error
	PruneProbes(ctx context.Context, cutoff time.Time) (int64, error)
}

// KeyPicker chooses a usable provider key (keypool.Pool): cooling and
// quarantined keys are not used for probes.
type KeyPicker interface {
	Pick(providerID int64, keyIDs []int64, tried []int64) (keyID int64, skip reason.Reason, ok bool)
}

// Prober sends every enabled deployment of the live configuration a minimal
// real request — a chat completion capped at one token, or an embedding of
// one short input — and then scores every deployment on the health board.
//
// Probes are billed by the vendor and, with thousands of deployments, must
// not arrive as a burst: a round spreads them over the probe interval (each
// deployment at a stable point of it, hashed from its id, with a little
// per-round jitter), never more than Concurrency in flight, and leaves out
// a deployment that served a successful live request within the interval
// (its live outcomes already feed the score; the skip is counted on the
// board for the Health page). A down deployment is always probed: it gets
// no live traffic, and probes are its only way back.
//
// It reads configuration and never changes it: deployments, providers and
// keys an operator disabled are not probed (a deployment's health state
// only ever decides whether the router skips it as "unhealthy"). Probes
// take no key actions (no cooling, no quarantine).
type Prober struct {
	// Runtime is the live configuration (nil before the first publish).
	Runtime  func() *config.Runtime
	Adapters map[config.Protocol]adapter.Adapter
	Client   *http.Client
	// Keys picks keys; nil uses each provider's first active key.
	Keys  KeyPicker
	Board *healthboard.Board
	// Log records probes and state changes; nil records nothing.
	Log ProbeLog
	// Timeout bounds one probe (default 10s; a deployment's own shorter
	// timeout wins).
	Timeout time.Duration
	// Concurrency bounds the probes in flight (default 8).
	Concurrency int
	// Interval is the probe interval (Job sets it when zero). A round's
	// probes are spread over it and a deployment with a live success within
	// it is skipped; with zero every probe is sent at once (still at most
	// Concurrency in flight) and none is skipped.
	Interval time.Duration
	// Keep is how long probes are kept (default 7 days).
	Keep time.Duration
}

// spreadShare is the share of the interval a round's probes are spread
// over; the rest leaves the last probes time to finish before the next
// round. jitterShare is the per-round jitter around a deployment's point.
const (
	spreadShare = 0.8
	jitterShare = 0.05
)

// probeChat is the probe's chat request: one token of answer.
var probeChat = sync.OnceValue(func() *adapter.ChatRequest {
	r, err := frontdoor.ParseChatRequest([]byte(`{"model":"probe","messages":[{"role":"user","content":"ping"}],"max_tokens":1}`))
	if err != nil {
		panic("worker: probe request: " + err.Error())
	}
	return r
})

// Job is the prober as a singleton job.
func (p *Prober) Job(every time.Duration) Job {
	if p.Interval == 0 {
		p.Interval = every
	}
	return Job{
		Name:        "health-probe",
		Description: "Sends every enabled deployment a minimal real request (1-token chat, or a one-input embedding), spread over the interval with at most a few in flight, skipping deployments whose live traffic succeeded within the interval and never skipping a down one; then scores every deployment over its window of probes and live traffic and updates its health state. Disabled deployments, providers and keys are never probed or re-enabled.",
		Every:       every,
		Timeout:     max(every+2*p.timeout(), time.Minute),
		Run:         p.Run,
	}
}

func (p *Prober) timeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return 10 * time.Second
}

func (p *Prober) concurrency() int {
	if p.Concurrency > 0 {
		return p.Concurrency
	}
	return 8
}

// mix is splitmix64's finalizer: a well-spread hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// schedule is when each deployment's probe is sent in a round starting at
// now: spread over [now, end), end being spreadShare into the current tick
// of every (tick n covers [n×every, (n+1)×every) of Unix time, as for the
// runner), and at least a quarter interval away — a round that starts late
// (after a dead worker's lease expired, or on "Run now") squeezes into what
// is left but never into a burst. A deployment's point is a hash of its id,
// the same every round, moved by up to ±jitterShare/2 by the round's seed.
func schedule(ids []int64, now time.Time, every time.Duration, seed uint64) []time.Time {
	tickStart := time.Unix(0, now.UnixNano()/int64(every)*int64(every))
	end := tickStart.Add(time.Duration(float64(every) * spreadShare))
	if end.Sub(now) < every/4 {
		end = now.Add(every / 4)
	}
	span := float64(end.Sub(now))
	out := make([]time.Time, len(ids))
	for i, id := range ids {
		pos := unit(mix(uint64(id))) + (unit(mix(uint64(id)^seed))-0.5)*jitterShare
		pos -= math.Floor(pos) // wrap into [0, 1)
		out[i] = now.Add(time.Duration(pos * span))
	}
	return out
}

// outcome is one deployment's part of a round.
type outcome struct {
	rec     store.Probe
	verdict health.Probe
	sent    bool // a request went to the vendor (and may be billed)
	cost    int64
	skipped bool // left out: live traffic vouches for it
}

// Run probes and scores once.
func (p *Prober) Run(ctx context.Context) (string, error) {
	var rt *config.Runtime
	if p.Runtime != nil {
		rt = p.Runtime()
	}
	if rt == nil {
		return "no configuration is live yet", nil
	}
	ids, targets := probeTargets(rt)
	outs, err := p.probeAll(ctx, targets)
	if err != nil {
		return "", err
	}
	t := tallyProbes(targets, outs)
	if err := p.Board.Add(ctx, t.samples); err != nil {
		return "", err
	}
	changes, states, err := p.Board.Evaluate(ctx, ids, t.probes)
	if err != nil {
		return "", err
	}
	summary := p.summary(rt, ids, t, changes, states)
	if p.Log == nil {
		return summary, nil
	}
	return summary, p.record(ctx, t.results, changes)
}

// probeTargets are every deployment's id and the deployments probed, both
// in id order.
func probeTargets(rt *config.Runtime) ([]int64, []*config.RDeployment) {
	ids := make([]int64, 0, len(rt.Deployments))
	var targets []*config.RDeployment
	for id, d := range rt.Deployments {
		ids = append(ids, id)
		if health.NotProbed(d) == "" {
			targets = append(targets, d)
		}
	}
	slices.Sort(ids)
	slices.SortFunc(targets, func(a, b *config.RDeployment) int { return cmp.Compare(a.ID, b.ID) })
	return ids, targets
}

// probeAll probes the targets, spread over the interval when there is one,
// at most concurrency at a time; it returns ctx's error when ctx ends first.
func (p *Prober) probeAll(ctx context.Context, targets []*config.RDeployment) ([]outcome, error) {
	// Down deployments are always probed; if the down set cannot be read,
	// nothing is skipped.
	down, err := p.Board.Down(ctx)
	skipping := p.Interval > 0 && err == nil

	order := make([]int, len(targets))
	for i := range order {
		order[i] = i
	}
	var at []time.Time
	if p.Interval > 0 {
		tids := make([]int64, len(targets))
		for i, d := range targets {
			tids[i] = d.ID
		}
		at = schedule(tids, time.Now(), p.Interval, rand.Uint64())
		slices.SortStableFunc(order, func(a, b int) int { return at[a].Compare(at[b]) })
	}

	outs := make([]outcome, len(targets))
	sem := make(chan struct{}, p.concurrency())
	var wg sync.WaitGroup
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	stopped := func() ([]outcome, error) {
		wg.Wait()
		return nil, ctx.Err()
	}
	for _, i := range order {
		if at != nil {
			if wait := time.Until(at[i]); wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-ctx.Done():
					return stopped()
				}
			}
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return stopped()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, isDown := down[targets[i].ID]
			outs[i] = p.probeOrSkip(ctx, targets[i], skipping && !isDown)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return outs, nil
}

// probeOrSkip probes d, or skips it when mayskip and live traffic
// succeeded on it within the interval.
func (p *Prober) probeOrSkip(ctx context.Context, d *config.RDeployment, maySkip bool) outcome {
	if maySkip {
		last, err := p.Board.LastLiveOK(ctx, d.ID)
		if err == nil && !last.IsZero() && time.Since(last) < p.Interval {
			_ = p.Board.NoteSkip(ctx, d.ID, health.SkipLiveTraffic)
			return outcome{skipped: true}
		}
	}
	o := p.probe(ctx, d)
	if o.sent {
		_ = p.Board.NoteProbe(ctx, d.ID, o.cost)
	}
	return o
}

// probeTally is a round's outcomes, counted and gathered for the board and
// the log.
type probeTally struct {
	samples                           map[int64]health.Counts
	probes                            map[int64]health.Probe
	results                           []store.Probe
	ok, failed, inconclusive, skipped int
}

func tallyProbes(targets []*config.RDeployment, outs []outcome) probeTally {
	t := probeTally{samples: map[int64]health.Counts{}, probes: map[int64]health.Probe{}, results: make([]store.Probe, 0, len(targets))}
	for i, d := range targets {
		o := outs[i]
		if o.skipped {
			t.skipped++
			continue
		}
		t.results = append(t.results, o.rec)
		t.probes[d.ID] = o.verdict
		switch o.verdict {
		case health.ProbePassed:
			t.samples[d.ID] = health.Counts{ProbeOK: 1}
			t.ok++
		case health.ProbeFailed:
			t.samples[d.ID] = health.Counts{ProbeFailed: 1}
			t.failed++
		default:
			t.inconclusive++
		}
	}
	return t
}

// summary is the round's one line for the jobs page.
func (p *Prober) summary(rt *config.Runtime, ids []int64, t probeTally, changes []health.Transition, states map[int64]health.Status) string {
	summary := fmt.Sprintf("probed %d of %d deployments: %d ok, %d failed, %d inconclusive", len(t.results), len(ids), t.ok, t.failed, t.inconclusive)
	if t.skipped > 0 {
		summary += fmt.Sprintf("; %d skipped (live traffic succeeded within %s)", t.skipped, p.Interval)
	}
	var downs []string
	for _, id := range ids {
		if states[id].State == health.Down {
			downs = append(downs, rt.Deployments[id].Label())
		}
	}
	if len(downs) > 0 {
		summary += "; down: " + strings.Join(downs, ", ")
	}
	for _, c := range changes {
		summary += fmt.Sprintf("; %s: %s → %s", rt.Deployments[c.DeploymentID].Label(), c.From, c.To)
	}
	return summary
}

// record logs the probes and the health changes and prunes old probes.
func (p *Prober) record(ctx context.Context, results []store.Probe, changes []health.Transition) error {
	events := make([]store.HealthEvent, 0, len(changes))
	for _, c := range changes {
		e := store.HealthEvent{DeploymentID: c.DeploymentID, At: c.At, From: string(c.From), To: string(c.To), Samples: c.Samples, Reason: c.Reason}
		if c.Samples > 0 {
			e.Score = sql.NullFloat64{Float64: c.Score, Valid: true}
		}
		events = append(events, e)
	}
	err := errors.Join(p.Log.AddProbes(ctx, results), p.Log.AddHealthEvents(ctx, events))
	keep := p.Keep
	if keep <= 0 {
		keep = 7 * 24 * time.Hour
	}
	if _, perr := p.Log.PruneProbes(ctx, time.Now().Add(-keep)); perr != nil {
		err = errors.Join(err, perr)
	}
	return err
}

// probe sends one deployment its probe and classifies the outcome: an
// answer passes; a server, timeout or network failure fails; anything else
// (a key or request problem, or our own shutdown) is inconclusive.
// Its cost is the usage the vendor reported at the deployment's prices.
func (p *Prober) probe(ctx context.Context, d *config.RDeployment) outcome {
	rec := store.Probe{DeploymentID: d.ID, At: time.Now()}
	inconclusive := func(msg string) outcome {
		rec.Outcome, rec.Message = store.ProbeInconclusive, msg
		return outcome{rec: rec, verdict: health.NoProbe}
	}
	ad := p.Adapters[d.Provider.Protocol]
	if ad == nil {
		return inconclusive("protocol " + string(d.Provider.Protocol) + " is not implemented")
	}
	var keyID int64
	if p.Keys != nil {
		id, skip, ok := p.Keys.Pick(d.Provider.ID, d.Provider.ActiveKey, nil)
		if !ok {
			return inconclusive("no usable key: " + skip.String())
		}
		keyID = id
	} else {
		keyID = d.Provider.ActiveKey[0]
	}
	key := d.Provider.Key(keyID)
	if key == nil {
		return inconclusive("key not found")
	}
	timeout := p.timeout()
	if d.Timeout > 0 && d.Timeout < timeout {
		timeout = d.Timeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := adapter.Target{BaseURL: d.Provider.BaseURL, APIKey: key.Secret, UpstreamModel: d.UpstreamModel, Client: p.Client, Header: d.Provider.Outgoing(nil),
		APIVersion: d.Provider.APIVersion, Region: d.Provider.Region, Project: d.Provider.Project, AuthURL: d.Provider.AuthURL, Quirks: d.Provider.Quirks}
	start := time.Now()
	var (
		err   error
		usage adapter.Usage
	)
	switch d.Model.Kind {
	case config.KindEmbedding:
		var res *adapter.EmbedResult
		if res, err = ad.Embed(pctx, t, &adapter.EmbedRequest{Inputs: []string{"ping"}}); res != nil {
			usage = res.Usage
		}
	default:
		var res *adapter.ChatResult
		if res, err = ad.Chat(pctx, t, probeChat()); res != nil {
			usage = res.Usage
		}
	}
	out := outcome{sent: true}
	if usage.Known {
		out.cost = d.Prices.CostMicros(usage.Prompt, usage.Completion, usage.Cached)
	}
	rec.LatencyMS = time.Since(start).Milliseconds()
	class := adapter.ClassOf(err)
	if ctx.Err() != nil {
		class = adapter.ClassCancelled
	}
	var ue *adapter.Error
	if errors.As(err, &ue) {
		rec.HTTPStatus = ue.Status
	}
	rec.Class = string(class)
	if err != nil {
		rec.Message = err.Error()
	}
	switch {
	case err == nil || class == adapter.ClassContentFilter:
		rec.Outcome, rec.Class = store.ProbeOK, ""
		out.verdict = health.ProbePassed
	case class.Policy().Breaker:
		rec.Outcome = store.ProbeFailed
		out.verdict = health.ProbeFailed
	default:
		rec.Outcome = store.ProbeInconclusive
		out.verdict = health.NoProbe
	}
	out.rec = rec
	return out
}
