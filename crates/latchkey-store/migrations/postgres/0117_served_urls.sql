-- The public URLs the last server to start serves (one row), so that the admin CLI names the server that runs.
CREATE TABLE served_urls (
    id          BIGINT PRIMARY KEY CHECK (id = 1),
    issuer      TEXT NOT NULL,
    auth        TEXT NOT NULL,
    token       TEXT NOT NULL,
    api         TEXT NOT NULL,
    recorded_at BIGINT NOT NULL
);
