-- Caller API keys are credentials, not configuration: they belong to a
-- caller's name, outside the versioned draft, and work while the live
-- version contains a caller of that name. A version that removes the caller
-- suspends its keys (they are kept, not deleted); one that brings it back
-- restores them. Making and revoking a key is audited on its row and never
-- moves the draft revision.
BEGIN;

ALTER TABLE caller_keys ADD COLUMN caller_name text;
UPDATE caller_keys k SET caller_name = c.name FROM callers c WHERE c.id = k.caller_id;
ALTER TABLE caller_keys ALTER COLUMN caller_name SET NOT NULL;
ALTER TABLE caller_keys DROP COLUMN caller_id; -- its foreign key deleted keys with their caller
CREATE INDEX caller_keys_caller_name ON caller_keys (caller_name);

-- Who made or revoked a key (a console user or an admin token's name).
ALTER TABLE caller_keys ADD COLUMN created_by text NOT NULL DEFAULT '';
ALTER TABLE caller_keys ADD COLUMN revoked_by text;

DROP TRIGGER draft_caller_keys ON caller_keys;

COMMIT;
