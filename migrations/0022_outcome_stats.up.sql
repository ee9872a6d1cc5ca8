-- Per-minute outcomes per route group × tier, written with call_stats in
-- the same transaction: every request counted once under its outcome — ''
-- for an answer (2xx), else its error code (ours and the vendors' alike:
-- no_available_model, rate_limited, upstream_error, client_cancelled, ...,
-- or http_<status> when a non-2xx row has no code) — with the latency
-- histogram (the buckets of call_stats.latency_hist). The dashboard draws
-- the error rate by cause and per-minute points for short ranges from it,
-- the overview each route group × tier's rate, errors and latency.
BEGIN;

CREATE TABLE outcome_stats (
    minute          timestamptz NOT NULL,
    route_group     text NOT NULL,
    tier            text NOT NULL,
    outcome         text NOT NULL,
    requests        bigint NOT NULL DEFAULT 0,
    latency_sum_ms  bigint NOT NULL DEFAULT 0,
    latency_hist    bigint[] NOT NULL CHECK (cardinality(latency_hist) = 25),
    PRIMARY KEY (minute, route_group, tier, outcome)
);

COMMIT;
