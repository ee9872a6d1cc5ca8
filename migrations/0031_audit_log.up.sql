-- The audit trail: one row per console, admin-API or command-line action
-- that changes something or touches a secret, append-only and chained by
-- hash. Each row's hash is SHA-256 over its fields and the previous row's
-- hash (store/audit.go says exactly how), so a row edited or deleted
-- behind the application's back breaks the chain at that row.
--
-- The trigger refuses UPDATE and DELETE to everyone, the application
-- included. The table's owner or a superuser can still disable the trigger
-- or truncate the table: that is what the chain detects.
--
-- audit_head holds the hash of the last row. Appending locks it (SELECT …
-- FOR UPDATE), so appends are serialised and the chain stays linear, and
-- it lets a check notice rows cut from the end.
BEGIN;

CREATE TABLE audit_log (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL,
    actor       text NOT NULL DEFAULT '',
    actor_kind  text NOT NULL CHECK (actor_kind IN ('user', 'token', 'system', 'cli')),
    addr        text NOT NULL DEFAULT '',
    action      text NOT NULL,
    object_kind text NOT NULL DEFAULT '',
    object_id   text NOT NULL DEFAULT '',
    object_name text NOT NULL DEFAULT '',
    outcome     text NOT NULL CHECK (outcome IN ('ok', 'refused', 'failed')),
    status      integer NOT NULL DEFAULT 0,
    detail      jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(detail) = 'object'),
    prev_hash   text NOT NULL,
    hash        text NOT NULL UNIQUE
);

CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_actor ON audit_log (actor, id);
CREATE INDEX audit_log_action ON audit_log (action, id);

CREATE TABLE audit_head (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    last_id bigint NOT NULL DEFAULT 0,
    hash    text NOT NULL DEFAULT ''
);
INSERT INTO audit_head DEFAULT VALUES;

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP;
END;
$$;

CREATE TRIGGER audit_log_append_only
    BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

CREATE TRIGGER audit_log_no_truncate
    BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

COMMIT;
