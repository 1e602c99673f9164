-- Refresh-token rotation (RFC 9700 §4.14.2): a project may rotate the refresh tokens of its clients, and the
-- hash of every refresh token a rotation retired is kept 30 days, so that a retired token presented again is
-- known as such and revokes its grant.
ALTER TABLE projects ADD COLUMN rotate_refresh_tokens INTEGER NOT NULL DEFAULT 0;
CREATE TABLE retired_refresh_tokens (
    hash        BLOB PRIMARY KEY,
    grant_id    TEXT NOT NULL REFERENCES grants(id) ON DELETE CASCADE,
    retired_at  INTEGER NOT NULL
);
CREATE INDEX retired_refresh_tokens_grant ON retired_refresh_tokens(grant_id);
CREATE INDEX retired_refresh_tokens_at ON retired_refresh_tokens(retired_at);
