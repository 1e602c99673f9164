-- Performance (issue 7): a refresh token now carries its grant's id (latchkey_core::refresh_token), so a grant is
-- found through its time-ordered id and its refresh hash is only compared, never searched. The unique index on
-- refresh_hash, one random page to write per issued grant (and the index that stops fitting any cache with
-- millions of grants), goes. Tokens issued before this version carry no id: their grants are marked
-- `legacy_refresh` and stay findable by hash through a partial index that new grants never enter.
-- SQLite cannot drop a column's UNIQUE constraint, so the table is made again (rowids kept: they order grants for
-- the refresh-token limits), with its indexes and the grant_counts triggers.
CREATE TABLE grants_new (
    id             TEXT PRIMARY KEY,
    client_id      TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    user_id        TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    scopes         INTEGER NOT NULL,
    refresh_hash   BLOB NOT NULL,
    dpop_jkt       TEXT,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER,
    revoked_at     INTEGER,
    code_hash      BLOB NOT NULL,
    legacy_refresh INTEGER
);
INSERT INTO grants_new (rowid, id, client_id, user_id, scopes, refresh_hash, dpop_jkt, created_at, expires_at,
                        revoked_at, code_hash, legacy_refresh)
    SELECT rowid, id, client_id, user_id, scopes, refresh_hash, dpop_jkt, created_at, expires_at, revoked_at,
           code_hash, 1
    FROM grants;
DROP TABLE grants;
ALTER TABLE grants_new RENAME TO grants;
CREATE INDEX grants_live_client_user ON grants(client_id, user_id) WHERE revoked_at IS NULL;
CREATE INDEX grants_live_user ON grants(user_id) WHERE revoked_at IS NULL;
CREATE UNIQUE INDEX grants_legacy_refresh ON grants(refresh_hash) WHERE legacy_refresh IS NOT NULL;

CREATE TRIGGER grant_counts_insert AFTER INSERT ON grants WHEN NEW.revoked_at IS NULL BEGIN
    INSERT INTO grant_counts (user_id, client_id, unrevoked) VALUES (NEW.user_id, NEW.client_id, 1)
        ON CONFLICT (user_id, client_id) DO UPDATE SET unrevoked = unrevoked + 1;
END;
CREATE TRIGGER grant_counts_revoke AFTER UPDATE OF revoked_at ON grants
    WHEN OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL BEGIN
    UPDATE grant_counts SET unrevoked = unrevoked - 1 WHERE user_id = OLD.user_id AND client_id = OLD.client_id;
END;
CREATE TRIGGER grant_counts_unrevoke AFTER UPDATE OF revoked_at ON grants
    WHEN OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS NULL BEGIN
    INSERT INTO grant_counts (user_id, client_id, unrevoked) VALUES (NEW.user_id, NEW.client_id, 1)
        ON CONFLICT (user_id, client_id) DO UPDATE SET unrevoked = unrevoked + 1;
END;
CREATE TRIGGER grant_counts_delete AFTER DELETE ON grants WHEN OLD.revoked_at IS NULL BEGIN
    UPDATE grant_counts SET unrevoked = unrevoked - 1 WHERE user_id = OLD.user_id AND client_id = OLD.client_id;
END;
