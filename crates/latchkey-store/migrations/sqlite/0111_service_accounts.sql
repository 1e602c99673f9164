-- Service accounts of content owners (issue 23): content owners and the channels they manage, service accounts of
-- a project with their public keys (never a private key), and the content owners each account may act for.
CREATE TABLE content_owners (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE content_owner_channels (
    owner_id   TEXT NOT NULL REFERENCES content_owners(id) ON DELETE CASCADE,
    channel_id TEXT NOT NULL REFERENCES channels(id) ON DELETE CASCADE,
    linked_at  INTEGER NOT NULL,
    PRIMARY KEY (owner_id, channel_id)
);

CREATE TABLE service_accounts (
    id           TEXT PRIMARY KEY,
    email        TEXT NOT NULL UNIQUE,
    project_id   TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    display_name TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    disabled_at  INTEGER
);
CREATE INDEX service_accounts_project ON service_accounts(project_id);

-- A key's id is the assertions' kid (the key file's private_key_id); public_key is its public half as JSON
-- ({"n","e"} for RS256, {"point"} for ES256, base64url).
CREATE TABLE service_account_keys (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES service_accounts(id) ON DELETE CASCADE,
    alg         TEXT NOT NULL,
    public_key  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    disabled_at INTEGER
);
CREATE INDEX service_account_keys_account ON service_account_keys(account_id);

CREATE TABLE content_owner_grants (
    owner_id   TEXT NOT NULL REFERENCES content_owners(id) ON DELETE CASCADE,
    account_id TEXT NOT NULL REFERENCES service_accounts(id) ON DELETE CASCADE,
    granted_at INTEGER NOT NULL,
    PRIMARY KEY (owner_id, account_id)
);
CREATE INDEX content_owner_grants_account ON content_owner_grants(account_id);
