-- Single-use values (DPoP proof jtis, server nonces), remembered until they expire.
CREATE TABLE replay (
    key_hash   BLOB PRIMARY KEY,
    expires_at INTEGER NOT NULL
);
CREATE INDEX replay_expiry ON replay(expires_at);
