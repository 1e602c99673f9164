-- The device authorization grant (RFC 8628): each device code and its user code, stored only as hashes, with the
-- scopes asked for, the interval the device must keep between polls (grown by each poll that came too soon),
-- whether the last poll came too soon, and where the person's decision stands. An approved device code's tokens
-- come from the authorization code stored under the same hash.
CREATE TABLE device_codes (
    device_code_hash BLOB PRIMARY KEY,
    user_code_hash   BLOB NOT NULL UNIQUE,
    client_id        TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    scopes           INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL,
    poll_interval    INTEGER NOT NULL,
    last_poll_at     INTEGER,
    too_soon         INTEGER NOT NULL DEFAULT 0,
    state            TEXT NOT NULL DEFAULT 'pending'
);
CREATE INDEX device_codes_expiry ON device_codes(expires_at);
