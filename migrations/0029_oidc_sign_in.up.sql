-- Single sign-on with OpenID Connect.
--
-- oidc_settings is one row (id 1): the identity provider (issuer URL,
-- client id, the client secret sealed with SWITCHYARD_SECRET_KEY and its
-- fingerprint), the scopes asked for, the claim that carries the user's
-- groups, which groups make an admin or a viewer, the role of a user in
-- none of them ('' refuses the sign-in), and whether local passwords are
-- accepted at all.
--
-- users.idp_issuer and users.idp_subject name the identity-provider account
-- a single-sign-on user was created for. A user is matched on these, never
-- on the name: a local user with the same name is not taken over (the
-- sign-in is refused instead). Their password_hash is empty, which no
-- password matches.
--
-- user_sessions.refresh_sealed is the identity provider's refresh token of a
-- session started by single sign-on (sealed; the session row's token is the
-- additional data), refreshed_at when it was last exchanged: a session
-- whose refresh the provider refuses ends.
BEGIN;

CREATE TABLE oidc_settings (
    id                  smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    display_name        text NOT NULL DEFAULT '',
    issuer_url          text NOT NULL,
    client_id           text NOT NULL,
    client_secret       bytea,
    secret_fingerprint  text NOT NULL DEFAULT '',
    scopes              text NOT NULL DEFAULT 'openid profile email groups',
    groups_claim        text NOT NULL DEFAULT 'groups',
    admin_groups        text NOT NULL DEFAULT '',
    viewer_groups       text NOT NULL DEFAULT '',
    default_role        text NOT NULL DEFAULT '' CHECK (default_role IN ('', 'admin', 'viewer')),
    local_passwords     boolean NOT NULL DEFAULT true,
    updated_at          timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE users ADD COLUMN idp_issuer text, ADD COLUMN idp_subject text;
CREATE UNIQUE INDEX users_idp_account ON users (idp_issuer, idp_subject) WHERE idp_subject IS NOT NULL;

ALTER TABLE user_sessions ADD COLUMN refresh_sealed bytea, ADD COLUMN refreshed_at timestamptz;

COMMIT;
