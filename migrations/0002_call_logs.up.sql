-- Call logs (one row per request that reached the data plane, rejected ones
-- included) and the roll-ups the dashboard reads instead of raw logs.
-- Written by switchyard/calllog; see that package for the invariants.
BEGIN;

-- Partitioned by day (UTC) on "at". Daily partitions are named
-- call_logs_YYYYMMDD and are created ahead of time and dropped after the
-- retention period by calllog.EnsurePartitions / calllog.DropPartitions (the
-- worker's job). The default partition is a safety net: a row whose day has no
-- partition yet lands there instead of failing, and EnsurePartitions moves
-- such rows into the day's partition when it creates it.
CREATE TABLE call_logs (
    at                 timestamptz NOT NULL,
    request_id         text COLLATE "C" NOT NULL, -- byte order: cheap compares in every index
    caller_id          bigint,
    caller             text,
    tenant             text,
    route_group        text,
    tier               text,
    requested_model    text,
    logic_model        text,
    deployment_id      bigint,
    provider           text,
    key_fingerprint    text,
    status             text NOT NULL CHECK (status IN ('ok', 'upstream_error', 'rejected', 'client_cancelled')),
    error_class        text,
    error_code         text,
    http_status        integer NOT NULL DEFAULT 0,
    latency_ms         integer NOT NULL DEFAULT 0,
    ttfc_ms            integer,           -- time to first chunk (streams)
    prompt_tokens      bigint,            -- NULL = usage unknown, distinct from 0
    completion_tokens  bigint,
    cached_tokens      bigint,
    reasoning_tokens   bigint,
    cost               numeric,           -- NULL = not priced
    currency           text,
    stream             boolean NOT NULL DEFAULT false,
    idempotency_replay boolean NOT NULL DEFAULT false,
    fallback           text,              -- e.g. 'policy shared → group general'
    config_version     bigint,
    attempts           jsonb NOT NULL DEFAULT '[]',
    PRIMARY KEY (at, request_id)
) PARTITION BY RANGE (at);

CREATE TABLE call_logs_default PARTITION OF call_logs DEFAULT;

-- Search pages are keyset-paginated on (at, request_id) descending. The
-- primary key serves the unfiltered listing (scanned backwards); each
-- filterable column where a value can be rare has an index ending in
-- (at, request_id), so a filtered page is an index range scan with no sort.
-- Tier has no index: every tier is common, and the primary key scan finds a
-- page of any tier at once. The same holds for status 'ok', so the status
-- index only covers the other (rare) statuses, which keeps ingestion cheaper.
CREATE INDEX call_logs_request_id ON call_logs (request_id);
CREATE INDEX call_logs_caller ON call_logs (caller, at, request_id);
CREATE INDEX call_logs_status ON call_logs (status, at, request_id) WHERE status <> 'ok';
CREATE INDEX call_logs_logic_model ON call_logs (logic_model, at, request_id);
CREATE INDEX call_logs_provider ON call_logs (provider, at, request_id);
CREATE INDEX call_logs_error_class ON call_logs (error_class, at, request_id) WHERE error_class IS NOT NULL;

-- Daily cost roll-up (UTC days). Text key columns hold '' where the call log
-- has NULL (rejected calls have no logic model). errors counts
-- status = 'upstream_error'. Token sums treat unknown (NULL) usage as 0.
-- Maintained by the call-log writer in the same transaction as the insert,
-- from the rows actually inserted, so a replayed duplicate is never counted.
CREATE TABLE cost_rollups (
    day               date NOT NULL,
    caller            text NOT NULL,
    tier              text NOT NULL,
    logic_model       text NOT NULL,
    currency          text NOT NULL,
    requests          bigint NOT NULL DEFAULT 0,
    errors            bigint NOT NULL DEFAULT 0,
    prompt_tokens     bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    cached_tokens     bigint NOT NULL DEFAULT 0,
    cost              numeric NOT NULL DEFAULT 0,
    PRIMARY KEY (day, caller, tier, logic_model, currency)
);

-- Hourly statistics for the dashboard's time series, maintained like
-- cost_rollups. Currency is part of the key because costs in different
-- currencies cannot be added; sum the other columns across currencies.
--
-- latency_hist counts non-rejected calls by latency_ms in 25 fixed buckets
-- (bounds in milliseconds, lower bound inclusive, upper bound exclusive):
--   [1] 0-10      [2] 10-25     [3] 25-50      [4] 50-100     [5] 100-200
--   [6] 200-300   [7] 300-500   [8] 500-750    [9] 750-1000   [10] 1000-1500
--   [11] 1500-2000 [12] 2000-3000 [13] 3000-4000 [14] 4000-5000 [15] 5000-7500
--   [16] 7500-10000 [17] 10000-15000 [18] 15000-20000 [19] 20000-30000
--   [20] 30000-45000 [21] 45000-60000 [22] 60000-90000 [23] 90000-120000
--   [24] 120000-180000 [25] 180000 and more
-- The bounds are calllog.LatencyBucketBounds; changing them needs a new column.
CREATE TABLE call_stats (
    hour              timestamptz NOT NULL,
    caller            text NOT NULL,
    tier              text NOT NULL,
    logic_model       text NOT NULL,
    currency          text NOT NULL,
    requests          bigint NOT NULL DEFAULT 0,
    errors            bigint NOT NULL DEFAULT 0,
    rejected          bigint NOT NULL DEFAULT 0,
    cancelled         bigint NOT NULL DEFAULT 0,
    prompt_tokens     bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    cached_tokens     bigint NOT NULL DEFAULT 0,
    reasoning_tokens  bigint NOT NULL DEFAULT 0,
    cost              numeric NOT NULL DEFAULT 0,
    latency_sum_ms    bigint NOT NULL DEFAULT 0,
    latency_hist      bigint[] NOT NULL CHECK (cardinality(latency_hist) = 25),
    PRIMARY KEY (hour, caller, tier, logic_model, currency)
);

COMMIT;
