-- Usage per caller and tenant (the console's Usage page, GET
-- /admin/api/usage) reads a caller's month and days from call_stats. Its
-- primary key leads with the hour, and its rows are wide (the latency
-- histogram), so a caller's month was a scan of every caller's hours, then
-- a heap page per row. This index leads with the caller and carries the
-- columns the usage sums: a caller's month is an index-only range scan
-- (on a million calls over 30 days, 50 callers: 183 pages instead of
-- 11,579).
BEGIN;

CREATE INDEX call_stats_caller ON call_stats (caller, hour)
    INCLUDE (logic_model, currency, requests, errors, prompt_tokens, completion_tokens, cost_micros);

COMMIT;
