-- The Responses API front door (issue 15): a deployment declares whether
-- its vendor serves OpenAI's Responses API (POST {base}/responses). An
-- OpenAI-protocol deployment that does gets /v1/responses requests passed
-- through natively; every other deployment gets them translated into chat
-- completions. Most OpenAI-compatible vendors serve only chat completions,
-- so it is off by default.
BEGIN;

ALTER TABLE deployments ADD COLUMN cap_responses_api boolean NOT NULL DEFAULT false;

COMMIT;
