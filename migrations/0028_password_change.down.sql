BEGIN;

ALTER TABLE users DROP COLUMN must_change_password, DROP COLUMN access_epoch;

COMMIT;
