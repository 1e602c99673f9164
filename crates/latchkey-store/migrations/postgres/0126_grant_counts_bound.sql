-- `grant_counts` becomes an upper bound of each (user, client)'s unrevoked grants instead of their exact number.
-- It is still raised by every grant that becomes unrevoked (issued, or un-revoked), but no longer lowered by a
-- revocation or a deletion: a revocation then costs the one UPDATE of its grant, without a trigger call that
-- writes a second row. The count is only ever a filter (at or under a limit, nothing can be over it); a count over
-- a limit sends the issuance to the exact path (latchkey_store::grants), which enforces the limits and then sets
-- the user's counts to their exact values, under the user's lock that every issuance takes.
CREATE OR REPLACE FUNCTION grant_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO grant_counts (user_id, client_id, unrevoked) VALUES (NEW.user_id, NEW.client_id, 1)
        ON CONFLICT (user_id, client_id) DO UPDATE SET unrevoked = grant_counts.unrevoked + 1;
    RETURN NULL;
END
$$;
DROP TRIGGER grant_counts_follow ON grants;
CREATE TRIGGER grant_counts_insert AFTER INSERT ON grants
    FOR EACH ROW WHEN (NEW.revoked_at IS NULL) EXECUTE FUNCTION grant_counts_follow();
CREATE TRIGGER grant_counts_unrevoke AFTER UPDATE OF revoked_at, user_id, client_id ON grants
    FOR EACH ROW WHEN (NEW.revoked_at IS NULL AND (OLD.revoked_at IS NOT NULL OR OLD.user_id <> NEW.user_id
        OR OLD.client_id <> NEW.client_id))
    EXECUTE FUNCTION grant_counts_follow();
