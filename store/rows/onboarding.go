package rows

import "switchyard/routing/config"

// OnboardingBatch is everything one onboarding creates or changes. Onboard
// applies it in one transaction: all of it, or nothing.
type OnboardingBatch struct {
	// ExpectedRevision, when set, is the draft revision the operator
	// reviewed; a different current revision refuses the batch.
	ExpectedRevision *int64
	Provider         config.Provider // its Keys are ignored; see Keys
	Keys             []NewProviderKey
	// LogicModels are new logic models, each with its deployments.
	LogicModels []config.LogicModel
	// Deployments are added to logic models that already exist.
	Deployments []NewDeployment
	// Weights re-weight existing deployments.
	Weights []DeploymentWeight
	// RouteGroup, when set, is a new group (its three tiers get the default
	// timeouts) with its model aliases; candidates are added through
	// Candidates either way.
	RouteGroup *config.RouteGroup
	Candidates []NewCandidate
	// Caller, when set, is a new caller that gets one API key.
	Caller        *config.Caller
	CallerKeyName string
	// Actor is who onboards: recorded as the maker of the caller's key.
	Actor string
}

// NewProviderKey is a key to seal into the new provider's pool.
type NewProviderKey struct {
	Label  string
	Secret string
}

// NewDeployment adds a deployment to an existing logic model.
type NewDeployment struct {
	LogicModel string
	config.Deployment
}

// DeploymentWeight sets an existing deployment's weight.
type DeploymentWeight struct {
	ID     int64
	Weight int
}

// NewCandidate adds a candidate to a tier of a group (new or existing).
type NewCandidate struct {
	Group string
	Tier  config.TierName
	config.Candidate
}

// OnboardingResult is what Onboard created.
type OnboardingResult struct {
	ProviderID      int64
	CallerID        int64
	CallerKey       string // plaintext, returned once and never stored
	CallerKeyPrefix string
	// Revision is the draft revision right after the batch, for a publish
	// that must contain exactly this draft.
	Revision int64
}
