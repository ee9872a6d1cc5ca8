package worker

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
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
	Pick(providerID int64, keyIDs []int64, tried func(int64) bool) (keyID int64, skip reason.Reason, ok bool)
}

// Prober sends every enabled deployment of the live configuration a minimal
// real request — a chat completion capped at one token, or an embedding of
// one short input — and then scores every deployment on the health board.
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
	// Keep is how long probes are kept (default 7 days).
	Keep time.Duration
}

// probeChat is the probe's chat request: one token of answer.
var probeChat = sync.OnceValue(func() *adapter.ChatRequest {
	r, err := adapter.ParseChatRequest([]byte(`{"model":"probe","messages":[{"role":"user","content":"ping"}],"max_tokens":1}`))
	if err != nil {
		panic("worker: probe request: " + err.Error())
	}
	return r
})

// Job is the prober as a singleton job.
func (p *Prober) Job(every time.Duration) Job {
	return Job{
		Name:        "health-probe",
		Description: "Sends every enabled deployment a minimal real request (1-token chat, or a one-input embedding), then scores every deployment over its window of probes and live traffic and updates its health state. Disabled deployments, providers and keys are never probed or re-enabled.",
		Every:       every,
		Timeout:     max(2*p.timeout(), time.Minute),
		Run:         p.Run,
	}
}

func (p *Prober) timeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return 10 * time.Second
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

	results := make([]store.Probe, len(targets))
	verdicts := make([]health.Probe, len(targets))
	n := p.Concurrency
	if n <= 0 {
		n = 8
	}
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, d := range targets {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return "", ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], verdicts[i] = p.probe(ctx, d)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}

	samples := map[int64]health.Counts{}
	probes := map[int64]health.Probe{}
	var nOK, nFailed, nInconclusive int
	for i, d := range targets {
		probes[d.ID] = verdicts[i]
		switch verdicts[i] {
		case health.ProbePassed:
			samples[d.ID] = health.Counts{ProbeOK: 1}
			nOK++
		case health.ProbeFailed:
			samples[d.ID] = health.Counts{ProbeFailed: 1}
			nFailed++
		default:
			nInconclusive++
		}
	}
	if err := p.Board.Add(ctx, samples); err != nil {
		return "", err
	}
	changes, states, err := p.Board.Evaluate(ctx, ids, probes)
	if err != nil {
		return "", err
	}

	summary := fmt.Sprintf("probed %d of %d deployments: %d ok, %d failed, %d inconclusive", len(targets), len(ids), nOK, nFailed, nInconclusive)
	var down []string
	for _, id := range ids {
		if states[id].State == health.Down {
			down = append(down, rt.Deployments[id].Label())
		}
	}
	if len(down) > 0 {
		summary += "; down: " + strings.Join(down, ", ")
	}
	for _, c := range changes {
		summary += fmt.Sprintf("; %s: %s → %s", rt.Deployments[c.DeploymentID].Label(), c.From, c.To)
	}
	if p.Log == nil {
		return summary, nil
	}
	events := make([]store.HealthEvent, 0, len(changes))
	for _, c := range changes {
		e := store.HealthEvent{DeploymentID: c.DeploymentID, At: c.At, From: string(c.From), To: string(c.To), Samples: c.Samples, Reason: c.Reason}
		if c.Samples > 0 {
			e.Score = sql.NullFloat64{Float64: c.Score, Valid: true}
		}
		events = append(events, e)
	}
	err = errors.Join(p.Log.AddProbes(ctx, results), p.Log.AddHealthEvents(ctx, events))
	keep := p.Keep
	if keep <= 0 {
		keep = 7 * 24 * time.Hour
	}
	if _, perr := p.Log.PruneProbes(ctx, time.Now().Add(-keep)); perr != nil {
		err = errors.Join(err, perr)
	}
	return summary, err
}

// probe sends one deployment its probe and classifies the outcome: an
// answer passes; a server, timeout or network failure fails; anything else
// (a key or request problem, or our own shutdown) is inconclusive.
func (p *Prober) probe(ctx context.Context, d *config.RDeployment) (store.Probe, health.Probe) {
	rec := store.Probe{DeploymentID: d.ID, At: time.Now()}
	inconclusive := func(msg string) (store.Probe, health.Probe) {
		rec.Outcome, rec.Message = store.ProbeInconclusive, msg
		return rec, health.NoProbe
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
	t := adapter.Target{BaseURL: d.Provider.BaseURL, APIKey: key.Secret, UpstreamModel: d.UpstreamModel, Client: p.Client, Header: d.Provider.Outgoing(nil)}
	start := time.Now()
	var err error
	switch d.Model.Kind {
	case config.KindEmbedding:
		_, err = ad.Embed(pctx, t, &adapter.EmbedRequest{Inputs: []string{"ping"}})
	default:
		_, err = ad.Chat(pctx, t, probeChat())
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
		return rec, health.ProbePassed
	case class.Policy().Breaker:
		rec.Outcome = store.ProbeFailed
		return rec, health.ProbeFailed
	}
	rec.Outcome = store.ProbeInconclusive
	return rec, health.NoProbe
}
