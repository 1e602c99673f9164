-- One store (issue 18): both engines run the same statements.
-- E-mail addresses are looked up as lower(email) on both engines; the unique NOCASE index keeps them unique.
CREATE INDEX users_email_lower ON users(lower(email));

-- What a change caused, written in the same transaction as the change (a revoked grant, a reused code).
-- No foreign keys: a record outlives the user, client and grant it names.
CREATE TABLE audit_log (
    id        INTEGER PRIMARY KEY,
    at        INTEGER NOT NULL,
    action    TEXT NOT NULL,
    user_id   TEXT,
    client_id TEXT,
    grant_id  TEXT
);
