package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lib/pq"
)

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// AddProbes records a round of probes in one statement.
func (s *Store) AddProbes(ctx context.Context, probes []Probe) error {
	if len(probes) == 0 {
		return nil
	}
	var (
		ids, latency, status []int64
		at, outcome          []string
		class, msg           []string
	)
	for _, p := range probes {
		ids = append(ids, p.DeploymentID)
		at = append(at, p.At.UTC().Format(time.RFC3339Nano))
		outcome = append(outcome, p.Outcome)
		latency = append(latency, p.LatencyMS)
		class = append(class, p.Class)
		status = append(status, int64(p.HTTPStatus))
		msg = append(msg, clip(p.Message, 500))
	}
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO deployment_probes (deployment_id, at, outcome, latency_ms, class, http_status, message)
		SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::integer[], $5::text[], $6::integer[], $7::text[])`,
		pq.Array(ids), pq.Array(at), pq.Array(outcome), pq.Array(latency), pq.Array(class), pq.Array(status), pq.Array(msg))
	if err != nil {
		return fmt.Errorf("store: add probes: %w", err)
	}
	return nil
}

// RecentProbes returns up to perDeployment latest probes of every
// deployment, newest first.
func (s *Store) RecentProbes(ctx context.Context, perDeployment int) (map[int64][]Probe, error) {
	var rows []Probe
	err := s.db.SelectContext(ctx, &rows, `
		SELECT id, deployment_id, at, outcome, latency_ms, class, http_status, message FROM (
			SELECT *, row_number() OVER (PARTITION BY deployment_id ORDER BY at DESC, id DESC) AS n
			FROM deployment_probes) p
		WHERE n <= $1 ORDER BY deployment_id, at DESC, id DESC`, perDeployment)
	if err != nil {
		return nil, fmt.Errorf("store: recent probes: %w", err)
	}
	out := map[int64][]Probe{}
	for _, p := range rows {
		out[p.DeploymentID] = append(out[p.DeploymentID], p)
	}
	return out, nil
}

// PruneProbes deletes probes older than cutoff.
func (s *Store) PruneProbes(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM deployment_probes WHERE at < $1`, cutoff)
	if err != nil {
		return 0, fmt.Errorf("store: prune probes: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// AddHealthEvents records state changes.
func (s *Store) AddHealthEvents(ctx context.Context, events []HealthEvent) error {
	if len(events) == 0 {
		return nil
	}
	var (
		ids, samples         []int64
		at, from, to, reason []string
		scores               []sql.NullFloat64
	)
	for _, e := range events {
		ids = append(ids, e.DeploymentID)
		at = append(at, e.At.UTC().Format(time.RFC3339Nano))
		from = append(from, e.From)
		to = append(to, e.To)
		scores = append(scores, e.Score)
		samples = append(samples, e.Samples)
		reason = append(reason, clip(e.Reason, 500))
	}
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO deployment_health_events (deployment_id, at, from_state, to_state, score, samples, reason)
		SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::float8[], $6::bigint[], $7::text[])`,
		pq.Array(ids), pq.Array(at), pq.Array(from), pq.Array(to), pq.Array(scores), pq.Array(samples), pq.Array(reason))
	if err != nil {
		return fmt.Errorf("store: add health events: %w", err)
	}
	return nil
}

// HealthEvents returns up to perDeployment latest state changes of every
// deployment, newest first.
func (s *Store) HealthEvents(ctx context.Context, perDeployment int) (map[int64][]HealthEvent, error) {
	var rows []HealthEvent
	err := s.db.SelectContext(ctx, &rows, `
		SELECT id, deployment_id, at, from_state, to_state, score, samples, reason FROM (
			SELECT *, row_number() OVER (PARTITION BY deployment_id ORDER BY at DESC, id DESC) AS n
			FROM deployment_health_events) e
		WHERE n <= $1 ORDER BY deployment_id, at DESC, id DESC`, perDeployment)
	if err != nil {
		return nil, fmt.Errorf("store: health events: %w", err)
	}
	out := map[int64][]HealthEvent{}
	for _, e := range rows {
		out[e.DeploymentID] = append(out[e.DeploymentID], e)
	}
	return out, nil
}
