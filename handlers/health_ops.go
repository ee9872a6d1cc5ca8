package handlers

import (
	"context"

	"switchyard/health"
	"switchyard/worker"
)

// HealthOps is what the Health page reads: every deployment's evaluated
// health from Redis (health.Tracker). Probes and state history come from
// the store.
type HealthOps interface {
	// Statuses is every evaluated deployment's health, by deployment id.
	Statuses(ctx context.Context) (map[int64]health.Status, error)
	// Settings are the scoring window and thresholds.
	Settings() health.Settings
}

// JobsOps is what the Jobs page reads and does (worker.Runner). Runs come
// from the store.
type JobsOps interface {
	// Jobs is every singleton job with its lease holder and next run.
	Jobs(ctx context.Context) ([]worker.Status, error)
	// Request asks the workers to run a job at their next check.
	Request(ctx context.Context, name string) error
}
