-- Call-log search, second pass (issue 16): filters that match any attempt
-- of a call, request ids by prefix or suffix, callers and logic models by
-- part of their name, and the exact limit behind a refusal.
-- Written by switchyard/calllog (insert.go, attempts.go, names.go,
-- partitions.go).
BEGIN;

-- The limit that refused a call (routing/limit.Kind: rpm, tpm, daily,
-- budget, instance, deployment_cap, and any kind added later), its
-- configured value (NULL when the limit has none, e.g. the instance gate;
-- micro-units for a budget) and how long after the refusal it let a
-- request pass again, in milliseconds.
ALTER TABLE call_logs
    ADD COLUMN limit_kind     text,
    ADD COLUMN limit_value    bigint,
    ADD COLUMN limit_reset_ms bigint;

-- The new final-column filters, ordered like the others.
CREATE INDEX call_logs_deployment ON call_logs (deployment_id, at, request_id) WHERE deployment_id IS NOT NULL;
CREATE INDEX call_logs_key ON call_logs (key_fingerprint, at, request_id) WHERE key_fingerprint IS NOT NULL;

-- The list shows the tail of a request id: a suffix search is a prefix
-- search on the reversed id. request_id is COLLATE "C", and so is its
-- reverse, so a plain btree serves LIKE 'abc%' (call_logs_request_id
-- serves the prefix search the same way).
CREATE INDEX call_logs_request_id_reverse ON call_logs (reverse(request_id));

-- What the attempts of a call saw besides the row's own final columns:
-- the error class of each failed attempt, and the provider, deployment id
-- and key fingerprint of every call it made to a vendor (skips are not
-- calls), one row per distinct value the row's own column does not hold.
-- A call served at the first try has none, so the table holds only calls
-- that failed over or failed — a few percent of call_logs, and nothing
-- to write for the rest.
--
-- A filter on, say, provider X is "provider = X" (the ordered scan of
-- call_logs_provider it always was) or a row (provider, X) here, whose
-- primary key is ordered the same way: two ordered scans that each stop
-- after a page, merged (calllog.Search). Arrays with GIN indexes on
-- call_logs were tried first; a GIN index cannot return rows in time
-- order, and for a value in few rows the planner preferred walking the
-- primary key backwards over all 10 million (seconds).
--
-- Partitioned by day like call_logs, with the same partition bounds
-- (call_log_attempts_YYYYMMDD), created and dropped with them.
CREATE TABLE call_log_attempts (
    at         timestamptz NOT NULL,
    request_id text COLLATE "C" NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('class', 'provider', 'deployment', 'key')),
    value      text NOT NULL,
    PRIMARY KEY (kind, value, at, request_id)
) PARTITION BY RANGE (at);

CREATE TABLE call_log_attempts_default PARTITION OF call_log_attempts DEFAULT;

DO $$
DECLARE p record;
BEGIN
    FOR p IN SELECT n.nspname, c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE i.inhparent = 'call_logs'::regclass AND c.relname ~ '^call_logs_[0-9]{8}$'
    LOOP
        EXECUTE format('CREATE TABLE %I.%I PARTITION OF call_log_attempts %s',
            p.nspname, 'call_log_attempts_' || substr(p.relname, 11), p.bound);
    END LOOP;
END $$;

-- Rows written before this migration: their attempts from the stored
-- trail. Only a call with a failed attempt can have any (a call without
-- one made at most one attempt, the one in its own columns). The trail is
-- {"attempts": [...]} or, in the oldest rows, a bare array.
CREATE FUNCTION pg_temp.trail_attempts(t jsonb) RETURNS SETOF jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_array_elements(CASE
        WHEN jsonb_typeof(t->'attempts') = 'array' THEN t->'attempts'
        WHEN jsonb_typeof(t) = 'array' THEN t
        ELSE '[]' END)
$$;
INSERT INTO call_log_attempts (at, request_id, kind, value)
SELECT DISTINCT c.at, c.request_id, v.kind, v.value
FROM call_logs c
CROSS JOIN LATERAL pg_temp.trail_attempts(c.attempts) e
CROSS JOIN LATERAL (VALUES
    ('class', CASE WHEN e->>'outcome' = 'failed' THEN e->>'class' END, c.error_class),
    ('provider', e->>'provider', c.provider),
    ('key', e->>'key', c.key_fingerprint),
    ('deployment', CASE WHEN jsonb_typeof(e->'deployment_id') = 'number' AND e->>'deployment_id' <> '0'
        THEN e->>'deployment_id' END, c.deployment_id::text)
) AS v(kind, value, own)
WHERE jsonb_path_exists(c.attempts, 'lax $.** ? (@.outcome == "failed")')
    AND e->>'outcome' IN ('ok', 'failed')
    AND v.value <> '' AND v.value IS DISTINCT FROM v.own;

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
