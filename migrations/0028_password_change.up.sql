-- A password the user did not choose (the first admin's generated one, one an
-- admin reset) must be changed at the next sign-in: until then the console
-- shows only the change-password page.
--
-- access_epoch counts the times a user's access was ended (disabled, demoted,
-- password reset, removed by the identity provider). A console session
-- remembers the epoch it signed in under and is refused once the user's has
-- moved on: the sessions are deleted when access ends, and the epoch also
-- refuses one that a request still in flight wrote back.
BEGIN;

ALTER TABLE users
    ADD COLUMN must_change_password boolean NOT NULL DEFAULT false,
    ADD COLUMN access_epoch bigint NOT NULL DEFAULT 0;

COMMIT;
