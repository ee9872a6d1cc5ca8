package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"

	"go.yaml.in/yaml/v3"
)

// ErrFormat wraps every error of Decode.
var ErrFormat = errors.New("config: invalid snapshot text")

// Canonicalize puts every list of s into its canonical order so that the same
// configuration always encodes to the same bytes. It also fills nil slices,
// which YAML would otherwise print as "null" in one place and "[]" in another.
func Canonicalize(s *Snapshot) {
	if s.Format == "" {
		s.Format = FormatV1
	}
	s.Tenants = nonNil(s.Tenants)
	slices.SortFunc(s.Tenants, func(a, b Tenant) int { return cmp.Compare(a.Name, b.Name) })

	s.Providers = nonNil(s.Providers)
	slices.SortFunc(s.Providers, func(a, b Provider) int { return cmp.Compare(a.Name, b.Name) })
	for i := range s.Providers {
		p := &s.Providers[i]
		p.Keys = nonNil(p.Keys)
		slices.SortFunc(p.Keys, func(a, b ProviderKey) int { return cmp.Compare(a.ID, b.ID) })
		CanonicalHeaders(p)
	}

	s.LogicModels = nonNil(s.LogicModels)
	slices.SortFunc(s.LogicModels, func(a, b LogicModel) int { return cmp.Compare(a.Code, b.Code) })
	for i := range s.LogicModels {
		m := &s.LogicModels[i]
		m.Deployments = nonNil(m.Deployments)
		slices.SortFunc(m.Deployments, func(a, b Deployment) int {
			return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.UpstreamModel, b.UpstreamModel), cmp.Compare(a.ID, b.ID))
		})
	}

	s.RouteGroups = nonNil(s.RouteGroups)
	slices.SortFunc(s.RouteGroups, func(a, b RouteGroup) int { return cmp.Compare(a.Name, b.Name) })
	for i := range s.RouteGroups {
		g := &s.RouteGroups[i]
		canonicalResilience(g)
		g.Tiers = nonNil(g.Tiers)
		slices.SortFunc(g.Tiers, func(a, b Tier) int { return cmp.Compare(tierIndex(a.Name), tierIndex(b.Name)) })
		for j := range g.Tiers {
			t := &g.Tiers[j]
			t.Candidates = nonNil(t.Candidates)
			slices.SortFunc(t.Candidates, func(a, b Candidate) int {
				return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.LogicModel, b.LogicModel), cmp.Compare(a.ID, b.ID))
			})
		}
	}

	s.Callers = nonNil(s.Callers)
	slices.SortFunc(s.Callers, func(a, b Caller) int { return cmp.Compare(a.Name, b.Name) })
	for i := range s.Callers {
		c := &s.Callers[i]
		c.Limits = nonNil(c.Limits)
		slices.SortFunc(c.Limits, func(a, b TierLimit) int { return cmp.Compare(tierIndex(a.Tier), tierIndex(b.Tier)) })
		c.Keys = nonNil(c.Keys)
		slices.SortFunc(c.Keys, func(a, b CallerKey) int { return cmp.Compare(a.ID, b.ID) })
	}
}

func tierIndex(t TierName) int {
	if i := slices.Index(TierNames, t); i >= 0 {
		return i
	}
	return len(TierNames)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Encode returns the canonical text of s: YAML with fields in declaration
// order and lists in canonical order. Encode canonicalizes a copy; s is not
// modified.
func Encode(s Snapshot) ([]byte, error) {
	c := Clone(s)
	Canonicalize(&c)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&c); err != nil {
		return nil, fmt.Errorf("config: encode snapshot: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("config: encode snapshot: %w", err)
	}
	return buf.Bytes(), nil
}

// Decode parses snapshot text (YAML, or JSON, which YAML accepts). Unknown
// fields and a missing or unknown format are refused, so a typo in an
// imported file is an error rather than a silently dropped setting.
func Decode(text []byte) (Snapshot, error) {
	var s Snapshot
	dec := yaml.NewDecoder(bytes.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return s, fmt.Errorf("%w: the text is empty", ErrFormat)
		}
		return s, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return s, fmt.Errorf("%w: more than one YAML document", ErrFormat)
	}
	if s.Format != FormatV1 {
		return s, fmt.Errorf("%w: format %q is not %q", ErrFormat, s.Format, FormatV1)
	}
	Canonicalize(&s)
	return s, nil
}

// Clone returns a deep copy of s.
func Clone(s Snapshot) Snapshot {
	c := s
	c.Tenants = slices.Clone(s.Tenants)
	c.Providers = slices.Clone(s.Providers)
	for i := range c.Providers {
		c.Providers[i].Keys = slices.Clone(c.Providers[i].Keys)
		c.Providers[i].Headers = slices.Clone(c.Providers[i].Headers)
		c.Providers[i].PassHeaders = slices.Clone(c.Providers[i].PassHeaders)
	}
	c.LogicModels = slices.Clone(s.LogicModels)
	for i := range c.LogicModels {
		ds := slices.Clone(c.LogicModels[i].Deployments)
		for j := range ds {
			if ds[j].Breaker != nil {
				b := *ds[j].Breaker
				ds[j].Breaker = &b
			}
		}
		c.LogicModels[i].Deployments = ds
	}
	c.RouteGroups = slices.Clone(s.RouteGroups)
	for i := range c.RouteGroups {
		ts := slices.Clone(c.RouteGroups[i].Tiers)
		for j := range ts {
			ts[j].Candidates = slices.Clone(ts[j].Candidates)
		}
		c.RouteGroups[i].Tiers = ts
		cloneResilience(&c.RouteGroups[i])
	}
	c.Callers = slices.Clone(s.Callers)
	for i := range c.Callers {
		c.Callers[i].Limits = slices.Clone(c.Callers[i].Limits)
		c.Callers[i].Keys = slices.Clone(c.Callers[i].Keys)
	}
	return c
}
