-- Cloud vendors: an Azure OpenAI provider names the api-version its
-- deployments are called with and, when its keys are Entra ID client
-- credentials, the token endpoint (empty: Microsoft's public cloud); an AWS
-- Bedrock provider names the region its requests are signed for. The
-- credentials themselves stay in provider_keys, sealed like every key.
BEGIN;

ALTER TABLE providers
    ADD COLUMN api_version text NOT NULL DEFAULT '',
    ADD COLUMN region      text NOT NULL DEFAULT '',
    ADD COLUMN auth_url    text NOT NULL DEFAULT '';

COMMIT;
