-- Headers toward a vendor, per provider: static extra headers (a vendor's
-- organization or beta flags) and an allowlist of caller headers passed
-- through. Both are draft configuration on the provider row, as JSON arrays
-- in their canonical form.
--
-- A secret header's value is a credential, not configuration: it is AES-GCM
-- sealed in its own table, one immutable row per value, referenced from the
-- provider's headers by id. Rows are kept when a value is replaced, so that
-- rolling back to a version that used a value restores it (as provider keys
-- are kept); they go with their provider.
BEGIN;

ALTER TABLE providers
    ADD COLUMN headers jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(headers) = 'array'),
    ADD COLUMN pass_headers jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(pass_headers) = 'array');

CREATE TABLE provider_header_secrets (
    id          bigserial PRIMARY KEY,
    provider_id bigint NOT NULL REFERENCES providers(id) ON DELETE CASCADE,
    name        text NOT NULL,
    secret      bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX provider_header_secrets_provider ON provider_header_secrets (provider_id);

COMMIT;
