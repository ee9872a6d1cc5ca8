package rows

import (
	"switchyard/routing/config"
	"switchyard/routing/config/onboarding"
)

// OnboardingBatchOf is an onboarding plan as the store creates it, in one
// transaction.
func OnboardingBatchOf(p *onboarding.Plan, expectedRevision int64) OnboardingBatch {
	b := OnboardingBatch{ExpectedRevision: &expectedRevision, Provider: p.Provider, Caller: p.Caller, CallerKeyName: "onboarding"}
	for _, k := range p.Keys {
		b.Keys = append(b.Keys, NewProviderKey{Label: k.Label, Secret: k.Secret()})
	}
	for _, m := range p.Models {
		if m.Backup {
			b.Deployments = append(b.Deployments, NewDeployment{LogicModel: m.Code, Deployment: m.Deployment})
			continue
		}
		lm := m.LogicModel
		lm.Deployments = []config.Deployment{m.Deployment}
		b.LogicModels = append(b.LogicModels, lm)
	}
	for _, r := range p.Reweights {
		if r.DeploymentID != 0 {
			b.Weights = append(b.Weights, DeploymentWeight{ID: r.DeploymentID, Weight: r.To})
		}
	}
	if p.Group.New {
		b.RouteGroup = &config.RouteGroup{Name: p.Group.Name, Description: "Created by onboarding (" + p.Template.Name + ").", Aliases: p.Group.Aliases}
	}
	for _, c := range p.Group.Candidates {
		b.Candidates = append(b.Candidates, NewCandidate{Group: p.Group.Name, Tier: c.Tier, Candidate: config.Candidate{LogicModel: c.LogicModel, Priority: c.Priority, Weight: c.Weight}})
	}
	return b
}
