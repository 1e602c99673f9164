-- Accounts (issue 20): time-based access per project, the day a grant was last used, sessions found by user (to
-- end them all), and the outbox of account events, written in the same transaction as the change it reports.
ALTER TABLE projects ADD COLUMN time_based_access INTEGER NOT NULL DEFAULT 0;
ALTER TABLE grants ADD COLUMN last_used_at INTEGER;
CREATE INDEX sessions_user ON sessions(user_id);

-- No foreign keys: an event outlives the user and client it names (an account's deletion is itself an event).
CREATE TABLE account_events (
    id        INTEGER PRIMARY KEY,
    at        INTEGER NOT NULL,
    kind      TEXT NOT NULL,
    user_id   TEXT NOT NULL,
    client_id TEXT
);
CREATE INDEX account_events_user ON account_events(user_id);
