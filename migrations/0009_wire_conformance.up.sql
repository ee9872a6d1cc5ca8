-- Wire conformance (issue 14): what the gateway tells callers and operators
-- about usage and structured output.
BEGIN;

-- The vendor reported no usage, so the gateway counted the tokens itself
-- with its embedded tokenizer; the console shows such counts as estimated.
ALTER TABLE call_logs ADD COLUMN usage_estimated boolean NOT NULL DEFAULT false;

-- The deployment's vendor enforces a JSON Schema on the answer natively
-- (Anthropic's output_config.format). Without it an Anthropic deployment
-- serves response_format through a forced tool call.
ALTER TABLE deployments ADD COLUMN cap_structured_output boolean NOT NULL DEFAULT false;

COMMIT;
