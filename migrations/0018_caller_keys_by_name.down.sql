-- Back to keys owned by a caller row: keys of callers the draft does not
-- hold cannot be attached to one and are deleted.
BEGIN;

CREATE TRIGGER draft_caller_keys AFTER INSERT OR UPDATE OR DELETE ON caller_keys FOR EACH STATEMENT EXECUTE FUNCTION bump_draft_revision();
ALTER TABLE caller_keys DROP COLUMN revoked_by;
ALTER TABLE caller_keys DROP COLUMN created_by;
ALTER TABLE caller_keys ADD COLUMN caller_id bigint;
UPDATE caller_keys k SET caller_id = c.id FROM callers c WHERE c.name = k.caller_name;
DELETE FROM caller_keys WHERE caller_id IS NULL;
ALTER TABLE caller_keys ALTER COLUMN caller_id SET NOT NULL;
ALTER TABLE caller_keys ADD CONSTRAINT caller_keys_caller_id_fkey FOREIGN KEY (caller_id) REFERENCES callers(id) ON DELETE CASCADE;
CREATE INDEX caller_keys_caller ON caller_keys (caller_id);
DROP INDEX caller_keys_caller_name;
ALTER TABLE caller_keys DROP COLUMN caller_name;

COMMIT;
