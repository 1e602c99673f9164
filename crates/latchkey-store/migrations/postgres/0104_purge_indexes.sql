-- The purge finds expired throttling windows by their start, not by scanning every counter (sessions and codes
-- are indexed by expiry since 0001).
CREATE INDEX login_failures_window ON login_failures(window_start);
