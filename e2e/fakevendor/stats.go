package fakevendor

import (
	"net/http"
	"sync"
	"sync/atomic"
)

// StatusClientGone is recorded instead of an HTTP status when the client went
// away during Latency, before anything was written (nginx's 499).
const StatusClientGone = 499

// Counter is the count of requests for one model, key or protocol and how
// they were answered. Statuses maps HTTP status (or StatusClientGone) to a
// count; a stream is counted with the status it started with.
type Counter struct {
	Requests int64         `json:"requests"`
	Statuses map[int]int64 `json:"statuses"`
}

// Stats is a snapshot of all counters. Models and Keys only list non-empty
// names; Protocols are "openai", "anthropic" and "gemini".
type Stats struct {
	Requests  int64              `json:"requests"`
	Models    map[string]Counter `json:"models"`
	Keys      map[string]Counter `json:"keys"`
	Protocols map[string]Counter `json:"protocols"`
	// InFlight is the vendor requests being served now; MaxInFlight the most
	// served at once since the start or the last Reset (control paths are
	// not counted).
	InFlight    int64 `json:"in_flight"`
	MaxInFlight int64 `json:"max_in_flight"`
	// WebSearch is the generation requests that offered a hosted web-search
	// tool (OpenAI chat web_search_options, a Responses web_search tool, an
	// Anthropic web_search_* server tool, Gemini google_search).
	WebSearch int64 `json:"web_search"`
}

// Request is what the gateway sent upstream, as recorded for a model.
type Request struct {
	Protocol string      `json:"protocol"`
	Method   string      `json:"method"`
	Path     string      `json:"path"`
	RawQuery string      `json:"raw_query,omitempty"`
	Key      string      `json:"key"`
	Header   http.Header `json:"header"`
	Body     []byte      `json:"body"`
	// WebSearch is whether the request offered a hosted web-search tool
	// (see Stats.WebSearch).
	WebSearch bool `json:"web_search"`
}

type counter struct {
	requests atomic.Int64
	statuses sync.Map // int → *atomic.Int64
}

func (c *counter) addStatus(code int) {
	v, ok := c.statuses.Load(code)
	if !ok {
		v, _ = c.statuses.LoadOrStore(code, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

func (c *counter) snapshot() Counter {
	out := Counter{Requests: c.requests.Load(), Statuses: map[int]int64{}}
	c.statuses.Range(func(k, v any) bool {
		out.Statuses[k.(int)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

type counters struct {
	requests  atomic.Int64
	models    sync.Map // string → *counter
	keys      sync.Map // string → *counter
	protocols [numProtocols]atomic.Pointer[counter]
	last      sync.Map // model → *Request
	inFlight  atomic.Int64
	maxFlight atomic.Int64
	webSearch atomic.Int64
}

// enter counts a request in flight and returns its leave.
func (cs *counters) enter() (leave func()) {
	n := cs.inFlight.Add(1)
	for {
		m := cs.maxFlight.Load()
		if n <= m || cs.maxFlight.CompareAndSwap(m, n) {
			break
		}
	}
	return func() { cs.inFlight.Add(-1) }
}

func counterIn(m *sync.Map, name string) *counter {
	v, ok := m.Load(name)
	if !ok {
		v, _ = m.LoadOrStore(name, new(counter))
	}
	return v.(*counter)
}

// begin counts a request and returns the counters its status goes to.
func (cs *counters) begin(p protocol, model, key string) [3]*counter {
	cs.requests.Add(1)
	var out [3]*counter
	out[0] = cs.protocols[p].Load()
	if model != "" {
		out[1] = counterIn(&cs.models, model)
	}
	if key != "" {
		out[2] = counterIn(&cs.keys, key)
	}
	for _, c := range out {
		if c != nil {
			c.requests.Add(1)
		}
	}
	return out
}

func (cs *counters) reset() {
	cs.requests.Store(0)
	cs.webSearch.Store(0)
	cs.maxFlight.Store(cs.inFlight.Load())
	cs.models.Clear()
	cs.keys.Clear()
	cs.last.Clear()
	for i := range cs.protocols {
		cs.protocols[i].Store(new(counter))
	}
}

func snapshotMap(m *sync.Map) map[string]Counter {
	out := map[string]Counter{}
	m.Range(func(k, v any) bool {
		out[k.(string)] = v.(*counter).snapshot()
		return true
	})
	return out
}

// Count is the number of requests for an upstream model.
func (s *Server) Count(model string) int64 {
	if v, ok := s.stats.models.Load(model); ok {
		return v.(*counter).requests.Load()
	}
	return 0
}

// CountKey is the number of requests that carried an API key.
func (s *Server) CountKey(key string) int64 {
	if v, ok := s.stats.keys.Load(key); ok {
		return v.(*counter).requests.Load()
	}
	return 0
}

// CountStatus is the number of requests for a model answered with status.
func (s *Server) CountStatus(model string, status int) int64 {
	v, ok := s.stats.models.Load(model)
	if !ok {
		return 0
	}
	n, ok := v.(*counter).statuses.Load(status)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// Stats returns a snapshot of all counters.
func (s *Server) Stats() Stats {
	st := Stats{
		Requests:    s.stats.requests.Load(),
		Models:      snapshotMap(&s.stats.models),
		Keys:        snapshotMap(&s.stats.keys),
		Protocols:   map[string]Counter{},
		InFlight:    s.stats.inFlight.Load(),
		MaxInFlight: s.stats.maxFlight.Load(),
		WebSearch:   s.stats.webSearch.Load(),
	}
	for p := range numProtocols {
		st.Protocols[p.String()] = s.stats.protocols[p].Load().snapshot()
	}
	return st
}

// Reset zeroes all counters, forgets the recorded requests and restarts the
// FailTimes counts of the rules and of the process-wide fault. Rules stay.
func (s *Server) Reset() {
	s.stats.reset()
	s.defaultHits.Store(0)
	for _, r := range *s.rules.Load() {
		r.hits.Store(0)
	}
}

// LastBody is the body of the last request for an upstream model, or nil.
func (s *Server) LastBody(model string) []byte {
	if r, ok := s.LastRequest(model); ok {
		return r.Body
	}
	return nil
}

// LastRequest is the last request for an upstream model. The returned
// Header is a copy; Body must not be modified.
func (s *Server) LastRequest(model string) (Request, bool) {
	v, ok := s.stats.last.Load(model)
	if !ok {
		return Request{}, false
	}
	r := *v.(*Request)
	r.Header = r.Header.Clone()
	return r, true
}
