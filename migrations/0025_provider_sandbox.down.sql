-- The sandbox flag goes; the notes still say so in words.
BEGIN;

ALTER TABLE providers DROP COLUMN sandbox;

COMMIT;
