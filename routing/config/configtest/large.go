// Package configtest generates large, valid configurations for the tests
// and benchmarks of configuration at scale (import, publish, rollback,
// compile, the data plane with many route groups). The output is
// deterministic: the same Size always gives the same snapshot, so a failing
// test or a benchmark figure can be reproduced.
package configtest

import (
	"fmt"

	"switchyard/routing/config"
)

// Size is how large a generated configuration is.
type Size struct {
	Tenants     int
	Providers   int
	Deployments int // spread five per logic model
	Groups      int // route groups, each with three tiers of four candidates
	Callers     int
}

// Large is the configuration of the scale targets: 500 route groups, 5,000
// deployments and 500 callers (about 1.8 MB of canonical text once the
// store has given every object an id and every provider two keys).
var Large = Size{Tenants: 5, Providers: 50, Deployments: 5000, Groups: 500, Callers: 500}

// Small is Large scaled down a hundredfold for tests that must stay cheap.
var Small = Size{Tenants: 2, Providers: 6, Deployments: 50, Groups: 5, Callers: 5}

// deploymentsPerModel is how many providers serve each logic model.
const deploymentsPerModel = 5

// candidatesPerTier is the length of every generated tier's chain.
const candidatesPerTier = 4

// Generate returns a configuration of size sz whose providers all point at
// baseURL. Objects carry no ids (the store assigns them) and providers no
// keys (their secrets are not configuration; see WithProviderKeys). Every
// candidate reaches a usable deployment once each provider has an active
// key, so the snapshot passes the blocking dry-run checks; it has the usual
// warnings of a large installation (unused models, parked deployments).
//
// What varies, so that every column and every reference kind is exercised:
// three protocols, static and pass-through headers, disabled providers and
// deployments, parked deployments, concurrency caps, breaker overrides,
// embedding models with dimensions and prefixes, dedicated route groups of
// tenants with and without a fallback, canary weights and priority levels,
// batch and interactive callers, per-tier limits and budgets.
func Generate(sz Size, baseURL string) config.Snapshot {
	s := config.Snapshot{Format: config.FormatV1}
	for i := range sz.Tenants {
		s.Tenants = append(s.Tenants, config.Tenant{Name: fmt.Sprintf("tenant-%02d", i), Description: describe(i, "business unit")})
	}
	openai := genProviders(&s, sz, baseURL)
	chat, embed := genModels(&s, sz, openai)
	genGroups(&s, sz, chat, embed)
	genCallers(&s, sz)
	config.Canonicalize(&s)
	return s
}

// genProviders adds the providers and returns the names of the enabled
// OpenAI-protocol ones, for embedding models.
func genProviders(s *config.Snapshot, sz Size, baseURL string) []string {
	protocols := []config.Protocol{config.ProtocolOpenAI, config.ProtocolOpenAI, config.ProtocolAnthropic, config.ProtocolOpenAI, config.ProtocolGemini}
	var openai []string // names of enabled OpenAI-protocol providers, for embedding models
	for i := range sz.Providers {
		p := config.Provider{
			Name:      fmt.Sprintf("provider-%03d", i),
			Protocol:  protocols[i%len(protocols)],
			BaseURL:   baseURL,
			Enabled:   i%17 != 16,
			TimeoutMS: 30000 + 1000*(i%5),
			Notes:     describe(i, "contract"),
		}
		if i%5 == 1 {
			p.Headers = []config.ProviderHeader{{Name: "X-Org-Id", Value: fmt.Sprintf("org-%04d", i)}}
			p.PassHeaders = []string{"X-Trace-Id"}
		}
		if p.Protocol == config.ProtocolOpenAI && p.Enabled {
			openai = append(openai, p.Name)
		}
		s.Providers = append(s.Providers, p)
	}

	return openai
}

// genModels adds the logic models with their deployments and returns the
// chat and embedding models' codes.
func genModels(s *config.Snapshot, sz Size, openai []string) (chat, embed []string) {
	nModels := max(1, sz.Deployments/deploymentsPerModel)
	for m := range nModels {
		lm := config.LogicModel{Code: fmt.Sprintf("model-%04d", m), Kind: config.KindChat, Description: describe(m, "model family")}
		if m%20 == 19 && len(openai) > 0 {
			lm.Kind, lm.EmbeddingDimension = config.KindEmbedding, 1536
			if m%40 == 39 {
				lm.QueryPrefix, lm.DocumentPrefix = "query: ", "passage: "
			}
		}
		n := deploymentsPerModel
		if m == nModels-1 {
			n = max(1, sz.Deployments-deploymentsPerModel*(nModels-1))
		}
		weights := splitWeights(n)
		for j := range n {
			var provider string
			if lm.Kind == config.KindEmbedding {
				provider = openai[(m+j)%len(openai)]
			} else {
				provider = s.Providers[(m*7+j*11)%len(s.Providers)].Name
			}
			lm.Deployments = append(lm.Deployments, genDeployment(m, j, n, provider, weights[j], lm.Kind))
		}
		if lm.Kind == config.KindEmbedding {
			embed = append(embed, lm.Code)
		} else {
			chat = append(chat, lm.Code)
		}
		s.LogicModels = append(s.LogicModels, lm)
	}

	return chat, embed
}

// genDeployment is deployment j of n of model m.
func genDeployment(m, j, n int, provider string, weight int, kind config.Kind) config.Deployment {
	d := config.Deployment{
		Provider:      provider,
		UpstreamModel: fmt.Sprintf("vendor-%04d-%c", m, 'a'+j),
		Weight:        weight,
		Enabled:       !(j == 1 && m%13 == 0),
		Prices: config.Prices{
			InputMicros:  config.Micros(150_000 + 50_000*(m%17)),
			OutputMicros: config.Micros(600_000 + 200_000*(m%17)),
			Currency:     "USD",
		},
		Capabilities: config.Capabilities{Thinking: m%4 == 0, Vision: m%3 == 0, Tools: m%5 != 0, StructuredOutput: j == 0 && m%6 == 0},
	}
	if m%2 == 0 {
		d.Prices.CachedMicros = d.Prices.InputMicros / 10
	}
	if m%3 == 0 {
		d.MaxConcurrency = 16 << (j % 3)
	}
	if j == n-1 && n > 1 {
		d.TimeoutMS = 20000
	}
	if kind == config.KindEmbedding {
		d.EmbeddingBatchLimit = 256
	}
	if m%50 == 0 {
		d.Breaker = &config.BreakerSettings{Window: 100, MinCalls: 30, FailurePercent: 50, OpenMS: 30000, HalfOpenProbes: 2}
	}
	return d
}

// genGroups adds the route groups, each tier with its candidates.
func genGroups(s *config.Snapshot, sz Size, chat, embed []string) {
	for g := range sz.Groups {
		rg := config.RouteGroup{Name: fmt.Sprintf("group-%04d", g), Description: describe(g, "product line")}
		if sz.Tenants > 0 && g%25 == 24 {
			rg.Tenant, rg.Fallback = s.Tenants[(g/25)%sz.Tenants].Name, "group-0000"
			if g%50 == 49 {
				rg.Fallback = config.FallbackNone
			}
		}
		pool := chat
		if g%10 == 9 && len(embed) > 0 {
			pool = embed // an embedding group: every tier serves vectors
		}
		for ti, name := range config.TierNames {
			t := config.Tier{Name: name, TimeoutMS: config.DefaultTierTimeoutMS[name], FirstChunkTimeoutMS: config.DefaultFirstChunkTimeoutMS[name]}
			if g%7 == 3 {
				t.TimeoutMS += 5000
			}
			n := min(candidatesPerTier, len(pool))
			for k := range n {
				c := config.Candidate{LogicModel: pool[(g*5+ti*(len(pool)/3+1)+k)%len(pool)]}
				switch k {
				case 0:
					c.Priority, c.Weight = 1, 90
				case 1:
					c.Priority, c.Weight = 1, 10 // the canary beside the first
				default:
					c.Priority, c.Weight = k, 100
				}
				t.Candidates = append(t.Candidates, c)
			}
			rg.Tiers = append(rg.Tiers, t)
		}
		s.RouteGroups = append(s.RouteGroups, rg)
	}

}

// genCallers adds the callers with their limits and budgets.
func genCallers(s *config.Snapshot, sz Size) {
	for c := range sz.Callers {
		g := &s.RouteGroups[c%max(1, len(s.RouteGroups))]
		cl := config.Caller{
			Name:          fmt.Sprintf("caller-%04d", c),
			BusinessLine:  fmt.Sprintf("line-%02d", c%40),
			Tenant:        g.Tenant,
			RouteGroup:    g.Name,
			PriorityClass: config.ClassInteractive,
			Enabled:       c%50 != 17,
		}
		if c%4 == 3 {
			cl.PriorityClass = config.ClassBatch
		}
		for ti, name := range config.TierNames {
			if (c+ti)%5 == 4 {
				continue // no limits on this tier
			}
			cl.Limits = append(cl.Limits, config.TierLimit{Tier: name, RPM: int64(600 + 10*c), TPM: int64(200_000 + 1000*c), DailyTokens: int64(50_000_000 + 100_000*(c%100))})
		}
		if c%3 == 0 {
			cl.MonthlyBudgetMicros, cl.BudgetCurrency = config.Micros(500+c)*config.Unit, "USD"
		}
		s.Callers = append(s.Callers, cl)
	}
}

// splitWeights gives n deployments weights that sum to 100 over the
// unparked ones, parking the last of five (40/30/20/10/0).
func splitWeights(n int) []int {
	switch n {
	case 1:
		return []int{100}
	case deploymentsPerModel:
		return []int{40, 30, 20, 10, 0}
	}
	w := make([]int, n)
	for i := range w {
		w[i] = 100 / n
	}
	w[0] += 100 - (100/n)*n
	return w
}

// describe gives every third object a description, so the optional text
// fields are both present and absent.
func describe(i int, what string) string {
	if i%3 != 0 {
		return ""
	}
	return fmt.Sprintf("%s %d, generated for the scale tests", what, i)
}

// WithProviderKeys returns s with every provider's id and keys taken from
// the same-named provider of from (typically the store's draft after the
// providers and their keys were created), so the snapshot refers to keys
// this installation holds.
func WithProviderKeys(s config.Snapshot, from []config.Provider) config.Snapshot {
	s = config.Clone(s)
	byName := make(map[string]config.Provider, len(from))
	for _, p := range from {
		byName[p.Name] = p
	}
	for i := range s.Providers {
		if p, ok := byName[s.Providers[i].Name]; ok {
			s.Providers[i].ID, s.Providers[i].Keys = p.ID, append([]config.ProviderKey(nil), p.Keys...)
		}
	}
	return s
}
