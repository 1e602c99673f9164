-- Authorization codes carry their record, sealed (latchkey_core::auth_code): the exchange may check a code without
-- reading the store, and leaves to the redemption what the store alone knows. The redemption therefore spends a
-- code only while its user is enabled (checked under the user's lock, which disabling takes too, so a code stored
-- after the account was disabled is refused as well) and only with the scopes the store holds for it (a registered
-- API's retired scope, which latchkey_store::resources removes from pending codes, is not granted from the code's
-- own copy). The rest is 0109's.
CREATE OR REPLACE FUNCTION latchkey_redeem_code_fast(
    p_id BYTEA, p_client_id TEXT, p_user_id TEXT, p_scopes BIGINT, p_refresh_hash BYTEA, p_dpop_jkt TEXT,
    p_created_at BIGINT, p_expires_at BIGINT, p_revoked_at BIGINT, p_code_hash BYTEA,
    p_now BIGINT, p_per_client_user BIGINT, p_per_user BIGINT
) RETURNS INTEGER LANGUAGE plpgsql AS $$
DECLARE
    v_client_user BIGINT;
    v_user BIGINT;
BEGIN
    PERFORM 1 FROM users WHERE id = p_user_id AND disabled_at IS NULL FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    SELECT COALESCE(SUM(unrevoked) FILTER (WHERE client_id = p_client_id), 0), COALESCE(SUM(unrevoked), 0)
        INTO v_client_user, v_user FROM grant_counts WHERE user_id = p_user_id;
    IF v_client_user >= p_per_client_user OR v_user >= p_per_user THEN
        RETURN 2;
    END IF;
    UPDATE auth_codes SET used_at = p_now, grant_id = p_id
        WHERE code_hash = p_code_hash AND used_at IS NULL AND expires_at > p_now AND scopes = p_scopes;
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
