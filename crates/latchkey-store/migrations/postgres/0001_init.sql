-- latchkey schema, PostgreSQL (and PostgreSQL-compatible engines). Mirrors migrations/sqlite: times are Unix
-- seconds (BIGINT); secrets are stored only as SHA-256 hashes (BYTEA); grant ids are their 16 raw bytes.

CREATE TABLE projects (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    api_enabled BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  BIGINT NOT NULL
);

CREATE TABLE clients (
    client_id         TEXT PRIMARY KEY,
    project_id        TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    client_type       TEXT NOT NULL,
    redirect_uris     TEXT NOT NULL,           -- JSON array of strings
    secret_hash       BYTEA NOT NULL,
    bundle_id         TEXT,
    store_id          TEXT,
    team_id           TEXT,
    app_check         BOOLEAN NOT NULL DEFAULT FALSE,
    uwp_store_id      TEXT,
    package_sid       TEXT,
    extension_item_id TEXT,
    created_at        BIGINT NOT NULL,
    deleted_at        BIGINT
);
CREATE INDEX clients_project ON clients(project_id);

CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL,
    name          TEXT,
    password_hash TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    disabled_at   BIGINT
);
-- E-mail addresses are unique regardless of case.
CREATE UNIQUE INDEX users_email ON users (lower(email));

CREATE TABLE channels (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL UNIQUE REFERENCES users(id) ON DELETE CASCADE,
    title       TEXT NOT NULL,
    description TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);

CREATE TABLE sessions (
    token_hash BYTEA PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_user ON sessions(user_id);
CREATE INDEX sessions_expiry ON sessions(expires_at);

CREATE TABLE login_failures (
    key          TEXT PRIMARY KEY,
    count        BIGINT NOT NULL,
    window_start BIGINT NOT NULL
);

CREATE TABLE auth_codes (
    code_hash        BYTEA PRIMARY KEY,
    client_id        TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    user_id          TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    redirect_uri     TEXT NOT NULL,
    scopes           BIGINT NOT NULL,
    challenge_method TEXT,
    challenge        TEXT,
    nonce            TEXT,
    auth_time        BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    used_at          BIGINT,
    grant_lifetime   BIGINT
);
CREATE INDEX auth_codes_client ON auth_codes(client_id);
CREATE INDEX auth_codes_user ON auth_codes(user_id);
CREATE INDEX auth_codes_expiry ON auth_codes(expires_at);

CREATE TABLE grants (
    id           BYTEA PRIMARY KEY,
    -- Issue order, for "the oldest live refresh token" of the limits (SQLite uses its rowid).
    seq          BIGINT GENERATED ALWAYS AS IDENTITY,
    client_id    TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    scopes       BIGINT NOT NULL,
    refresh_hash BYTEA NOT NULL UNIQUE,
    dpop_jkt     TEXT,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT,
    revoked_at   BIGINT,
    code_hash    BYTEA NOT NULL
);
CREATE INDEX grants_live_client_user ON grants(client_id, user_id, seq) WHERE revoked_at IS NULL;
CREATE INDEX grants_live_user ON grants(user_id, seq) WHERE revoked_at IS NULL;
CREATE INDEX grants_code ON grants(code_hash);
CREATE INDEX grants_client ON grants(client_id);
CREATE INDEX grants_user ON grants(user_id);

CREATE TABLE keys (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind       TEXT NOT NULL,
    secret     BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    retired_at BIGINT
);

-- Single-use values (DPoP proof jtis, server nonces), remembered until they expire.
CREATE TABLE replay (
    key_hash   BYTEA PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
CREATE INDEX replay_expiry ON replay(expires_at);
