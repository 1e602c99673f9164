-- Accounts (issue 20): time-based access per project, the day a grant was last used, and the outbox of account
-- events, written in the same transaction as the change it reports. (sessions_user exists since 0001.)
ALTER TABLE projects ADD COLUMN time_based_access BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE grants ADD COLUMN last_used_at BIGINT;

-- No foreign keys: an event outlives the user and client it names (an account's deletion is itself an event).
CREATE TABLE account_events (
    id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        BIGINT NOT NULL,
    kind      TEXT NOT NULL,
    user_id   TEXT NOT NULL,
    client_id TEXT
);
CREATE INDEX account_events_user ON account_events(user_id);
