-- Caller keys and admin API tokens get a life cycle.
--
-- caller_keys: an optional expiry; an owner label; an optional scope (the
-- tiers, logic models and front doors the key may use; empty lists mean no
-- restriction); rotation (the new key names the one it replaced in
-- rotated_from; the old key's revoke_at is the end of its grace period —
-- the data plane refuses it from that instant by itself, and a worker job
-- then marks it revoked by "rotation").
--
-- Last use is kept in caller_key_usage, not on caller_keys: every change to
-- caller_keys bumps the configuration epoch (and reloads every instance's
-- keys), and last use is flushed in batches every few seconds.
BEGIN;

ALTER TABLE caller_keys
    ADD COLUMN expires_at   timestamptz,
    ADD COLUMN owner        text NOT NULL DEFAULT '',
    ADD COLUMN scope_tiers  text[] NOT NULL DEFAULT '{}',
    ADD COLUMN scope_models text[] NOT NULL DEFAULT '{}',
    ADD COLUMN scope_doors  text[] NOT NULL DEFAULT '{}',
    ADD COLUMN rotated_from bigint REFERENCES caller_keys (id),
    ADD COLUMN revoke_at    timestamptz;

CREATE INDEX caller_keys_expiring ON caller_keys (expires_at) WHERE revoked_at IS NULL AND expires_at IS NOT NULL;
CREATE INDEX caller_keys_revoke_due ON caller_keys (revoke_at) WHERE revoked_at IS NULL AND revoke_at IS NOT NULL;

CREATE TABLE caller_key_usage (
    key_id         bigint PRIMARY KEY REFERENCES caller_keys (id) ON DELETE CASCADE,
    last_used_at   timestamptz NOT NULL,
    last_used_addr text NOT NULL DEFAULT ''
);

ALTER TABLE admin_tokens
    ADD COLUMN expires_at     timestamptz,
    ADD COLUMN last_used_addr text NOT NULL DEFAULT '';

COMMIT;
