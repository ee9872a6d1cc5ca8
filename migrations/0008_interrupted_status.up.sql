-- A call the gateway itself cut short — a stream still open when the
-- shutdown grace ran out — is neither the vendor's failure nor the caller's
-- cancellation: it gets its own status, "interrupted".
BEGIN;

ALTER TABLE call_logs DROP CONSTRAINT call_logs_status_check;
ALTER TABLE call_logs ADD CONSTRAINT call_logs_status_check
    CHECK (status IN ('ok', 'upstream_error', 'rejected', 'client_cancelled', 'interrupted'));

COMMIT;
