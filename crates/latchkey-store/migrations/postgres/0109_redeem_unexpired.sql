-- Issue 21: the redemption marks a code used only while it is unexpired. An organisation's policy change expires
-- the pending codes it refuses (to 0); an exchange that read such a code as valid just before then fails as for a
-- used code, instead of turning it into a grant the change did not see. The rest of the function is 0106's.
CREATE OR REPLACE FUNCTION latchkey_redeem_code_fast(
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
    UPDATE auth_codes SET used_at = p_now, grant_id = p_id
        WHERE code_hash = p_code_hash AND used_at IS NULL AND expires_at > p_now;
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
