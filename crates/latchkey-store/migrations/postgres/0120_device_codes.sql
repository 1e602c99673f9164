-- The device authorization grant (RFC 8628): each device code and its user code, stored only as hashes, with the
-- scopes asked for, the interval the device must keep between polls (grown by each poll that came too soon),
-- whether the last poll came too soon, and where the person's decision stands. An approved device code's tokens
-- come from the authorization code stored under the same hash.
CREATE TABLE device_codes (
    device_code_hash BYTEA PRIMARY KEY,
    user_code_hash   BYTEA NOT NULL UNIQUE,
    client_id        TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    scopes           BIGINT NOT NULL,
    created_at       BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    poll_interval    BIGINT NOT NULL,
    last_poll_at     BIGINT,
    too_soon         BOOLEAN NOT NULL DEFAULT FALSE,
    state            TEXT NOT NULL DEFAULT 'pending'
);
CREATE INDEX device_codes_expiry ON device_codes(expires_at);
