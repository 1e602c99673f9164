-- Performance (issue 7). Numbered 0100 to stay clear of feature migrations numbered from 0004.

-- Unrevoked grants per (user, client), kept by triggers in every transaction that touches grants (whatever process
-- runs it), so that issuing a grant checks the refresh-token limits with two index lookups instead of walking the
-- user's grants. Expired grants still count: a count over a limit only means that the exact check runs.
CREATE TABLE grant_counts (
    user_id   TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    client_id TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    unrevoked INTEGER NOT NULL,
    PRIMARY KEY (user_id, client_id)
) WITHOUT ROWID;
INSERT INTO grant_counts (user_id, client_id, unrevoked)
    SELECT user_id, client_id, count(*) FROM grants WHERE revoked_at IS NULL GROUP BY user_id, client_id;

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

-- Single-use values in one B-tree (WITHOUT ROWID) instead of a table plus its primary-key index: one page
-- change fewer per recorded DPoP proof. The values recorded so far are kept.
CREATE TABLE replay_keys (
    key_hash   BLOB PRIMARY KEY,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO replay_keys (key_hash, expires_at) SELECT key_hash, expires_at FROM replay;
DROP TABLE replay;
ALTER TABLE replay_keys RENAME TO replay;
CREATE INDEX replay_expiry ON replay(expires_at);
