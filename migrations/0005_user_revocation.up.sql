-- Disabling a user revokes everything that acts for them, in one
-- transaction: their console sessions and the admin API tokens they created.
--
-- admin_tokens.owner_id is the console user who created a token (created_by
-- stays as the name shown). Tokens made outside the console (by scripts,
-- tests) have no owner. Authentication also refuses a token whose owner is
-- disabled, in case a token ever escapes the revocation.
--
-- user_sessions maps console session tokens (the scs sessions table, whose
-- data is an opaque blob) to their user, so the user's sessions can be
-- deleted rather than merely refused on their next request.
BEGIN;

ALTER TABLE admin_tokens ADD COLUMN owner_id bigint REFERENCES users (id);
UPDATE admin_tokens t SET owner_id = u.id FROM users u WHERE u.username = t.created_by;
CREATE INDEX admin_tokens_owner_live ON admin_tokens (owner_id) WHERE revoked_at IS NULL;

-- Tokens of users disabled before this migration kept working: revoke them.
UPDATE admin_tokens SET revoked_at = now()
WHERE revoked_at IS NULL AND owner_id IN (SELECT id FROM users WHERE disabled_at IS NOT NULL);

CREATE TABLE user_sessions (
    token   text PRIMARY KEY,
    user_id bigint NOT NULL REFERENCES users (id),
    expiry  timestamptz NOT NULL
);
CREATE INDEX user_sessions_user ON user_sessions (user_id);

COMMIT;
