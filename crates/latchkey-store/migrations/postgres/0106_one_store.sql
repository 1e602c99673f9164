-- One store (issue 18): both engines run the same statements (the SQLite twin of this step is its 0106 too).

-- What a change caused, written in the same transaction as the change (a revoked grant, a reused code).
-- No foreign keys: a record outlives the user, client and grant it names.
CREATE TABLE audit_log (
    id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        BIGINT NOT NULL,
    action    TEXT NOT NULL,
    user_id   TEXT,
    client_id TEXT,
    grant_id  BYTEA
);

-- A redeemed code names its grant, as on SQLite since its 0101: a reused code's grants are found through the
-- code row, and the grants table no longer needs its index on code_hash (one random index page less to write
-- per issued grant).
ALTER TABLE auth_codes ADD COLUMN grant_id BYTEA;
UPDATE auth_codes a SET grant_id = g.id FROM grants g WHERE g.code_hash = a.code_hash AND a.used_at IS NOT NULL;
DROP INDEX grants_code;

-- The redemption in one round trip, for the usual case: the user under both refresh-token limits. The limits
-- themselves (which grants an issuance invalidates) are enforced by the store's shared unit of work, which runs
-- when this returns 2 (it then has written nothing). Returns 0 when the code was already used, 1 when the grant
-- is stored. The user's row lock comes first, as in the shared unit: issuances for one user run one after the
-- other, and in READ COMMITTED each statement of a function takes a fresh snapshot, so the counts read after the
-- lock see every grant committed before it.
DROP FUNCTION latchkey_redeem_code(BYTEA, BIGINT, BYTEA, TEXT, TEXT, BIGINT, BYTEA, TEXT, BIGINT, BIGINT, BIGINT,
                                   BIGINT);
-- The grant's columns come in the order of the grants table, as the store binds them for its INSERT.
CREATE FUNCTION latchkey_redeem_code_fast(
    p_id BYTEA, p_client_id TEXT, p_user_id TEXT, p_scopes BIGINT, p_refresh_hash BYTEA, p_dpop_jkt TEXT,
    p_created_at BIGINT, p_expires_at BIGINT, p_revoked_at BIGINT, p_code_hash BYTEA,
    p_now BIGINT, p_per_client_user BIGINT, p_per_user BIGINT
) RETURNS INTEGER LANGUAGE plpgsql AS $$
DECLARE
    v_client_user BIGINT;
    v_user BIGINT;
BEGIN
    PERFORM 1 FROM users WHERE id = p_user_id FOR NO KEY UPDATE;
    SELECT COALESCE(SUM(unrevoked) FILTER (WHERE client_id = p_client_id), 0), COALESCE(SUM(unrevoked), 0)
        INTO v_client_user, v_user FROM grant_counts WHERE user_id = p_user_id;
    IF v_client_user >= p_per_client_user OR v_user >= p_per_user THEN
        RETURN 2;
    END IF;
    UPDATE auth_codes SET used_at = p_now, grant_id = p_id WHERE code_hash = p_code_hash AND used_at IS NULL;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    INSERT INTO grants (id, client_id, user_id, scopes, refresh_hash, dpop_jkt, created_at, expires_at, revoked_at,
                        code_hash)
        VALUES (p_id, p_client_id, p_user_id, p_scopes, p_refresh_hash, p_dpop_jkt, p_created_at, p_expires_at,
                p_revoked_at, p_code_hash);
    RETURN 1;
END
$$;
