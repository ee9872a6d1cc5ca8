package handlers

import (
	"context"
	"time"

	"switchyard/routing/health"
)

// HealthOps is what the Health page reads: every deployment's evaluated
// health from Redis (healthboard.Tracker). Probes and state history come from
// the store.
type HealthOps interface {
	// Statuses is every evaluated deployment's health, by deployment id.
	Statuses(ctx context.Context) (map[int64]health.Status, error)
	// Settings are the scoring window and thresholds.
	Settings() health.Settings
	// ProbeLedger is every deployment's probes sent, skipped and their
	// cost over the last 24 hours.
	ProbeLedger(ctx context.Context) (map[int64]health.ProbeLedger, error)
}

// JobStatus is one singleton job as the worker role's runner sees it.
type JobStatus struct {
	Name        string
	Description string
	Every       time.Duration
	// Holder is the worker holding the lease now, "" when nobody runs it.
	Holder string
	// LeaseLeft is how long the lease lasts without renewal.
	LeaseLeft time.Duration
	// Requested is set while a "Run now" waits for a worker.
	Requested bool
	// NextRun is when the next tick starts; zero when a run is due now.
	NextRun time.Time
}

// JobsOps is what the Jobs page reads and does (the worker role's runner,
// adapted by the instance assembly). Runs come from the store.
type JobsOps interface {
	// Jobs is every singleton job with its lease holder and next run.
	Jobs(ctx context.Context) ([]JobStatus, error)
	// Request asks the workers to run a job at their next check.
	Request(ctx context.Context, name string) error
}
