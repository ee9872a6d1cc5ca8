package store

import (
	"switchyard/routing/config"
	"switchyard/store/rows"
)

// The values the store takes and hands out (rows, inputs, outcomes, roles,
// sentinel errors) live in store/rows, which holds no queries, so the
// console handlers can name them without importing the store. These are
// the store's own names for them.

const (
	AdminTokenPrefix  = rows.AdminTokenPrefix
	CallerKeyPrefix   = rows.CallerKeyPrefix
	ProbeOK           = rows.ProbeOK
	ProbeFailed       = rows.ProbeFailed
	ProbeInconclusive = rows.ProbeInconclusive
	JobRunning        = rows.JobRunning
	JobOK             = rows.JobOK
	JobError          = rows.JobError
	JobLost           = rows.JobLost
	RoleAdmin         = rows.RoleAdmin
	RoleViewer        = rows.RoleViewer

	AccessEndDisabled                  = rows.AccessEndDisabled
	AccessEndDemoted                   = rows.AccessEndDemoted
	AccessEndPasswordReset             = rows.AccessEndPasswordReset
	AccessEndRemovedByIdentityProvider = rows.AccessEndRemovedByIdentityProvider
)

type (
	User              = rows.User
	AdminToken        = rows.AdminToken
	CallerKeyInfo     = rows.CallerKeyInfo
	NewCallerKey      = rows.NewCallerKey
	Rotation          = rows.Rotation
	Probe             = rows.Probe
	HealthEvent       = rows.HealthEvent
	JobRun            = rows.JobRun
	OnboardingBatch   = rows.OnboardingBatch
	NewProviderKey    = rows.NewProviderKey
	NewDeployment     = rows.NewDeployment
	DeploymentWeight  = rows.DeploymentWeight
	NewCandidate      = rows.NewCandidate
	OnboardingResult  = rows.OnboardingResult
	ReplaceNote       = rows.ReplaceNote
	TierRef           = rows.TierRef
	ReferencedError   = rows.ReferencedError
	Disabled          = rows.Disabled
	PasswordReset     = rows.PasswordReset
	RoleChange        = rows.RoleChange
	AccessEndCause    = rows.AccessEndCause
	AccessEnded       = rows.AccessEnded
	ChecksFailedError = rows.ChecksFailedError
	Version           = rows.Version
	PublishInput      = rows.PublishInput
	PublishOutcome    = rows.PublishOutcome
)

var (
	ErrAliasesChanged   = rows.ErrAliasesChanged
	ErrNotFound         = rows.ErrNotFound
	ErrBadLogin         = rows.ErrBadLogin
	ErrTokenExpired     = rows.ErrTokenExpired
	ErrDraftChanged     = rows.ErrDraftChanged
	ErrNothingToPublish = rows.ErrNothingToPublish
)

// ValidateSnapshot runs the per-entity validators and the reference checks
// of a whole snapshot: config.ValidateSnapshot, under the name the draft's
// replacement calls.
func ValidateSnapshot(s config.Snapshot) error { return config.ValidateSnapshot(s) }
