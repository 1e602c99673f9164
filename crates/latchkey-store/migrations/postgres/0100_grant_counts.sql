-- Performance (issue 7). Numbered 0100 to stay clear of feature migrations numbered from 0003.

-- Unrevoked grants per (user, client), kept by a trigger in every transaction that touches grants (on every
-- instance), so that issuing a grant checks the refresh-token limits with one indexed read instead of walking the
-- user's grants. Expired grants still count: a count over a limit only means that the exact check runs.
CREATE TABLE grant_counts (
    user_id   TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    client_id TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    unrevoked BIGINT NOT NULL,
    PRIMARY KEY (user_id, client_id)
);
INSERT INTO grant_counts (user_id, client_id, unrevoked)
    SELECT user_id, client_id, count(*) FROM grants WHERE revoked_at IS NULL GROUP BY user_id, client_id;

CREATE FUNCTION grant_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.revoked_at IS NULL THEN
        UPDATE grant_counts SET unrevoked = unrevoked - 1 WHERE user_id = OLD.user_id AND client_id = OLD.client_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.revoked_at IS NULL THEN
        INSERT INTO grant_counts (user_id, client_id, unrevoked) VALUES (NEW.user_id, NEW.client_id, 1)
            ON CONFLICT (user_id, client_id) DO UPDATE SET unrevoked = grant_counts.unrevoked + 1;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER grant_counts_follow AFTER INSERT OR DELETE OR UPDATE OF revoked_at, user_id, client_id ON grants
    FOR EACH ROW EXECUTE FUNCTION grant_counts_follow();
