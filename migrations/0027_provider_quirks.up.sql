-- Provider quirks: the known departures of an OpenAI-compatible vendor from
-- OpenAI's chat-completions wire that the gateway works around (a JSON
-- array of codes such as "no_stream_options"; see routing/config/quirks.go).
BEGIN;

ALTER TABLE providers
    ADD COLUMN quirks jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(quirks) = 'array');

COMMIT;
