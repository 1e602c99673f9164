-- Performance (issue 7): redeeming a code is one call of this function, one round trip, instead of a transaction
-- of six (BEGIN, use the code, lock the user, insert the grant, read the counts, COMMIT). The statements and their
-- order are those the store ran before: in READ COMMITTED each statement of a function takes a fresh snapshot,
-- so the counts read after the user's row lock still see every grant committed before it.
-- Returns false when the code was already used (nothing is written then).
CREATE FUNCTION latchkey_redeem_code(
    p_code_hash BYTEA, p_now BIGINT, p_id BYTEA, p_client_id TEXT, p_user_id TEXT, p_scopes BIGINT,
    p_refresh_hash BYTEA, p_dpop_jkt TEXT, p_created_at BIGINT, p_expires_at BIGINT,
    p_per_client_user BIGINT, p_per_user BIGINT
) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
DECLARE
    v_client_user BIGINT;
    v_user BIGINT;
BEGIN
    UPDATE auth_codes SET used_at = p_now WHERE code_hash = p_code_hash AND used_at IS NULL;
    IF NOT FOUND THEN
        RETURN FALSE;
    END IF;
    -- One issuance per user at a time: the limits below then see every grant committed before.
    PERFORM 1 FROM users WHERE id = p_user_id FOR NO KEY UPDATE;
    INSERT INTO grants (id, client_id, user_id, scopes, refresh_hash, dpop_jkt, created_at, expires_at, revoked_at,
                        code_hash)
        VALUES (p_id, p_client_id, p_user_id, p_scopes, p_refresh_hash, p_dpop_jkt, p_created_at, p_expires_at, NULL,
                p_code_hash);
    -- Refresh-token limits: keep the newest N live grants of each set, invalidate the rest. The trigger's count of
    -- unrevoked grants (exact under the user's row lock) is read first: at or under a limit nothing can be over it.
    SELECT COALESCE(SUM(unrevoked) FILTER (WHERE client_id = p_client_id), 0), COALESCE(SUM(unrevoked), 0)
        INTO v_client_user, v_user FROM grant_counts WHERE user_id = p_user_id;
    IF v_client_user > p_per_client_user THEN
        UPDATE grants SET revoked_at = p_now WHERE id IN (SELECT id FROM grants WHERE client_id = p_client_id
            AND user_id = p_user_id AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > p_now)
            ORDER BY seq DESC OFFSET p_per_client_user);
    END IF;
    IF v_user > p_per_user THEN
        UPDATE grants SET revoked_at = p_now WHERE id IN (SELECT id FROM grants WHERE user_id = p_user_id
            AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > p_now) ORDER BY seq DESC OFFSET p_per_user);
    END IF;
    RETURN TRUE;
END
$$;
