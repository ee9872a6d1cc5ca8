-- Alerts: the rules the worker evaluates (routing/alert), the webhook
-- channels they are delivered to, the alerts pending or firing now, the
-- events (firing, resolved) and each event's delivery to each channel with
-- its retries. Defaults are seeded; no channel is.
BEGIN;

CREATE TABLE alert_rules (
    id             bigserial PRIMARY KEY,
    kind           text NOT NULL,
    params         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(params) = 'object'),
    for_seconds    integer NOT NULL DEFAULT 0 CHECK (for_seconds >= 0),
    enabled        boolean NOT NULL DEFAULT true,
    silenced_until timestamptz,
    updated_at     timestamptz NOT NULL DEFAULT now()
);

INSERT INTO alert_rules (kind, params, for_seconds) VALUES
    ('tier_unservable', '{}', 30),
    ('error_rate', '{"percent": 20, "window_seconds": 300, "min_requests": 20}', 0),
    ('latency_p95', '{"bound_ms": 10000, "window_seconds": 300, "min_requests": 20}', 0),
    ('budget', '{"percent": 80}', 0),
    ('budget', '{"percent": 100}', 0),
    ('keys_quarantined', '{}', 0),
    ('breaker_open', '{"open_seconds": 300}', 0),
    ('retry_budget_exhausted', '{"window_seconds": 300}', 0),
    ('config_cached', '{}', 30),
    ('redis_degraded', '{}', 30),
    ('caller_key_expiring', '{"within_days": 7}', 0);

-- url_sealed is the webhook URL sealed like provider keys (a Slack URL is
-- a secret); url_hint is its scheme and host, for the console.
CREATE TABLE alert_channels (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL UNIQUE CHECK (name <> ''),
    shape      text NOT NULL CHECK (shape IN ('generic', 'slack')),
    url_sealed bytea NOT NULL,
    url_hint   text NOT NULL,
    enabled    boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE alert_states (
    rule_id  bigint NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
    subject  jsonb NOT NULL,
    skey     text NOT NULL,
    status   text NOT NULL CHECK (status IN ('pending', 'firing')),
    since    timestamptz NOT NULL,
    fired_at timestamptz,
    value    double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (rule_id, skey)
);

CREATE TABLE alert_events (
    id        bigserial PRIMARY KEY,
    dedup_key text NOT NULL UNIQUE,
    rule_id   bigint NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
    event     text NOT NULL CHECK (event IN ('firing', 'resolved')),
    subject   jsonb NOT NULL,
    value     double precision NOT NULL DEFAULT 0,
    fired_at  timestamptz NOT NULL,
    at        timestamptz NOT NULL,
    silenced  boolean NOT NULL DEFAULT false
);
CREATE INDEX alert_events_at ON alert_events (at DESC);

CREATE TABLE alert_deliveries (
    event_id     bigint NOT NULL REFERENCES alert_events (id) ON DELETE CASCADE,
    channel_id   bigint NOT NULL REFERENCES alert_channels (id) ON DELETE CASCADE,
    attempts     integer NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL,
    delivered_at timestamptz,
    gave_up      boolean NOT NULL DEFAULT false,
    last_error   text NOT NULL DEFAULT '',
    PRIMARY KEY (event_id, channel_id)
);
CREATE INDEX alert_deliveries_due ON alert_deliveries (next_at) WHERE delivered_at IS NULL AND NOT gave_up;

COMMIT;
