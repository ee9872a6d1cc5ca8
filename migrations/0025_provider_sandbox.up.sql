-- A provider that is the local fake vendor (onboarding's sandbox template)
-- is marked as such by its own flag. Before, the console told it by the
-- words its notes began with; providers onboarded that way keep the badge.
BEGIN;

ALTER TABLE providers ADD COLUMN sandbox boolean NOT NULL DEFAULT false;
UPDATE providers SET sandbox = true WHERE notes LIKE 'LOCAL SANDBOX%';

COMMIT;
