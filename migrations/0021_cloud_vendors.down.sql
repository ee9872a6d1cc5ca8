BEGIN;

ALTER TABLE providers
    DROP COLUMN auth_url,
    DROP COLUMN region,
    DROP COLUMN api_version;

COMMIT;
