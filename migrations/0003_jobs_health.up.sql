-- The worker role's records (health and the worker role): one row per run of a singleton job,
-- every health probe of a deployment, and every change of a deployment's
-- health state. The current state itself lives in Redis, where every
-- instance's router reads it; these tables are the history the Health and
-- Jobs pages show. Deployment ids are not foreign keys: history outlives a
-- deployment deleted from the draft (it may still be live until the next
-- publish). Written by switchyard/worker through store/jobs.go and
-- store/health.go.
BEGIN;

CREATE TABLE job_runs (
    id          bigserial PRIMARY KEY,
    job         text NOT NULL,
    instance    text NOT NULL,            -- the worker that held the lease
    slot        bigint NOT NULL,          -- the tick: start time / interval
    started_at  timestamptz NOT NULL,
    finished_at timestamptz,              -- NULL while running
    duration_ms integer,
    -- lost: the worker stopped (or lost its lease) before the run finished.
    outcome     text NOT NULL CHECK (outcome IN ('running', 'ok', 'error', 'lost')),
    message     text NOT NULL DEFAULT ''
);
CREATE INDEX job_runs_job_started ON job_runs (job, started_at DESC);

CREATE TABLE deployment_probes (
    id            bigserial PRIMARY KEY,
    deployment_id bigint NOT NULL,
    at            timestamptz NOT NULL,
    -- ok: answered; failed: a server, timeout or network failure (counts
    -- against the score); inconclusive: a key or request problem (429, 401,
    -- 402, 400) that says nothing about the deployment (not counted).
    outcome       text NOT NULL CHECK (outcome IN ('ok', 'failed', 'inconclusive')),
    latency_ms    integer NOT NULL DEFAULT 0,
    class         text NOT NULL DEFAULT '',
    http_status   integer NOT NULL DEFAULT 0,
    message       text NOT NULL DEFAULT ''
);
CREATE INDEX deployment_probes_deployment_at ON deployment_probes (deployment_id, at DESC);
CREATE INDEX deployment_probes_at ON deployment_probes (at);

CREATE TABLE deployment_health_events (
    id            bigserial PRIMARY KEY,
    deployment_id bigint NOT NULL,
    at            timestamptz NOT NULL,
    from_state    text NOT NULL CHECK (from_state IN ('healthy', 'degraded', 'down')),
    to_state      text NOT NULL CHECK (to_state IN ('healthy', 'degraded', 'down')),
    score         double precision,       -- NULL: too few samples to score
    samples       bigint NOT NULL DEFAULT 0,
    reason        text NOT NULL DEFAULT ''
);
CREATE INDEX deployment_health_events_deployment_at ON deployment_health_events (deployment_id, at DESC);

COMMIT;
