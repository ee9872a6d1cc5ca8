-- Coding-agent clients (Claude Code, Codex) name vendor models, not tiers:
-- a route group maps such names to its tiers or logic models (model
-- aliases). A deployment says whether its vendor runs a hosted web search
-- tool, and may refuse the fields a translation would drop (strict field
-- policy). A call log keeps the alias a request resolved through and the
-- fields its vendor did not get.
BEGIN;

-- A route group's aliases in their listed order (position 1, 2, …): the
-- first pattern that matches wins, so the order is part of the
-- configuration. A pattern is an exact name or a glob of * and ?; it maps
-- to a tier or to a logic model, never both. Positions are renumbered
-- within one transaction (a move swaps two), hence the deferred key.
CREATE TABLE model_aliases (
    id             bigserial PRIMARY KEY,
    route_group_id bigint NOT NULL REFERENCES route_groups(id) ON DELETE CASCADE,
    position       integer NOT NULL CHECK (position > 0),
    pattern        text NOT NULL,
    tier           text CHECK (tier IN ('fast', 'standard', 'deep')),
    logic_model_id bigint REFERENCES logic_models(id),
    CHECK ((tier IS NULL) <> (logic_model_id IS NULL)),
    UNIQUE (route_group_id, position) DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX model_aliases_logic_model ON model_aliases (logic_model_id) WHERE logic_model_id IS NOT NULL;
CREATE TRIGGER draft_model_aliases AFTER INSERT OR UPDATE OR DELETE ON model_aliases
    FOR EACH STATEMENT EXECUTE FUNCTION bump_draft_revision();

-- The vendor runs a hosted web search tool for this model (Anthropic's web
-- search server tool, Gemini's google_search, OpenAI's web_search); and the
-- strict field policy: a field the translation would drop is refused.
ALTER TABLE deployments
    ADD COLUMN cap_web_search boolean NOT NULL DEFAULT false,
    ADD COLUMN strict_fields  boolean NOT NULL DEFAULT false;

-- The alias pattern the requested model resolved through (NULL: it named a
-- tier or a logic model), and the request fields the vendor did not get
-- (NULL: none).
ALTER TABLE call_logs
    ADD COLUMN model_alias    text,
    ADD COLUMN dropped_fields text[];

-- The "dropped field" search walks the rows that dropped any field, newest
-- first; the rest (nearly all rows) cost this index nothing.
CREATE INDEX call_logs_dropped ON call_logs (at, request_id) WHERE dropped_fields IS NOT NULL;

COMMIT;
