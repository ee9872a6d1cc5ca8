-- Retry budget and degradation ladder (issue 17).
BEGIN;

-- A route group's retry budget and degradation ladder, as JSON objects in
-- their canonical form (routing/config: RetryBudget, Degradation); NULL is
-- the default budget and no ladder.
ALTER TABLE route_groups
    ADD COLUMN retry_budget jsonb CHECK (retry_budget IS NULL OR jsonb_typeof(retry_budget) = 'object'),
    ADD COLUMN degradation jsonb CHECK (degradation IS NULL OR jsonb_typeof(degradation) = 'object');

-- Which rung of the ladder answered: step_down (a lighter tier served),
-- cached (an earlier answer to the same request), static (the operator's
-- reply); NULL when the request was served normally or not at all.
ALTER TABLE call_logs ADD COLUMN degraded text;

-- Hourly resilience figures per route group × tier for the dashboard,
-- maintained by the call-log writer from the rows it inserts, like
-- call_stats: requests, attempts beyond the first (retries), requests the
-- retry budget stopped (error_code retry_budget_exhausted), and answers per
-- rung of the ladder.
CREATE TABLE ladder_stats (
    hour             timestamptz NOT NULL,
    route_group      text NOT NULL,
    tier             text NOT NULL,
    requests         bigint NOT NULL DEFAULT 0,
    retries          bigint NOT NULL DEFAULT 0,
    budget_exhausted bigint NOT NULL DEFAULT 0,
    step_down        bigint NOT NULL DEFAULT 0,
    cached           bigint NOT NULL DEFAULT 0,
    static           bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, route_group, tier)
);

COMMIT;
