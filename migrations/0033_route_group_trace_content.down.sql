BEGIN;
ALTER TABLE route_groups DROP COLUMN trace_content;
COMMIT;
