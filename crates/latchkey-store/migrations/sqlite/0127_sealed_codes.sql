-- Authorization codes carry their record, sealed (latchkey_core::auth_code); the exchange may check a code without
-- reading the store and leaves to the redemption what the store alone knows. Disabling an account now expires its
-- pending codes (to 0), so that the redemption refuses them; this expires those of accounts disabled before.
UPDATE auth_codes SET expires_at = 0
    WHERE used_at IS NULL AND user_id IN (SELECT id FROM users WHERE disabled_at IS NOT NULL);

-- That expiry finds an account's codes by user, as PostgreSQL's index (0001) does; a deletion's cascade too.
CREATE INDEX auth_codes_user ON auth_codes(user_id);
