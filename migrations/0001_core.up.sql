-- Core schema: the draft configuration, credentials, console users, sessions,
-- admin tokens and published versions.
BEGIN;

-- The draft's revision is bumped by a statement trigger on every draft table,
-- so publish can detect a draft that changed since it was checked.
CREATE TABLE draft_meta (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    revision   bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO draft_meta DEFAULT VALUES;

CREATE FUNCTION bump_draft_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE draft_meta SET revision = revision + 1, updated_at = now();
    RETURN NULL;
END $$;

CREATE TABLE tenants (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    description text NOT NULL DEFAULT ''
);

CREATE TABLE providers (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL UNIQUE,
    protocol   text NOT NULL,
    base_url   text NOT NULL,
    enabled    boolean NOT NULL DEFAULT true,
    timeout_ms integer NOT NULL DEFAULT 60000,
    notes      text NOT NULL DEFAULT ''
);

-- Secrets are AES-GCM sealed (nonce || ciphertext); the fingerprint is the only
-- part of a secret that is ever displayed. Keys are soft-deleted so a rollback
-- can bring back a key that an older version used.
CREATE TABLE provider_keys (
    id          bigserial PRIMARY KEY,
    provider_id bigint NOT NULL REFERENCES providers(id) ON DELETE CASCADE,
    label       text NOT NULL DEFAULT '',
    secret      bytea NOT NULL,
    fingerprint text NOT NULL,
    status      text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz
);
CREATE INDEX provider_keys_provider ON provider_keys (provider_id) WHERE deleted_at IS NULL;

CREATE TABLE logic_models (
    id                  bigserial PRIMARY KEY,
    code                text NOT NULL UNIQUE,
    kind                text NOT NULL CHECK (kind IN ('chat', 'embedding')),
    embedding_dimension integer NOT NULL DEFAULT 0,
    query_prefix        text NOT NULL DEFAULT '',
    document_prefix     text NOT NULL DEFAULT '',
    description         text NOT NULL DEFAULT ''
);

CREATE TABLE deployments (
    id                    bigserial PRIMARY KEY,
    logic_model_id        bigint NOT NULL REFERENCES logic_models(id),
    provider_id           bigint NOT NULL REFERENCES providers(id),
    upstream_model        text NOT NULL,
    weight                integer NOT NULL DEFAULT 100,
    enabled               boolean NOT NULL DEFAULT true,
    max_concurrency       integer NOT NULL DEFAULT 0,
    price_input           numeric(14, 6) NOT NULL DEFAULT 0,
    price_output          numeric(14, 6) NOT NULL DEFAULT 0,
    price_cached          numeric(14, 6) NOT NULL DEFAULT 0,
    currency              text NOT NULL DEFAULT 'USD',
    cap_thinking          boolean NOT NULL DEFAULT false,
    cap_vision            boolean NOT NULL DEFAULT false,
    cap_tools             boolean NOT NULL DEFAULT false,
    embedding_batch_limit integer NOT NULL DEFAULT 0,
    timeout_ms            integer NOT NULL DEFAULT 0,
    breaker               jsonb,
    UNIQUE (logic_model_id, provider_id, upstream_model)
);
CREATE INDEX deployments_provider ON deployments (provider_id);

CREATE TABLE route_groups (
    id                bigserial PRIMARY KEY,
    name              text NOT NULL UNIQUE,
    description       text NOT NULL DEFAULT '',
    tenant_id         bigint REFERENCES tenants(id),
    fallback_group_id bigint REFERENCES route_groups(id)
);

CREATE TABLE tiers (
    id                     bigserial PRIMARY KEY,
    route_group_id         bigint NOT NULL REFERENCES route_groups(id) ON DELETE CASCADE,
    name                   text NOT NULL CHECK (name IN ('fast', 'standard', 'deep')),
    timeout_ms             integer NOT NULL,
    first_chunk_timeout_ms integer NOT NULL,
    UNIQUE (route_group_id, name)
);

CREATE TABLE candidates (
    id             bigserial PRIMARY KEY,
    tier_id        bigint NOT NULL REFERENCES tiers(id) ON DELETE CASCADE,
    logic_model_id bigint NOT NULL REFERENCES logic_models(id),
    priority       integer NOT NULL DEFAULT 1,
    weight         integer NOT NULL DEFAULT 100,
    UNIQUE (tier_id, logic_model_id)
);
CREATE INDEX candidates_logic_model ON candidates (logic_model_id);

CREATE TABLE callers (
    id              bigserial PRIMARY KEY,
    name            text NOT NULL UNIQUE,
    business_line   text NOT NULL DEFAULT '',
    tenant_id       bigint REFERENCES tenants(id),
    route_group_id  bigint NOT NULL REFERENCES route_groups(id),
    priority_class  text NOT NULL DEFAULT 'interactive' CHECK (priority_class IN ('interactive', 'batch')),
    enabled         boolean NOT NULL DEFAULT true,
    monthly_budget  numeric(14, 4) NOT NULL DEFAULT 0,
    budget_currency text NOT NULL DEFAULT 'USD'
);

CREATE TABLE caller_limits (
    caller_id    bigint NOT NULL REFERENCES callers(id) ON DELETE CASCADE,
    tier         text NOT NULL CHECK (tier IN ('fast', 'standard', 'deep')),
    rpm          bigint NOT NULL DEFAULT 0,
    tpm          bigint NOT NULL DEFAULT 0,
    daily_tokens bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (caller_id, tier)
);

-- Caller API keys are credentials: only a SHA-256 hash is stored; creating and
-- revoking take effect immediately and are never undone by rollback or import.
CREATE TABLE caller_keys (
    id         bigserial PRIMARY KEY,
    caller_id  bigint NOT NULL REFERENCES callers(id) ON DELETE CASCADE,
    name       text NOT NULL DEFAULT '',
    prefix     text NOT NULL,
    hash       bytea NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX caller_keys_caller ON caller_keys (caller_id);

CREATE TRIGGER draft_tenants AFTER INSERT OR UPDATE OR DELETE ON tenants FOR EACH STATEMENT EXECUTE FUNCTION bump_draft_revision();
CREATE TRIGGER draft_providers AFTER INSERT OR UPDATE OR DELETE ON providers FOR EACH STATEMENT EXECUTE FUNCTION bump_draft_revision();
CREATE TRIGGER draft_provider_keys AFTER INSERT OR UPDATE OR DELETE ON provider_keys FOR EACH STATEMENT EXECUTE FUNCTION bump_draft_revision();
CREATE TRIGGER draft_logic_models AFTER INSERT OR UPDATE OR DELETE ON logic_models FOR EACH STATEMENT EXECUTE FUNCTION bump_draft_revision();
CREATE TRIGGER draft_deployments AFTER INSERT OR UPDATE OR DELETE ON deployments FOR EACH STATEMENT EXECUTE FUNCTION bump_draft_revision();
CREATE TRIGGER draft_route_groups AFTER INSERT OR UPDATE OR DELETE ON route_groups FOR EACH STATEMENT EXECUTE FUNCTION bump_draft_revision();
CREATE TRIGGER draft_tiers AFTER INSERT OR UPDATE OR DELETE ON tiers FOR EACH STATEMENT EXECUTE FUNCTION bump_draft_revision();
CREATE TRIGGER draft_candidates AFTER INSERT OR UPDATE OR DELETE ON candidates FOR EACH STATEMENT EXECUTE FUNCTION bump_draft_revision();
CREATE TRIGGER draft_callers AFTER INSERT OR UPDATE OR DELETE ON callers FOR EACH STATEMENT EXECUTE FUNCTION bump_draft_revision();
CREATE TRIGGER draft_caller_limits AFTER INSERT OR UPDATE OR DELETE ON caller_limits FOR EACH STATEMENT EXECUTE FUNCTION bump_draft_revision();
CREATE TRIGGER draft_caller_keys AFTER INSERT OR UPDATE OR DELETE ON caller_keys FOR EACH STATEMENT EXECUTE FUNCTION bump_draft_revision();

CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    username      text NOT NULL UNIQUE,
    password_hash text NOT NULL,
    role          text NOT NULL CHECK (role IN ('admin', 'viewer')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    disabled_at   timestamptz
);

-- Session table layout required by github.com/alexedwards/scs/postgresstore.
CREATE TABLE sessions (
    token  text PRIMARY KEY,
    data   bytea NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);

CREATE TABLE admin_tokens (
    id           bigserial PRIMARY KEY,
    name         text NOT NULL,
    prefix       text NOT NULL,
    hash         bytea NOT NULL UNIQUE,
    role         text NOT NULL DEFAULT 'admin' CHECK (role IN ('admin', 'viewer')),
    created_by   text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

-- Published versions are immutable: no UPDATE or DELETE is ever issued.
CREATE TABLE config_versions (
    number        bigint PRIMARY KEY,
    author        text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    message       text NOT NULL,
    snapshot      text NOT NULL,
    checks        jsonb NOT NULL DEFAULT '[]',
    rollback_of   bigint REFERENCES config_versions(number),
    draft_revision bigint NOT NULL
);

CREATE FUNCTION refuse_version_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'config_versions are immutable';
END $$;
CREATE TRIGGER config_versions_immutable BEFORE UPDATE OR DELETE ON config_versions
    FOR EACH ROW EXECUTE FUNCTION refuse_version_change();

COMMIT;
