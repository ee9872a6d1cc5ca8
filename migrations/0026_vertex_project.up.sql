-- Google Vertex AI: a provider names the Google Cloud project its models
-- are addressed under (its location is the region column). The
-- service-account key files stay in provider_keys, sealed like every key.
BEGIN;

ALTER TABLE providers ADD COLUMN project text NOT NULL DEFAULT '';

COMMIT;
