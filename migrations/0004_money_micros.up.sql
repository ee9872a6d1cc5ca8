-- Money is integers: every price, budget and cost is a bigint of micro-units
-- (millionths) of its currency, never numeric or float. Columns are renamed
-- with a _micros suffix so no query can read a micro amount as whole units.
--
-- Existing values convert exactly where they have at most six decimals
-- (prices were numeric(14,6) and budgets numeric(14,4), so always); call-log
-- costs and roll-ups, written from float64s, are rounded half away from zero
-- to the nearest micro-unit. A roll-up is converted on its own, so it may
-- differ by a few micros from the sum of its converted call logs (which may
-- also have been dropped by retention already); new rows add up exactly.
BEGIN;

ALTER TABLE deployments RENAME COLUMN price_input TO price_input_micros;
ALTER TABLE deployments RENAME COLUMN price_output TO price_output_micros;
ALTER TABLE deployments RENAME COLUMN price_cached TO price_cached_micros;
ALTER TABLE deployments
    ALTER COLUMN price_input_micros DROP DEFAULT,
    ALTER COLUMN price_output_micros DROP DEFAULT,
    ALTER COLUMN price_cached_micros DROP DEFAULT;
ALTER TABLE deployments
    ALTER COLUMN price_input_micros TYPE bigint USING round(price_input_micros * 1000000)::bigint,
    ALTER COLUMN price_output_micros TYPE bigint USING round(price_output_micros * 1000000)::bigint,
    ALTER COLUMN price_cached_micros TYPE bigint USING round(price_cached_micros * 1000000)::bigint;
ALTER TABLE deployments
    ALTER COLUMN price_input_micros SET DEFAULT 0,
    ALTER COLUMN price_output_micros SET DEFAULT 0,
    ALTER COLUMN price_cached_micros SET DEFAULT 0,
    ADD CONSTRAINT deployments_prices_nonnegative
        CHECK (price_input_micros >= 0 AND price_output_micros >= 0 AND price_cached_micros >= 0);

ALTER TABLE callers RENAME COLUMN monthly_budget TO monthly_budget_micros;
ALTER TABLE callers ALTER COLUMN monthly_budget_micros DROP DEFAULT;
ALTER TABLE callers
    ALTER COLUMN monthly_budget_micros TYPE bigint USING round(monthly_budget_micros * 1000000)::bigint;
ALTER TABLE callers
    ALTER COLUMN monthly_budget_micros SET DEFAULT 0,
    ADD CONSTRAINT callers_budget_nonnegative CHECK (monthly_budget_micros >= 0);

-- call_logs is partitioned: the parent's changes apply to every partition.
ALTER TABLE call_logs RENAME COLUMN cost TO cost_micros;
ALTER TABLE call_logs
    ALTER COLUMN cost_micros TYPE bigint USING round(cost_micros * 1000000)::bigint; -- NULL = not priced

ALTER TABLE cost_rollups RENAME COLUMN cost TO cost_micros;
ALTER TABLE cost_rollups ALTER COLUMN cost_micros DROP DEFAULT;
ALTER TABLE cost_rollups
    ALTER COLUMN cost_micros TYPE bigint USING round(cost_micros * 1000000)::bigint;
ALTER TABLE cost_rollups ALTER COLUMN cost_micros SET DEFAULT 0;

ALTER TABLE call_stats RENAME COLUMN cost TO cost_micros;
ALTER TABLE call_stats ALTER COLUMN cost_micros DROP DEFAULT;
ALTER TABLE call_stats
    ALTER COLUMN cost_micros TYPE bigint USING round(cost_micros * 1000000)::bigint;
ALTER TABLE call_stats ALTER COLUMN cost_micros SET DEFAULT 0;

COMMIT;
