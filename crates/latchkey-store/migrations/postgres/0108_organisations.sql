-- Organisations (issue 21): their verified domains, members and administrators, and the policy their
-- administrators set over apps. A user belongs to at most one organisation (org_members is keyed by user).
-- Scope sets are the registry's bits, as in grants.scopes.
CREATE TABLE orgs (
    id                TEXT PRIMARY KEY,
    name              TEXT NOT NULL,
    created_at        BIGINT NOT NULL,
    restricted_scopes BIGINT NOT NULL DEFAULT 0,
    default_access    TEXT NOT NULL DEFAULT 'limited',
    trust_internal    BOOLEAN NOT NULL DEFAULT FALSE
);
-- A domain is claimed by one organisation: its members join by their address's domain.
CREATE TABLE org_domains (
    domain TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE
);
CREATE INDEX org_domains_org ON org_domains(org_id);
CREATE TABLE org_members (
    user_id  TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    org_id   TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
    admin    BOOLEAN NOT NULL DEFAULT FALSE,
    via      TEXT NOT NULL,
    added_at BIGINT NOT NULL
);
CREATE INDEX org_members_org ON org_members(org_id);
-- An app (client id) an organisation lists: its access (NULL: the default) and its domain-wide delegation
-- (NULL: none). No foreign key to clients: a listing outlives a purged client harmlessly.
CREATE TABLE org_apps (
    org_id    TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
    client_id TEXT NOT NULL,
    access    TEXT,
    scopes    BIGINT NOT NULL DEFAULT 0,
    delegated BIGINT,
    PRIMARY KEY (org_id, client_id)
);
ALTER TABLE projects ADD COLUMN org_id TEXT REFERENCES orgs(id);
ALTER TABLE projects ADD COLUMN audience TEXT NOT NULL DEFAULT 'external';
CREATE INDEX projects_org ON projects(org_id);
