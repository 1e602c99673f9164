-- 2-step verification: each account's authenticator-app secret (sealed under the system secrets, bound to its
-- account; never in the clear), the last time step a code matched (a code counts once), and its recovery codes,
-- stored only as hashes, each used once. A password_hash of '' is an account with no password ("passkey only").
CREATE TABLE totp_authenticators (
    user_id      TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    secret       BLOB NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    last_step    INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE recovery_codes (
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    code_hash  BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    used_at    INTEGER,
    PRIMARY KEY (user_id, code_hash)
);
-- How each session signed in (password, two_step, passkey): what an organisation's sign-in policy is checked
-- against at the authorization endpoint.
ALTER TABLE sessions ADD COLUMN method TEXT NOT NULL DEFAULT 'password';
-- An organisation's sign-in policy for its members.
ALTER TABLE orgs ADD COLUMN require_two_step INTEGER NOT NULL DEFAULT 0;
ALTER TABLE orgs ADD COLUMN passkeys_only INTEGER NOT NULL DEFAULT 0;
