BEGIN;

ALTER TABLE admin_tokens DROP COLUMN last_used_addr, DROP COLUMN expires_at;
DROP TABLE caller_key_usage;
DROP INDEX caller_keys_revoke_due;
DROP INDEX caller_keys_expiring;
ALTER TABLE caller_keys
    DROP COLUMN revoke_at,
    DROP COLUMN rotated_from,
    DROP COLUMN scope_doors,
    DROP COLUMN scope_models,
    DROP COLUMN scope_tiers,
    DROP COLUMN owner,
    DROP COLUMN expires_at;

COMMIT;
