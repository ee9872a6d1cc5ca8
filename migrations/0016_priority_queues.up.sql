-- Token-weighted load and three priority classes with weighted queues
-- (issue 17, items 3 and 4).
BEGIN;

-- A deployment may cap the estimated tokens (prompt + expected output) of
-- its requests in flight across instances; 0 is unlimited.
ALTER TABLE deployments ADD COLUMN max_inflight_tokens bigint NOT NULL DEFAULT 0
    CHECK (max_inflight_tokens >= 0);

-- A third priority class between interactive and batch. Existing callers
-- keep their class; a new caller that names none is normal.
ALTER TABLE callers DROP CONSTRAINT callers_priority_class_check;
ALTER TABLE callers ADD CONSTRAINT callers_priority_class_check
    CHECK (priority_class IN ('interactive', 'normal', 'batch'));
ALTER TABLE callers ALTER COLUMN priority_class SET DEFAULT 'normal';

-- The caller's class when the request was served, and how long it waited in
-- its class's queue for capacity (instance and deployment waits together);
-- NULL when it never queued (rows written before this column, rejections
-- before the limits step).
ALTER TABLE call_logs ADD COLUMN priority_class text;
ALTER TABLE call_logs ADD COLUMN queue_wait_ms integer;

-- Hourly queue roll-up per class, written with call_stats in the same
-- transaction: how many requests waited, how many the queues refused (full,
-- or shed for an interactive request), the summed wait and its histogram
-- (the buckets of call_stats.latency_hist). The dashboard draws mean queue
-- depth (summed wait / step length, Little's law) and wait p95 from it.
CREATE TABLE queue_stats (
    hour         timestamptz NOT NULL,
    class        text NOT NULL,
    queued       bigint NOT NULL DEFAULT 0,
    refused      bigint NOT NULL DEFAULT 0,
    wait_sum_ms  bigint NOT NULL DEFAULT 0,
    wait_hist    bigint[] NOT NULL CHECK (cardinality(wait_hist) = 25),
    PRIMARY KEY (hour, class)
);

COMMIT;
