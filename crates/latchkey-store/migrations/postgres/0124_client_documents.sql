-- Client ID metadata documents: each fetched document as it came (at most 5 KB), kept until its caching says (5
-- minutes to 24 hours), shared by every instance; and the project that holds the clients such documents describe,
-- which belong to no developer's project (none of them is a member of it).
CREATE TABLE client_documents (
    url         TEXT PRIMARY KEY,
    document    TEXT NOT NULL,
    fetched_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX client_documents_expires ON client_documents(expires_at);
INSERT INTO projects (id, name, api_enabled, created_at) VALUES ('client-metadata-documents', 'Client ID metadata documents', FALSE, 0);
