package config

import (
	"fmt"
	"strconv"
)

// ValidateSnapshot runs the per-entity validators and the reference checks
// that a relational draft cannot represent otherwise.
func ValidateSnapshot(s Snapshot) error {
	f := FieldErrors{}
	add := func(obj string, fe FieldErrors) {
		for k, v := range fe {
			f.Add(obj+"."+k, v)
		}
	}
	providers, models, groups, tenants := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, t := range s.Tenants {
		add("tenant "+t.Name, ValidateTenant(t))
		tenants[t.Name] = true
	}
	for _, p := range s.Providers {
		add("provider "+p.Name, ValidateProvider(p))
		providers[p.Name] = true
		for _, k := range p.Keys {
			if k.Status != KeyActive && k.Status != KeyDisabled {
				f.Add("provider "+p.Name+".keys", "key status must be active or disabled")
			}
		}
		for _, h := range p.Headers {
			if h.Secret && !h.KeepsSecret() {
				f.Add("provider "+p.Name+".headers", "the value of secret header "+h.Name+" cannot be part of the configuration text; set it in the console or with PUT /admin/api/providers/{id}")
			}
		}
	}
	for _, m := range s.LogicModels {
		add("logic model "+m.Code, ValidateLogicModel(m))
		models[m.Code] = true
		for _, d := range m.Deployments {
			add("logic model "+m.Code+" deployment "+d.Provider+"/"+d.UpstreamModel, ValidateDeployment(d))
			if !providers[d.Provider] {
				f.Add("logic model "+m.Code+" deployment "+d.UpstreamModel+".provider", "provider "+strconv.Quote(d.Provider)+" does not exist")
			}
		}
	}
	for _, g := range s.RouteGroups {
		groups[g.Name] = true
	}
	for _, g := range s.RouteGroups {
		add("route group "+g.Name, ValidateRouteGroup(g))
		if g.Tenant != "" && !tenants[g.Tenant] {
			f.Add("route group "+g.Name+".tenant", "tenant "+strconv.Quote(g.Tenant)+" does not exist")
		}
		if g.Fallback != "" && g.Fallback != FallbackNone && !groups[g.Fallback] {
			f.Add("route group "+g.Name+".fallback", "route group "+strconv.Quote(g.Fallback)+" does not exist")
		}
		seen := map[TierName]bool{}
		for _, t := range g.Tiers {
			if seen[t.Name] {
				f.Add("route group "+g.Name+".tiers", "tier "+string(t.Name)+" appears twice")
			}
			seen[t.Name] = true
			if !ValidTier(string(t.Name)) {
				f.Add("route group "+g.Name+".tiers", "unknown tier "+strconv.Quote(string(t.Name)))
			}
			for _, c := range t.Candidates {
				add("route group "+g.Name+" "+string(t.Name)+" candidate "+c.LogicModel, ValidateCandidate(c))
				if !models[c.LogicModel] {
					f.Add("route group "+g.Name+" "+string(t.Name)+".candidates", "logic model "+strconv.Quote(c.LogicModel)+" does not exist")
				}
			}
		}
		for i, a := range g.Aliases {
			if a.LogicModel != "" && !models[a.LogicModel] {
				f.Add(fmt.Sprintf("route group %s.aliases[%d].logic_model", g.Name, i), "logic model "+strconv.Quote(a.LogicModel)+" does not exist")
			}
		}
	}
	for _, c := range s.Callers {
		add("caller "+c.Name, ValidateCaller(c))
		if !groups[c.RouteGroup] {
			f.Add("caller "+c.Name+".route_group", "route group "+strconv.Quote(c.RouteGroup)+" does not exist")
		}
		if c.Tenant != "" && !tenants[c.Tenant] {
			f.Add("caller "+c.Name+".tenant", "tenant "+strconv.Quote(c.Tenant)+" does not exist")
		}
	}
	duplicates(s, f)
	return f.Err()
}

// duplicates reports names and ids that a snapshot gives twice: the tables'
// unique keys would refuse them with a database error, and two objects
// with one id would be one row.
func duplicates(s Snapshot, f FieldErrors) {
	seen := map[string]bool{}
	once := func(field, kind, what string) {
		k := kind + "\x00" + what
		if seen[k] {
			f.Add(field, kind+" "+what+" appears twice")
		}
		seen[k] = true
	}
	id := func(field, kind string, v int64) {
		if v != 0 {
			once(field, kind+" id", strconv.FormatInt(v, 10))
		}
	}
	for _, t := range s.Tenants {
		once("tenant "+t.Name+".name", "tenant", strconv.Quote(t.Name))
		id("tenant "+t.Name+".id", "tenant", t.ID)
	}
	for _, p := range s.Providers {
		once("provider "+p.Name+".name", "provider", strconv.Quote(p.Name))
		id("provider "+p.Name+".id", "provider", p.ID)
		for _, k := range p.Keys {
			id("provider "+p.Name+".keys", "provider key", k.ID)
		}
	}
	for _, m := range s.LogicModels {
		once("logic model "+m.Code+".code", "logic model", strconv.Quote(m.Code))
		id("logic model "+m.Code+".id", "logic model", m.ID)
		for _, d := range m.Deployments {
			field := "logic model " + m.Code + " deployment " + d.Provider + "/" + d.UpstreamModel
			once(field+".upstream_model", "deployment", strconv.Quote(m.Code+" on "+d.Provider+" ("+d.UpstreamModel+")"))
			id(field+".id", "deployment", d.ID)
		}
	}
	for _, g := range s.RouteGroups {
		once("route group "+g.Name+".name", "route group", strconv.Quote(g.Name))
		id("route group "+g.Name+".id", "route group", g.ID)
		for _, t := range g.Tiers {
			id("route group "+g.Name+" "+string(t.Name)+".id", "tier", t.ID)
			for _, c := range t.Candidates {
				field := "route group " + g.Name + " " + string(t.Name) + ".candidates"
				once(field, "candidate", strconv.Quote(c.LogicModel+" in "+g.Name+" / "+string(t.Name)))
				id(field, "candidate", c.ID)
			}
		}
	}
	for _, c := range s.Callers {
		once("caller "+c.Name+".name", "caller", strconv.Quote(c.Name))
		id("caller "+c.Name+".id", "caller", c.ID)
		for _, l := range c.Limits {
			once("caller "+c.Name+".limits", "limit of tier", string(l.Tier)+" of caller "+c.Name)
		}
	}
}
