-- Single-use values start with their expiry (8 bytes, big-endian), so the expired ones are one range of the
-- primary key: the index on expires_at, one more B-tree insert per recorded DPoP jti and nonce, goes. Values
-- of the earlier form (SHA-256 hashes) sort after every expiry before 2106 and are purged by expires_at.
DROP INDEX replay_expiry;
