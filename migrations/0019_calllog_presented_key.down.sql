BEGIN;
DROP INDEX IF EXISTS call_logs_error_code;
DROP INDEX IF EXISTS call_logs_http_status;
DROP INDEX IF EXISTS call_logs_presented_key;
ALTER TABLE call_logs DROP COLUMN IF EXISTS presented_key;
COMMIT;
