-- Parking is its own flag on deployments and candidates. Before, a weight
-- of 0 or less parked one (the console's Park button negated the weight,
-- so −30 was parked and remembered 30). Rows so encoded become parked with
-- their weight kept as a positive share; a weight is never below 0 again,
-- and 0 only on a parked row.
BEGIN;

ALTER TABLE deployments ADD COLUMN parked boolean NOT NULL DEFAULT false;
UPDATE deployments SET parked = true, weight = -weight WHERE weight <= 0;
ALTER TABLE deployments ADD CONSTRAINT deployments_weight_parked CHECK (weight > 0 OR (weight = 0 AND parked));

ALTER TABLE candidates ADD COLUMN parked boolean NOT NULL DEFAULT false;
UPDATE candidates SET parked = true, weight = -weight WHERE weight <= 0;
ALTER TABLE candidates ADD CONSTRAINT candidates_weight_parked CHECK (weight > 0 OR (weight = 0 AND parked));

COMMIT;
