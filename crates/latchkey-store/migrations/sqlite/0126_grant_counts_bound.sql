-- `grant_counts` becomes an upper bound of each (user, client)'s unrevoked grants instead of their exact number,
-- as on PostgreSQL: still raised by every grant that becomes unrevoked, no longer lowered by a revocation or a
-- deletion. A count over a limit sends the issuance to the exact path (latchkey_store::grants), which enforces
-- the limits and then sets the user's counts to their exact values.
DROP TRIGGER grant_counts_revoke;
DROP TRIGGER grant_counts_delete;
