-- Front doors (issue 15): besides OpenAI's chat completions, callers reach
-- the journey through Anthropic's Messages API (and its count_tokens) and
-- OpenAI's Responses API. Every call-log row says which door it came
-- through: chat_completions, messages, count_tokens, responses, embeddings
-- or models. Rows written before this migration keep NULL (unknown).
BEGIN;

ALTER TABLE call_logs ADD COLUMN endpoint text;

-- Searching by a door other than chat completions (the bulk of traffic)
-- uses this index; a partial one keeps the write cost of chat rows nil.
CREATE INDEX call_logs_endpoint ON call_logs (endpoint, at, request_id)
    WHERE endpoint <> 'chat_completions';

COMMIT;
