-- The index of the single-use values kept without their expiry in front cost a page change of its own on every
-- DPoP proof recorded (more than 1% of a refresh). The purge walks their range of the primary key instead, out of
-- any request, every ten minutes: most of what it reads has expired and is deleted, the rest are the values of the
-- last proof window.
DROP INDEX replay_untimed_expiry;
