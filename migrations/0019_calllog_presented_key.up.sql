-- A call log keeps the fingerprint of the caller key the request presented
-- (never the key): the key's shown prefix and a few bytes of its SHA-256,
-- which the console computes for every known key from caller_keys, so an
-- operator finds who calls with a revoked or unknown key. NULL: no key.
-- The search also filters by the HTTP status answered and by the error
-- code; each filter is an ordered index scan that stops after a page.
BEGIN;

ALTER TABLE call_logs ADD COLUMN presented_key text;

CREATE INDEX call_logs_presented_key ON call_logs (presented_key, at, request_id) WHERE presented_key IS NOT NULL;
CREATE INDEX call_logs_http_status ON call_logs (http_status, at, request_id) WHERE http_status <> 200;
CREATE INDEX call_logs_error_code ON call_logs (error_code, at, request_id) WHERE error_code IS NOT NULL;

COMMIT;
