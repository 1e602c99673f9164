-- APIs registered as resources (RFC 8707): each with its resource identifier, name, who may ask for its scopes,
-- the access-token format it wants and its introspection secrets (a JSON list of hashes, as clients.secrets).
-- Each scope holds one bit of the scope sets; a retired scope's row stays, with when it was retired, so that its
-- bit is not given to a new scope while a token that carries it may still be alive.
CREATE TABLE resources (
    id           TEXT PRIMARY KEY,
    project_id   TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    uri          TEXT NOT NULL UNIQUE,
    name         TEXT NOT NULL,
    visibility   TEXT NOT NULL DEFAULT 'project',
    token_format TEXT NOT NULL DEFAULT 'opaque',
    secrets      TEXT NOT NULL DEFAULT '[]',
    created_at   BIGINT NOT NULL
);
CREATE INDEX resources_project ON resources(project_id);
CREATE TABLE resource_scopes (
    bit          BIGINT PRIMARY KEY,
    resource_id  TEXT REFERENCES resources(id) ON DELETE SET NULL,
    name         TEXT,
    description  TEXT NOT NULL DEFAULT '',
    retired_at   BIGINT
);
CREATE UNIQUE INDEX resource_scopes_name ON resource_scopes(name);
CREATE INDEX resource_scopes_resource ON resource_scopes(resource_id);
