-- Whether a route group's prompts and completions are exported on its trace
-- spans (gen_ai.input.messages / gen_ai.output.messages): off unless the
-- operator turns it on, group by group.
BEGIN;
ALTER TABLE route_groups ADD COLUMN trace_content boolean NOT NULL DEFAULT false;
COMMIT;
