-- Call-log search, second pass (issue 16): filters that match any attempt
-- of a call, request ids by prefix or suffix, callers and logic models by
-- part of their name, and the exact limit behind a refusal.
-- Written by switchyard/calllog (insert.go, attempts.go, names.go).
BEGIN;

-- What the attempts of a call saw besides the row's own final columns:
-- the error classes of its failed attempts and the providers, deployments
-- and key fingerprints of every call it made to a vendor (skips are not
-- calls), each without the value the row's own column already holds, as
-- a sorted set; NULL when nothing is left. A call served at the first try
-- has NULL in all four, so the GIN indexes below hold only calls that
-- failed over or failed, a few percent of the rows, and cost the writer
-- next to nothing for the rest. A filter on, say, provider X is then
-- "provider = X" (the ordered btree scan it always was) or
-- "attempt_providers @> {X}" (a small GIN bitmap), searched as two
-- branches of one UNION (calllog.Search).
ALTER TABLE call_logs
    ADD COLUMN attempt_classes        text[],
    ADD COLUMN attempt_providers      text[],
    ADD COLUMN attempt_deployment_ids bigint[],
    ADD COLUMN attempt_keys           text[],
    -- The limit that refused the call (routing/limit.Kind: rpm, tpm, daily,
    -- budget, instance, deployment_cap, and any kind added later), its
    -- configured value (NULL when the limit has none, e.g. the instance
    -- gate; micro-units for a budget) and how long after the refusal it
    -- lets a request pass again, in milliseconds.
    ADD COLUMN limit_kind             text,
    ADD COLUMN limit_value            bigint,
    ADD COLUMN limit_reset_ms         bigint;

CREATE INDEX call_logs_attempt_classes ON call_logs USING gin (attempt_classes) WHERE attempt_classes IS NOT NULL;
CREATE INDEX call_logs_attempt_providers ON call_logs USING gin (attempt_providers) WHERE attempt_providers IS NOT NULL;
CREATE INDEX call_logs_attempt_deployments ON call_logs USING gin (attempt_deployment_ids) WHERE attempt_deployment_ids IS NOT NULL;
CREATE INDEX call_logs_attempt_keys ON call_logs USING gin (attempt_keys) WHERE attempt_keys IS NOT NULL;

-- The new final-column filters, ordered like the others.
CREATE INDEX call_logs_deployment ON call_logs (deployment_id, at, request_id) WHERE deployment_id IS NOT NULL;
CREATE INDEX call_logs_key ON call_logs (key_fingerprint, at, request_id) WHERE key_fingerprint IS NOT NULL;

-- The list shows the tail of a request id: a suffix search is a prefix
-- search on the reversed id. request_id is COLLATE "C", and so is its
-- reverse, so a plain btree serves LIKE 'abc%' (call_logs_request_id
-- serves the prefix search the same way).
CREATE INDEX call_logs_request_id_reverse ON call_logs (reverse(request_id));

-- Rows written before this migration: fill the attempt sets from the
-- stored trail. Only a call with a failed attempt can have one (a call
-- without one made at most one attempt, the one in its own columns).
-- The trail is {"attempts": [...]} or, in the oldest rows, a bare array.
CREATE FUNCTION pg_temp.trail_attempts(t jsonb) RETURNS SETOF jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_array_elements(CASE
        WHEN jsonb_typeof(t->'attempts') = 'array' THEN t->'attempts'
        WHEN jsonb_typeof(t) = 'array' THEN t
        ELSE '[]' END)
$$;
UPDATE call_logs c SET
    attempt_classes = (SELECT array_agg(DISTINCT v ORDER BY v) FROM (
        SELECT e->>'class' AS v FROM pg_temp.trail_attempts(c.attempts) e WHERE e->>'outcome' = 'failed') s
        WHERE v <> '' AND v IS DISTINCT FROM c.error_class),
    attempt_providers = (SELECT array_agg(DISTINCT v ORDER BY v) FROM (
        SELECT e->>'provider' AS v FROM pg_temp.trail_attempts(c.attempts) e WHERE e->>'outcome' IN ('ok', 'failed')) s
        WHERE v <> '' AND v IS DISTINCT FROM c.provider),
    attempt_deployment_ids = (SELECT array_agg(DISTINCT v ORDER BY v) FROM (
        SELECT (e->>'deployment_id')::bigint AS v FROM pg_temp.trail_attempts(c.attempts) e
        WHERE e->>'outcome' IN ('ok', 'failed') AND jsonb_typeof(e->'deployment_id') = 'number') s
        WHERE v <> 0 AND v IS DISTINCT FROM c.deployment_id),
    attempt_keys = (SELECT array_agg(DISTINCT v ORDER BY v) FROM (
        SELECT e->>'key' AS v FROM pg_temp.trail_attempts(c.attempts) e WHERE e->>'outcome' IN ('ok', 'failed')) s
        WHERE v <> '' AND v IS DISTINCT FROM c.key_fingerprint)
WHERE jsonb_path_exists(c.attempts, 'lax $.** ? (@.outcome == "failed")');

-- The caller and logic-model names the call log holds, with the first and
-- last UTC day they occur on. A search for part of a name looks the name
-- up here (a few hundred rows) and searches call_logs for the exact names
-- found, each an ordered index scan; scanning call_logs for a substring
-- could use no index at all. Maintained by the writer in the insert's
-- transaction, so every name in call_logs is here; names of rows dropped
-- by retention stay (a search for them finds no rows, quickly).
CREATE TABLE call_log_names (
    kind      text NOT NULL CHECK (kind IN ('caller', 'logic_model')),
    name      text NOT NULL,
    first_day date NOT NULL,
    last_day  date NOT NULL,
    PRIMARY KEY (kind, name)
);

-- Every call-log row has its roll-up row (same transaction), and roll-ups
-- outlive retention: they hold every name with its days.
INSERT INTO call_log_names (kind, name, first_day, last_day)
SELECT 'caller', caller, min(day), max(day) FROM cost_rollups WHERE caller <> '' GROUP BY caller
UNION ALL
SELECT 'logic_model', logic_model, min(day), max(day) FROM cost_rollups WHERE logic_model <> '' GROUP BY logic_model;

COMMIT;
