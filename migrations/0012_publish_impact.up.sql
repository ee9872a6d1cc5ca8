-- Publishing with consequences (issue 16): the impact preview replays the
-- last 24 h of requests against a draft, so a call-log row keeps the
-- request's shape as routing saw it. Both are bit sets, cheap to write and
-- to group by: needs = thinking 1, vision 2, tools 4, embedding 8, a
-- top-level field this build does not know 16; fields = the OpenAI chat
-- fields the request set (routing/adapter.ChatFields, by position).
-- Rows written before this migration read as 0: a plain request.
BEGIN;

ALTER TABLE call_logs
    ADD COLUMN needs smallint NOT NULL DEFAULT 0,
    ADD COLUMN fields bigint NOT NULL DEFAULT 0;

COMMIT;
