-- Back to parking by weight: a parked row's weight is negated (0 stays 0).
BEGIN;

ALTER TABLE deployments DROP CONSTRAINT deployments_weight_parked;
UPDATE deployments SET weight = -weight WHERE parked;
ALTER TABLE deployments DROP COLUMN parked;

ALTER TABLE candidates DROP CONSTRAINT candidates_weight_parked;
UPDATE candidates SET weight = -weight WHERE parked;
ALTER TABLE candidates DROP COLUMN parked;

COMMIT;
