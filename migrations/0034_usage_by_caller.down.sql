BEGIN;

DROP INDEX call_stats_caller;

COMMIT;
