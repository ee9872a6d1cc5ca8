package calllog

import (
	"context"
	"fmt"
	"time"

	"switchyard/routing"
	"switchyard/routing/record"
)

// MaxShapes bounds the request shapes one impact preview replays: the most
// frequent first. A busy installation has a few hundred.
const MaxShapes = 10000

// shapesStmt groups the window's requests into distinct shapes in SQL, so
// the preview reads one row per shape, not per request. Only requests that
// reached routing count: a caller, a model asked for, not an idempotent
// replay. The partitions of the window and the primary key's leading "at"
// keep the scan to the window.
const shapesStmt = `
SELECT caller_id, coalesce(caller, ''), requested_model, stream, needs, fields,
       count(*),
       count(*) FILTER (WHERE status = 'ok'),
       count(prompt_tokens),
       coalesce(sum(prompt_tokens), 0)::bigint,
       coalesce(sum(completion_tokens), 0)::bigint,
       coalesce(sum(cached_tokens), 0)::bigint
FROM call_logs
WHERE at >= $1 AND at < $2
  AND caller_id IS NOT NULL AND requested_model IS NOT NULL AND NOT idempotency_replay
GROUP BY caller_id, coalesce(caller, ''), requested_model, stream, needs, fields
ORDER BY count(*) DESC, caller_id, requested_model, needs, fields
LIMIT $3`

// Shapes returns the distinct request shapes of [from, to) with their
// counts and token sums, most frequent first; truncated reports that more
// than MaxShapes existed.
func Shapes(ctx context.Context, db Queryer, from, to time.Time) (shapes []routing.TrafficShape, truncated bool, err error) {
	rows, err := db.QueryContext(ctx, shapesStmt, from.UTC(), to.UTC(), MaxShapes+1)
	if err != nil {
		return nil, false, fmt.Errorf("calllog: request shapes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s routing.TrafficShape
		var needs, fields int64
		if err := rows.Scan(&s.CallerID, &s.Caller, &s.Model, &s.Stream, &needs, &fields,
			&s.Requests, &s.Served, &s.Usage, &s.PromptTokens, &s.CompletionTokens, &s.CachedTokens); err != nil {
			return nil, false, fmt.Errorf("calllog: request shapes: %w", err)
		}
		s.Needs, s.Fields = record.Needs(needs), uint64(fields)
		shapes = append(shapes, s)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("calllog: request shapes: %w", err)
	}
	if len(shapes) > MaxShapes {
		return shapes[:MaxShapes], true, nil
	}
	return shapes, false, nil
}
