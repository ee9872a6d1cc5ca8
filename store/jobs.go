package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

const jobRunColumns = `id, job, instance, slot, started_at, finished_at, COALESCE(duration_ms, 0) AS duration_ms, outcome, message`

// StartJobRun records that instance started job for tick slot and returns
// the run's id. The caller holds the job's lease, so any earlier run of the
// job still marked running belonged to a worker that died: those are closed
// as lost in the same transaction.
func (s *Store) StartJobRun(ctx context.Context, job, instance string, slot int64, at time.Time) (int64, error) {
	var id int64
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `
			UPDATE job_runs SET outcome = 'lost', finished_at = $2,
				duration_ms = LEAST(EXTRACT(EPOCH FROM ($2 - started_at)) * 1000, 2147483647)::integer,
				message = 'the worker stopped or lost its lease before the run finished'
			WHERE job = $1 AND outcome = 'running'`, job, at); err != nil {
			return err
		}
		return tx.GetContext(ctx, &id, `
			INSERT INTO job_runs (job, instance, slot, started_at, outcome) VALUES ($1, $2, $3, $4, 'running')
			RETURNING id`, job, instance, slot, at)
	})
	if err != nil {
		return 0, fmt.Errorf("store: start job run %s: %w", job, err)
	}
	return id, nil
}

// FinishJobRun closes a run with its outcome (JobOK, JobError or JobLost).
func (s *Store) FinishJobRun(ctx context.Context, id int64, outcome, message string, at time.Time) error {
	if len(message) > 2000 {
		message = message[:2000] + "…"
	}
	res, err := s.db.ExecContext(ctx, `
		UPDATE job_runs SET outcome = $2, message = $3, finished_at = $4,
			duration_ms = LEAST(GREATEST(EXTRACT(EPOCH FROM ($4 - started_at)) * 1000, 0), 2147483647)::integer
		WHERE id = $1`, id, outcome, message, at)
	if err := rowsAffected(res, err); err != nil {
		return fmt.Errorf("store: finish job run %d: %w", id, err)
	}
	return nil
}

// JobRuns returns job's most recent runs, newest first.
func (s *Store) JobRuns(ctx context.Context, job string, limit int) ([]JobRun, error) {
	var out []JobRun
	err := s.db.SelectContext(ctx, &out, `SELECT `+jobRunColumns+` FROM job_runs WHERE job = $1 ORDER BY started_at DESC, id DESC LIMIT $2`, job, limit)
	if err != nil {
		return nil, fmt.Errorf("store: job runs %s: %w", job, err)
	}
	return out, nil
}

// PruneJobRuns deletes runs that started before cutoff.
func (s *Store) PruneJobRuns(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM job_runs WHERE started_at < $1`, cutoff)
	if err != nil {
		return 0, fmt.Errorf("store: prune job runs: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
