//! 2-step verification: each account's authenticator app (its TOTP secret, sealed by the caller under the system
//! secrets, and the last time step a code matched) and its recovery codes (hashes, each used once). Turning it on
//! or off, new recovery codes and a recovery code's use are account changes ([`crate::Accounts::change_account`]),
//! so that their security events commit with them; here are the reads, the note of a code's step, and what
//! re-encrypting the secrets under a new system secret needs.

use crate::db::{Db, Engine, Tx};
use crate::rows::StoreRow;
use crate::sql::{args, Sql};
use crate::StoreResult;
use async_trait::async_trait;
use latchkey_core::time::UnixTime;

/// An account's authenticator app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Totp {
    /// The secret, sealed.
    pub secret: Vec<u8>,
    /// When 2-step verification was turned on.
    pub created_at: UnixTime,
    /// When a code last matched.
    pub last_used_at: Option<UnixTime>,
}

/// An account's recovery codes, as the account page and the operator see them (never a code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecoveryCodes {
    /// When the set was made.
    pub created_at: Option<UnixTime>,
    /// How many are left.
    pub unused: u32,
    /// When one was last used.
    pub last_used_at: Option<UnixTime>,
}

/// Authenticator apps and recovery codes.
#[async_trait]
pub trait TwoStep: Send + Sync {
    /// The account's authenticator app: `Some` when 2-step verification is on.
    async fn totp_of(&self, user_id: &str) -> StoreResult<Option<Totp>>;
    /// Notes that a code of time step `step` matched at `now`: true only for a step later than the last one noted,
    /// so that a code counts once, however many requests bring it at once.
    async fn totp_step_used(&self, user_id: &str, step: i64, now: UnixTime) -> StoreResult<bool>;
    /// The account's recovery codes, counted.
    async fn recovery_codes_of(&self, user_id: &str) -> StoreResult<RecoveryCodes>;
    /// Every account's sealed secret, for re-encryption: (user id, secret).
    async fn totp_secrets(&self) -> StoreResult<Vec<(String, Vec<u8>)>>;
    /// Replaces a sealed secret if it is still `old`; false when it changed meanwhile.
    async fn replace_totp_secret(&self, user_id: &str, old: &[u8], new: &[u8]) -> StoreResult<bool>;
}

static TOTP_OF: Sql = Sql::new("SELECT secret, created_at, last_used_at FROM totp_authenticators WHERE user_id = $1");
static STEP_USED: Sql =
    Sql::new("UPDATE totp_authenticators SET last_step = $1, last_used_at = $2 WHERE user_id = $3 AND last_step < $1");
static CODES_OF: Sql = Sql::new(
    "SELECT CAST(COUNT(*) - COUNT(used_at) AS BIGINT) AS unused, \
     MIN(created_at) AS created_at, MAX(used_at) AS last_used_at FROM recovery_codes WHERE user_id = $1",
);
static SECRETS: Sql = Sql::new("SELECT user_id, secret FROM totp_authenticators ORDER BY user_id");
static REPLACE: Sql = Sql::new("UPDATE totp_authenticators SET secret = $1 WHERE user_id = $2 AND secret = $3");

/// Turned on through `change_account`; nothing when it is on already.
static TURN_ON: Sql = Sql::new(
    "INSERT INTO totp_authenticators (user_id, secret, created_at) VALUES ($1, $2, $3) ON CONFLICT (user_id) DO NOTHING",
);
static TURN_OFF: Sql = Sql::new("DELETE FROM totp_authenticators WHERE user_id = $1");
static IS_ON: Sql = Sql::new("SELECT CAST(1 AS BIGINT) FROM totp_authenticators WHERE user_id = $1");
static DROP_CODES: Sql = Sql::new("DELETE FROM recovery_codes WHERE user_id = $1");
static ADD_CODE: Sql = Sql::new("INSERT INTO recovery_codes (user_id, code_hash, created_at) VALUES ($1, $2, $3)");
static USE_CODE: Sql =
    Sql::new("UPDATE recovery_codes SET used_at = $1 WHERE user_id = $2 AND code_hash = $3 AND used_at IS NULL");

/// Turns 2-step verification on with its first recovery codes: the rows touched (0 when it was on already).
pub(crate) async fn turn_on(
    tx: &mut dyn Tx,
    user: &str,
    secret: &[u8],
    codes: &[Vec<u8>],
    now: UnixTime,
) -> StoreResult<u64> {
    if tx.exec(&TURN_ON, args![user, secret, now]).await? == 0 {
        return Ok(0);
    }
    replace_codes(tx, user, codes, now).await.map(|n| n + 1)
}

/// Turns 2-step verification off: the rows removed.
pub(crate) async fn turn_off(tx: &mut dyn Tx, user: &str) -> StoreResult<u64> {
    Ok(tx.exec(&TURN_OFF, args![user]).await? + tx.exec(&DROP_CODES, args![user]).await?)
}

/// Replaces the recovery codes while 2-step verification is on: the codes stored (0 when it is off).
pub(crate) async fn renew_codes(tx: &mut dyn Tx, user: &str, codes: &[Vec<u8>], now: UnixTime) -> StoreResult<u64> {
    if tx.scalar(&IS_ON, args![user]).await?.is_none() {
        return Ok(0);
    }
    replace_codes(tx, user, codes, now).await
}

async fn replace_codes(tx: &mut dyn Tx, user: &str, codes: &[Vec<u8>], now: UnixTime) -> StoreResult<u64> {
    tx.exec(&DROP_CODES, args![user]).await?;
    let mut n = 0;
    for code in codes {
        n += tx.exec(&ADD_CODE, args![user, code, now]).await?;
    }
    Ok(n)
}

/// Uses a recovery code: 1 when it was there and unused, else 0.
pub(crate) async fn use_code(tx: &mut dyn Tx, user: &str, code: &[u8], now: UnixTime) -> StoreResult<u64> {
    tx.exec(&USE_CODE, args![now, user, code]).await
}

fn totp_from_row(r: &dyn StoreRow) -> StoreResult<Totp> {
    Ok(Totp {
        secret: r.bytes("secret")?,
        created_at: UnixTime(r.int("created_at")?),
        last_used_at: r.opt_int("last_used_at")?.map(UnixTime),
    })
}

fn codes_from_row(r: &dyn StoreRow) -> StoreResult<RecoveryCodes> {
    Ok(RecoveryCodes {
        unused: u32::try_from(r.int("unused")?).unwrap_or(0),
        created_at: r.opt_int("created_at")?.map(UnixTime),
        last_used_at: r.opt_int("last_used_at")?.map(UnixTime),
    })
}

#[async_trait]
impl<E: Engine> TwoStep for Db<E> {
    async fn totp_of(&self, user_id: &str) -> StoreResult<Option<Totp>> {
        self.engine.one(&TOTP_OF, args![user_id], totp_from_row).await
    }

    async fn totp_step_used(&self, user_id: &str, step: i64, now: UnixTime) -> StoreResult<bool> {
        self.exec_one(&STEP_USED, args![step, now, user_id]).await
    }

    async fn recovery_codes_of(&self, user_id: &str) -> StoreResult<RecoveryCodes> {
        Ok(self.engine.one(&CODES_OF, args![user_id], codes_from_row).await?.unwrap_or_default())
    }

    async fn totp_secrets(&self) -> StoreResult<Vec<(String, Vec<u8>)>> {
        self.engine.all(&SECRETS, args![], |r| Ok((r.text("user_id")?, r.bytes("secret")?))).await
    }

    async fn replace_totp_secret(&self, user_id: &str, old: &[u8], new: &[u8]) -> StoreResult<bool> {
        self.exec_one(&REPLACE, args![new, user_id, old]).await
    }
}
