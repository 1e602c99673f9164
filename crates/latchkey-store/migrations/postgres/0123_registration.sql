-- Apps that register themselves (RFC 7591, client ID metadata documents): one project at a time may collect the
-- dynamically registered ones; a client made so is marked with how it registered, the hash of its registration
-- access token (RFC 7592), and the home page and logo its metadata named.
ALTER TABLE projects ADD COLUMN open_registration BOOLEAN NOT NULL DEFAULT FALSE;
CREATE UNIQUE INDEX projects_open_registration ON projects(open_registration) WHERE open_registration;
ALTER TABLE clients ADD COLUMN registration TEXT;
ALTER TABLE clients ADD COLUMN registration_token_hash BYTEA;
ALTER TABLE clients ADD COLUMN client_uri TEXT;
ALTER TABLE clients ADD COLUMN logo_uri TEXT;
-- An organisation may block every app that registered itself for its members.
ALTER TABLE orgs ADD COLUMN block_self_registered BOOLEAN NOT NULL DEFAULT FALSE;
