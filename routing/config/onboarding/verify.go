package onboarding

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
	"switchyard/routing/frontdoor"
)

// Verifier checks keys with a minimal real call through the protocol's
// adapter: the model list, else a one-token chat.
type Verifier struct {
	Adapters map[config.Protocol]adapter.Adapter
	// Client must have no Timeout: Verify bounds each call by its context.
	Client *http.Client
	// Timeout bounds one key's verification (default 10 s).
	Timeout time.Duration
	// Concurrency is how many keys VerifyAll checks at once (default
	// DefaultConcurrency): a pasted list of a hundred keys must not open a
	// hundred connections to the vendor at the same moment.
	Concurrency int
}

// DefaultConcurrency is how many keys VerifyAll checks at once unless the
// Verifier says otherwise.
const DefaultConcurrency = 4

// DefaultAdapters are the adapters of every protocol this build speaks.
func DefaultAdapters() map[config.Protocol]adapter.Adapter { return adapter.All() }

// Verdict is the outcome of verifying one key, in words.
type Verdict struct {
	Fingerprint string
	OK          bool          // the key works (a rate-limited key works too)
	Class       adapter.Class // failure class, "" when it answered
	Text        string        // "reachable, 3 models listed", "key rejected (401)", …
	Models      []string      // what the model list returned
}

// Probe is what a verification needs to know about the provider.
type Probe struct {
	Protocol config.Protocol
	BaseURL  string
	// Model is tried with a one-token chat when the model list is not
	// available (some compatible servers have no /models); Bedrock, which
	// lists no models to a runtime credential, verifies with it at once.
	Model string
	// APIVersion, Region, AuthURL and Project are a cloud provider's
	// settings.
	APIVersion, Region, AuthURL, Project string
}

// VerifyAll verifies keys, at most Concurrency at a time, and answers the
// verdicts in input order.
func (v *Verifier) VerifyAll(ctx context.Context, p Probe, keys []string) []Verdict {
	n := v.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	out := make([]Verdict, len(keys))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, k := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = v.Verify(ctx, p, k)
		}()
	}
	wg.Wait()
	return out
}

// Verify makes the minimal real call with key and describes the outcome.
// Nothing is stored.
func (v *Verifier) Verify(ctx context.Context, p Probe, key string) Verdict {
	vd := Verdict{Fingerprint: config.KeyFingerprint(key)}
	a, ok := v.Adapters[p.Protocol]
	if !ok {
		vd.Class, vd.Text = adapter.ClassBadRequest, "protocol "+string(p.Protocol)+" is not implemented by this build"
		return vd
	}
	timeout := v.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := v.Client
	if client == nil {
		client = http.DefaultClient
	}
	t := adapter.Target{BaseURL: p.BaseURL, APIKey: key, Client: client, APIVersion: p.APIVersion, Region: p.Region, AuthURL: p.AuthURL, Project: p.Project}
	if p.Protocol == config.ProtocolBedrock {
		t.UpstreamModel = p.Model
	}
	list, err := a.ListModels(ctx, t)
	if err == nil {
		vd.OK, vd.Models = true, list.Models
		vd.Text = fmt.Sprintf("reachable, %d %s listed", len(list.Models), plural(len(list.Models), "model", "models"))
		return vd
	}
	// A missing or refused model list says nothing about the key when the
	// server answered: try the smallest real chat instead.
	if c := adapter.ClassOf(err); (c == adapter.ClassBadRequest || c == adapter.ClassServer) && p.Model != "" {
		req, perr := frontdoor.ParseChatRequest([]byte(`{"model":"verify","max_tokens":1,"messages":[{"role":"user","content":"ping"}]}`))
		if perr != nil {
			return describe(vd, perr, timeout)
		}
		t.UpstreamModel = p.Model
		if _, cerr := a.Chat(ctx, t, req); cerr == nil {
			vd.OK, vd.Text = true, "reachable: "+p.Model+" answered a 1-token test (no model list)"
			return vd
		} else {
			err = cerr
		}
	}
	return describe(vd, err, timeout)
}

// describe puts a classified failure into words.
func describe(vd Verdict, err error, timeout time.Duration) Verdict {
	vd.Class = adapter.ClassOf(err)
	var ue *adapter.Error
	errors.As(err, &ue)
	status, msg := 0, ""
	if ue != nil {
		status, msg = ue.Status, vendorMessage(ue)
	}
	switch vd.Class {
	case adapter.ClassAuth:
		vd.Text = "key rejected" + paren(status) + msg
	case adapter.ClassBilling:
		vd.Text = "billing problem" + paren(status) + msg
	case adapter.ClassRateLimited:
		vd.OK = true // the key is valid, just busy
		vd.Text = "rate limited"
		if ue != nil && ue.RetryAfter > 0 {
			vd.Text += fmt.Sprintf(" (retry after %s)", ue.RetryAfter.Round(time.Second))
		}
		vd.Text += ": the key is valid, the vendor is throttling it"
	case adapter.ClassTimeout:
		vd.Text = fmt.Sprintf("no answer within %s", timeout)
	case adapter.ClassNetwork:
		vd.Text = "cannot connect: " + networkReason(err)
	case adapter.ClassServer:
		vd.Text = "vendor error" + paren(status) + msg
	case adapter.ClassBadRequest:
		vd.Text = "request refused" + paren(status) + msg
	default:
		vd.Text = err.Error()
	}
	return vd
}

func paren(status int) string {
	if status == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d)", status)
}

func vendorMessage(e *adapter.Error) string {
	m := strings.TrimSpace(e.Message)
	if m == "" {
		return ""
	}
	if len(m) > 200 {
		m = m[:200] + "…"
	}
	return ": " + m
}

// networkReason names a transport failure without Go's wrapping noise.
func networkReason(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	var ue *url.Error
	switch {
	case errors.As(err, &dns):
		return "host " + dns.Name + " not found"
	case errors.As(err, &op) && op.Op == "dial":
		if op.Err != nil {
			return "connection to " + addrOf(op) + " failed (" + op.Err.Error() + ")"
		}
		return "connection to " + addrOf(op) + " failed"
	case errors.As(err, &ue):
		return ue.Err.Error()
	}
	return err.Error()
}

func addrOf(op *net.OpError) string {
	if op.Addr != nil {
		return op.Addr.String()
	}
	return "the server"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
