BEGIN;

ALTER TABLE user_sessions DROP COLUMN refresh_sealed, DROP COLUMN refreshed_at;
DROP INDEX users_idp_account;
ALTER TABLE users DROP COLUMN idp_issuer, DROP COLUMN idp_subject;
DROP TABLE oidc_settings;

COMMIT;
