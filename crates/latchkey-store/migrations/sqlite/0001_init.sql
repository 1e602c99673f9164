-- latchkey schema, SQLite. Times are Unix seconds; secrets are stored only as SHA-256 hashes.

CREATE TABLE projects (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    api_enabled INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL
);

CREATE TABLE clients (
    client_id         TEXT PRIMARY KEY,
    project_id        TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    client_type       TEXT NOT NULL,
    redirect_uris     TEXT NOT NULL,           -- JSON array of strings
    secret_hash       BLOB NOT NULL,
    bundle_id         TEXT,
    store_id          TEXT,
    team_id           TEXT,
    app_check         INTEGER NOT NULL DEFAULT 0,
    uwp_store_id      TEXT,
    package_sid       TEXT,
    extension_item_id TEXT,
    created_at        INTEGER NOT NULL,
    deleted_at        INTEGER
);
CREATE INDEX clients_project ON clients(project_id);

CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE COLLATE NOCASE,
    name          TEXT,
    password_hash TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    disabled_at   INTEGER
);

CREATE TABLE channels (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL UNIQUE REFERENCES users(id) ON DELETE CASCADE,
    title       TEXT NOT NULL,
    description TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

CREATE TABLE sessions (
    token_hash BLOB PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);

CREATE TABLE login_failures (
    key          TEXT PRIMARY KEY,
    count        INTEGER NOT NULL,
    window_start INTEGER NOT NULL
);

CREATE TABLE auth_codes (
    code_hash        BLOB PRIMARY KEY,
    client_id        TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    user_id          TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    redirect_uri     TEXT NOT NULL,
    scopes           INTEGER NOT NULL,
    challenge_method TEXT,
    challenge        TEXT,
    nonce            TEXT,
    auth_time        INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL,
    used_at          INTEGER,
    grant_lifetime   INTEGER
);

CREATE TABLE grants (
    id           TEXT PRIMARY KEY,
    client_id    TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    scopes       INTEGER NOT NULL,
    refresh_hash BLOB NOT NULL UNIQUE,
    dpop_jkt     TEXT,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER,
    revoked_at   INTEGER,
    code_hash    BLOB NOT NULL
);
CREATE INDEX grants_live_client_user ON grants(client_id, user_id) WHERE revoked_at IS NULL;
CREATE INDEX grants_live_user ON grants(user_id) WHERE revoked_at IS NULL;
CREATE INDEX grants_code ON grants(code_hash);

CREATE TABLE keys (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL,
    secret     BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    retired_at INTEGER
);
