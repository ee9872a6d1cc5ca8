package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// ChangeOp is what happened to an object between two snapshots.
type ChangeOp string

const (
	Added   ChangeOp = "added"
	Removed ChangeOp = "removed"
	Changed ChangeOp = "changed"
)

// Change is one semantic difference between two snapshots. Objects are
// matched by name or identity — a provider by name, a deployment by
// provider and upstream model, a candidate by its logic model within its
// tier, a caller key by prefix — never by database id, so ids that
// changed (a rollback or an import recreates rows) are no change at all.
type Change struct {
	Op ChangeOp `json:"op"`
	// Object is the object changed; Kind and Name, with Group and Tier
	// for tiers and candidates and Model for deployments, place it. ID is
	// the newer side's (the removed side's for a removal).
	Object ObjectRef `json:"object"`
	// Field is the changed field in the snapshot's own names ("weight",
	// "prices.input", "limits.deep.rpm"); empty for an addition or removal.
	Field string `json:"field,omitempty"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
}

// Changes lists what changed from a to b, in the canonical order of the
// newer snapshot (removals where the object was).
func Changes(a, b Snapshot) []Change {
	a, b = Clone(a), Clone(b)
	Canonicalize(&a)
	Canonicalize(&b)
	var out []Change
	add := func(c ...Change) { out = append(out, c...) }

	match(a.Tenants, b.Tenants, func(t Tenant) string { return t.Name }, func(x, y *Tenant) {
		add(objectChanges(ObjectRef{Kind: "tenant", Name: pick(x, y, func(t *Tenant) string { return t.Name }), ID: pick(x, y, func(t *Tenant) int64 { return t.ID })}, x, y)...)
	})
	add(providerChanges(a.Providers, b.Providers)...)
	add(modelChanges(a.LogicModels, b.LogicModels)...)
	add(groupChanges(a.RouteGroups, b.RouteGroups)...)
	add(callerChanges(a.Callers, b.Callers)...)
	return out
}

// providerChanges are the changes of providers, their keys and headers.
func providerChanges(a, b []Provider) []Change {
	var out []Change
	add := func(c ...Change) { out = append(out, c...) }
	match(a, b, func(p Provider) string { return p.Name }, func(x, y *Provider) {
		ref := ObjectRef{Kind: "provider", Name: pick(x, y, func(p *Provider) string { return p.Name }), ID: pick(x, y, func(p *Provider) int64 { return p.ID })}
		add(objectChanges(ref, x, y)...)
		if x == nil || y == nil {
			return
		}
		match(x.Keys, y.Keys, func(k ProviderKey) string { return k.Label + "\x00" + k.Fingerprint }, func(kx, ky *ProviderKey) {
			name := pick(kx, ky, func(k *ProviderKey) string { return strings.TrimSpace(k.Label + " " + k.Fingerprint) })
			add(objectChanges(ObjectRef{Kind: "provider_key", Name: name, Group: ref.Name}, kx, ky)...)
		})
		match(x.Headers, y.Headers, func(h ProviderHeader) string { return strings.ToLower(h.Name) }, func(hx, hy *ProviderHeader) {
			hr := ObjectRef{Kind: "provider_header", Name: pick(hx, hy, func(h *ProviderHeader) string { return h.Name }), Group: ref.Name}
			if hx == nil || hy == nil {
				add(objectChanges(hr, hx, hy)...)
				return
			}
			// A secret value is never shown: only that it changed.
			if hx.Secret || hy.Secret {
				if hx.SecretID != hy.SecretID || hx.Secret != hy.Secret || (!hx.Secret && hx.Value != hy.Value) {
					add(Change{Op: Changed, Object: hr, Field: "value", From: headerShown(hx), To: headerShown(hy) + " (new value)"})
				}
				return
			}
			add(objectChanges(hr, hx, hy)...)
		})
	})
	return out
}

// modelChanges are the changes of logic models and their deployments.
func modelChanges(a, b []LogicModel) []Change {
	var out []Change
	add := func(c ...Change) { out = append(out, c...) }
	match(a, b, func(m LogicModel) string { return m.Code }, func(x, y *LogicModel) {
		ref := ObjectRef{Kind: "logic_model", Name: pick(x, y, func(m *LogicModel) string { return m.Code }), ID: pick(x, y, func(m *LogicModel) int64 { return m.ID })}
		ref.Model, ref.ModelID = ref.Name, ref.ID
		add(objectChanges(ref, x, y)...)
		if x == nil || y == nil {
			return
		}
		match(x.Deployments, y.Deployments, func(d Deployment) string { return d.Provider + "/" + d.UpstreamModel }, func(dx, dy *Deployment) {
			dr := ObjectRef{Kind: "deployment", Name: pick(dx, dy, func(d *Deployment) string { return d.Provider + "/" + d.UpstreamModel }),
				ID: pick(dx, dy, func(d *Deployment) int64 { return d.ID }), Model: ref.Name, ModelID: ref.ID}
			add(objectChanges(dr, dx, dy)...)
		})
	})
	return out
}

// groupChanges are the changes of route groups, their tiers, candidates and aliases.
func groupChanges(a, b []RouteGroup) []Change {
	var out []Change
	add := func(c ...Change) { out = append(out, c...) }
	match(a, b, func(g RouteGroup) string { return g.Name }, func(x, y *RouteGroup) {
		ref := ObjectRef{Kind: "route_group", Name: pick(x, y, func(g *RouteGroup) string { return g.Name }), ID: pick(x, y, func(g *RouteGroup) int64 { return g.ID })}
		add(objectChanges(ref, x, y)...)
		if x == nil || y == nil {
			return
		}
		match(x.Tiers, y.Tiers, func(t Tier) string { return string(t.Name) }, func(tx, ty *Tier) {
			tr := ObjectRef{Kind: "tier", Name: ref.Name + " / " + string(pick(tx, ty, func(t *Tier) TierName { return t.Name })),
				ID: pick(tx, ty, func(t *Tier) int64 { return t.ID }), Group: ref.Name, Tier: pick(tx, ty, func(t *Tier) TierName { return t.Name })}
			add(objectChanges(tr, tx, ty)...)
			if tx == nil || ty == nil {
				return
			}
			match(keyedCandidates(tx.Candidates), keyedCandidates(ty.Candidates), func(k keyed[Candidate]) string { return k.key }, func(kx, ky *keyed[Candidate]) {
				var cx, cy *Candidate
				if kx != nil {
					cx = &kx.v
				}
				if ky != nil {
					cy = &ky.v
				}
				cr := ObjectRef{Kind: "candidate", Name: pick(cx, cy, func(c *Candidate) string { return c.LogicModel }),
					ID: pick(cx, cy, func(c *Candidate) int64 { return c.ID }), Group: ref.Name, Tier: tr.Tier, Model: pick(cx, cy, func(c *Candidate) string { return c.LogicModel })}
				add(objectChanges(cr, cx, cy)...)
			})
		})
		add(aliasChanges(ref, x.Aliases, y.Aliases)...)
	})
	return out
}

// callerChanges are the changes of callers, their limits and keys.
func callerChanges(a, b []Caller) []Change {
	var out []Change
	add := func(c ...Change) { out = append(out, c...) }
	match(a, b, func(c Caller) string { return c.Name }, func(x, y *Caller) {
		ref := ObjectRef{Kind: "caller", Name: pick(x, y, func(c *Caller) string { return c.Name }), ID: pick(x, y, func(c *Caller) int64 { return c.ID })}
		add(objectChanges(ref, x, y)...)
		if x == nil || y == nil {
			return
		}
		for _, t := range TierNames {
			lx, ly := x.Limit(t), y.Limit(t)
			for _, f := range []struct {
				name   string
				va, vb int64
			}{{"rpm", lx.RPM, ly.RPM}, {"tpm", lx.TPM, ly.TPM}, {"daily_tokens", lx.DailyTokens, ly.DailyTokens}} {
				if f.va != f.vb {
					add(Change{Op: Changed, Object: ref, Field: "limits." + string(t) + "." + f.name, From: strconv.FormatInt(f.va, 10), To: strconv.FormatInt(f.vb, 10)})
				}
			}
		}
		match(x.Keys, y.Keys, func(k CallerKey) string { return k.Prefix }, func(kx, ky *CallerKey) {
			add(objectChanges(ObjectRef{Kind: "caller_key", Name: pick(kx, ky, func(k *CallerKey) string { return k.Prefix }), Group: ref.Name}, kx, ky)...)
		})
	})
	return out
}

// aliasChanges compares a group's aliases, matched by pattern (and, for a
// pattern listed twice, its occurrence). Besides their targets, the order
// of the patterns is compared (the first that matches wins; the order of
// exact aliases means nothing): Field "order", the place among the
// group's patterns, from 1.
func aliasChanges(group ObjectRef, a, b []ModelAlias) []Change {
	var out []Change
	ka, kb := keyedAliases(a), keyedAliases(b)
	match(ka, kb, func(k keyed[ModelAlias]) string { return k.key }, func(x, y *keyed[ModelAlias]) {
		var ax, ay *ModelAlias
		if x != nil {
			ax = &x.v
		}
		if y != nil {
			ay = &y.v
		}
		ref := ObjectRef{Kind: "model_alias", Name: pick(ax, ay, func(m *ModelAlias) string { return m.Pattern }), ID: group.ID, Group: group.Name}
		out = append(out, objectChanges(ref, ax, ay)...)
		if x != nil && y != nil && x.order != y.order {
			out = append(out, Change{Op: Changed, Object: ref, Field: "order", From: strconv.Itoa(x.order), To: strconv.Itoa(y.order)})
		}
	})
	return out
}

// keyedAliases keys aliases by pattern and occurrence, with each pattern's
// place among the group's patterns (0 for an exact alias) in order.
func keyedAliases(as []ModelAlias) []keyed[ModelAlias] {
	seen := map[string]int{}
	out := make([]keyed[ModelAlias], len(as))
	n := 0
	for i, a := range as {
		out[i] = keyed[ModelAlias]{key: a.Pattern + "#" + strconv.Itoa(seen[a.Pattern]), v: a}
		seen[a.Pattern]++
		if !a.Exact() {
			n++
			out[i].order = n
		}
	}
	return out
}

func headerShown(h *ProviderHeader) string {
	if h.Secret {
		return SecretSet
	}
	return h.Value
}

type keyed[T any] struct {
	key   string
	v     T
	order int // place in a list whose order matters (aliases' patterns)
}

// keyedCandidates keys a tier's candidates by logic model and, for a
// model listed twice, its occurrence.
func keyedCandidates(cs []Candidate) []keyed[Candidate] {
	seen := map[string]int{}
	out := make([]keyed[Candidate], len(cs))
	for i, c := range cs {
		out[i] = keyed[Candidate]{key: c.LogicModel + "#" + strconv.Itoa(seen[c.LogicModel]), v: c}
		seen[c.LogicModel]++
	}
	return out
}

// match pairs the elements of a and b by key and calls fn(x, y) for each:
// both set when the object is in both, x nil for an addition, y nil for a
// removal; pairs and additions in b's order, then removals in a's.
func match[T any](a, b []T, key func(T) string, fn func(x, y *T)) {
	kb := key
	inA := make(map[string]int, len(a))
	for i := range a {
		inA[key(a[i])] = i
	}
	seen := make(map[int]bool, len(a))
	for i := range b {
		if j, ok := inA[kb(b[i])]; ok {
			seen[j] = true
			fn(&a[j], &b[i])
		} else {
			fn(nil, &b[i])
		}
	}
	for j := range a {
		if !seen[j] {
			fn(&a[j], nil)
		}
	}
}

// pick reads a value from the newer side, else the older.
func pick[T, V any](x, y *T, get func(*T) V) V {
	if y != nil {
		return get(y)
	}
	return get(x)
}

// objectChanges compares the scalar fields of one object (nested lists are
// compared by their own match); x nil is an addition, y nil a removal.
func objectChanges[T any](ref ObjectRef, x, y *T) []Change {
	switch {
	case x == nil && y == nil:
		return nil
	case x == nil:
		return []Change{{Op: Added, Object: ref}}
	case y == nil:
		return []Change{{Op: Removed, Object: ref}}
	}
	var fa, fb []field
	scalarFields(reflect.ValueOf(*x), "", &fa)
	scalarFields(reflect.ValueOf(*y), "", &fb)
	var out []Change
	for i := range fa {
		if fa[i].value != fb[i].value {
			out = append(out, Change{Op: Changed, Object: ref, Field: fa[i].name, From: fa[i].value, To: fb[i].value})
		}
	}
	return out
}

type field struct{ name, value string }

var stringerType = reflect.TypeFor[fmt.Stringer]()

// scalarFields lists a struct's fields by their YAML names, nested structs
// flattened with dots, except ids and lists of objects.
func scalarFields(v reflect.Value, prefix string, out *[]field) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || name == "id" || name == "secret_id" {
			continue
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				fv = reflect.Zero(sf.Type.Elem())
			} else {
				fv = fv.Elem()
			}
		}
		switch {
		case fv.Type().Implements(stringerType):
			*out = append(*out, field{prefix + name, fv.Interface().(fmt.Stringer).String()})
		case fv.Kind() == reflect.Struct:
			scalarFields(fv, prefix+name+".", out)
		case fv.Kind() == reflect.Slice:
			if fv.Type().Elem().Kind() == reflect.String {
				parts := make([]string, fv.Len())
				for j := range parts {
					parts[j] = fv.Index(j).String()
				}
				*out = append(*out, field{prefix + name, strings.Join(parts, ", ")})
			}
		default:
			*out = append(*out, field{prefix + name, fmt.Sprint(fv.Interface())})
		}
	}
}

// WithoutIDs removes the database ids from a snapshot's canonical text
// (every "id: N" line; a list item's first line "- id: N" hands its dash
// to the next field), so a text diff shows what changed, not which rows a
// rollback or an import recreated. secret_id stays: it changes exactly when
// a secret header's value does.
func WithoutIDs(text string) string {
	lines := strings.Split(text, "\n")
	out := make([]string, 0, len(lines))
	dash, pending := "", false
	for _, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		indent := l[:len(l)-len(trimmed)]
		if rest, ok := strings.CutPrefix(trimmed, "- id: "); ok && isDigits(rest) {
			dash, pending = indent, true // the next line, two deeper, becomes the item's first
			continue
		}
		if rest, ok := strings.CutPrefix(trimmed, "id: "); ok && isDigits(rest) {
			continue
		}
		if pending {
			if len(indent) == len(dash)+2 {
				l = dash + "- " + trimmed
			}
			pending = false
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
