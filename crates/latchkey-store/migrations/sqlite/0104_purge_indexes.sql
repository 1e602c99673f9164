-- The purge (every 10 minutes, in the writer) found expired sessions, codes and throttling windows by scanning
-- their tables: with a day of codes kept past their expiry, that is a scan of every code issued in a day, which
-- holds up every write meanwhile and fills the writer's page cache (257,000 codes: 125 ms, 33 MB). Indexed by
-- expiry, as on PostgreSQL, each purge reads only what it deletes.
CREATE INDEX sessions_expiry ON sessions(expires_at);
CREATE INDEX auth_codes_expiry ON auth_codes(expires_at);
CREATE INDEX login_failures_window ON login_failures(window_start);
