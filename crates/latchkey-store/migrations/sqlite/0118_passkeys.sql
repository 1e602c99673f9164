-- Passkeys: each account's WebAuthn credentials (the public key and counter, serialized by the WebAuthn library;
-- never a secret), and the ceremonies in progress, each under the hash of an id only the browser holds, its state
-- sealed under a key derived from that id (no usable challenge at rest).
CREATE TABLE passkeys (
    credential_id TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    credential    TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER
);
CREATE INDEX passkeys_user ON passkeys(user_id);

CREATE TABLE webauthn_ceremonies (
    id_hash    BLOB PRIMARY KEY,
    user_id    TEXT,
    sealed     BLOB NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX webauthn_ceremonies_expiry ON webauthn_ceremonies(expires_at);
