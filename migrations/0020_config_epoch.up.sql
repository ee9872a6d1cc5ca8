-- The configuration epoch: a counter that only grows, bumped by every
-- publish and every change to caller keys (creation, revocation,
-- deletion). A last-known-good copy of the configuration carries the epoch
-- it was read at; an instance starting without PostgreSQL refuses a copy
-- older than the epoch PostgreSQL or Redis knows, so a copy put back on
-- disk cannot bring back a revoked caller key. Triggers bump it, so no
-- code path that publishes or revokes can forget to.
BEGIN;

CREATE TABLE config_epoch (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    epoch bigint NOT NULL
);
INSERT INTO config_epoch (epoch) VALUES (1);

CREATE FUNCTION bump_config_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE config_epoch SET epoch = epoch + 1;
    RETURN NULL;
END $$;

CREATE TRIGGER epoch_config_versions AFTER INSERT OR UPDATE OR DELETE ON config_versions
    FOR EACH STATEMENT EXECUTE FUNCTION bump_config_epoch();
CREATE TRIGGER epoch_caller_keys AFTER INSERT OR UPDATE OR DELETE ON caller_keys
    FOR EACH STATEMENT EXECUTE FUNCTION bump_config_epoch();

COMMIT;
