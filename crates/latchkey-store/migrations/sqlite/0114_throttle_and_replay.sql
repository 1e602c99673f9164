-- Sign-in throttling counts every attempt before its password is checked, and a window that reached its limit is
-- followed by one twice as long (up to a day): each row keeps its own window's length.
ALTER TABLE login_failures ADD COLUMN window_secs INTEGER NOT NULL DEFAULT 900;
-- Single-use values that a replay could present with another expiry (a DPoP proof's jti under another iat, a
-- JWT-bearer assertion's jti under another exp) are keyed without it, behind the byte 0xFF, and purged by their
-- expires_at through this index, which covers them alone.
CREATE INDEX replay_untimed_expiry ON replay(expires_at) WHERE key_hash >= X'FF';
