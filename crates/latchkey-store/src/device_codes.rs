//! Device codes of the device authorization grant (RFC 8628): made by `POST /device/code`, found by their user
//! code on `/device`, decided by the person, and polled by the device. Every write is one statement, so that on
//! every engine and instance a code is decided once and a poll's pace is counted once; approval stores the
//! authorization code in the same unit.

use crate::db::{rows as rows_of, BoxFuture, Db, Durability, Engine, Outcome, Tx};
use crate::grants::{code_args, INSERT_CODE};
use crate::rows::{self, StoreRow};
use crate::sql::{args, Sql};
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use latchkey_core::device::{DeviceCode, Poll, State};
use latchkey_core::org::Refusal;
use latchkey_core::time::UnixTime;
use latchkey_core::token::AuthCode;

/// Device codes.
#[async_trait]
pub trait DeviceCodes: Send + Sync {
    /// Stores a new device code. A user code already held (by a code not yet purged) is a `Conflict`: the caller
    /// draws another.
    async fn insert_device_code(&self, code: &DeviceCode) -> StoreResult<()>;
    /// The device code whose user code has this hash, whatever its state or expiry.
    async fn device_code_by_user_code(&self, user_code_hash: &[u8]) -> StoreResult<Option<DeviceCode>>;
    /// Declines a pending, unexpired device code: true when this call decided it.
    async fn deny_device_code(&self, user_code_hash: &[u8], now: UnixTime) -> StoreResult<bool>;
    /// Approves a pending, unexpired device code and stores the authorization code the device will redeem (under
    /// the device code's hash), in one unit and under the organisation's locks like any code: `Ok(false)`, with
    /// nothing written, when the code was decided or expired meanwhile; the refusal when the organisation's
    /// policy no longer allows it.
    async fn approve_device_code(
        &self,
        user_code_hash: &[u8],
        code: &AuthCode,
        project_id: &str,
        now: UnixTime,
    ) -> StoreResult<Result<bool, Refusal>>;
    /// Notes a poll by `client_id` at `now` and returns what it found: a poll sooner than the interval after the
    /// previous one, while the code is pending, grows the interval by 5 s (for good) and says so. `None`, with
    /// nothing noted, for an unknown code or another client's.
    async fn poll_device_code(
        &self,
        device_code_hash: &[u8],
        client_id: &str,
        now: UnixTime,
    ) -> StoreResult<Option<Poll>>;
}

static INSERT: Sql = Sql::new(
    "INSERT INTO device_codes (device_code_hash, user_code_hash, client_id, scopes, created_at, expires_at, \
     poll_interval, state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
);
static BY_USER_CODE: Sql = Sql::new(
    "SELECT device_code_hash, user_code_hash, client_id, scopes, created_at, expires_at, poll_interval, state \
     FROM device_codes WHERE user_code_hash = $1",
);
static DECIDE: Sql =
    Sql::new("UPDATE device_codes SET state = $1 WHERE user_code_hash = $2 AND state = 'pending' AND expires_at > $3");
/// Every `SET` expression reads the row as it was; `RETURNING` gives it as it is now.
static POLL: Sql = Sql::new(
    "UPDATE device_codes SET \
     too_soon = CASE WHEN state = 'pending' AND last_poll_at IS NOT NULL AND $2 - last_poll_at < poll_interval \
       THEN TRUE ELSE FALSE END, \
     poll_interval = poll_interval + CASE WHEN state = 'pending' AND last_poll_at IS NOT NULL \
       AND $2 - last_poll_at < poll_interval THEN $3 ELSE 0 END, \
     last_poll_at = $2 \
     WHERE device_code_hash = $1 AND client_id = $4 RETURNING client_id, state, expires_at, too_soon",
);

fn state(r: &dyn StoreRow) -> StoreResult<State> {
    let s = r.text("state")?;
    State::parse(&s).ok_or_else(|| StoreError::Other(format!("device code state {s}")))
}

fn from_row(r: &dyn StoreRow) -> StoreResult<DeviceCode> {
    Ok(DeviceCode {
        device_code_hash: r.bytes("device_code_hash")?,
        user_code_hash: r.bytes("user_code_hash")?,
        client_id: r.text("client_id")?,
        scopes: rows::scopes(r)?,
        created_at: UnixTime(r.int("created_at")?),
        expires_at: UnixTime(r.int("expires_at")?),
        interval: r.int("poll_interval")?,
        state: state(r)?,
    })
}

fn poll_from_row(r: &dyn StoreRow) -> StoreResult<Poll> {
    Ok(Poll {
        client_id: r.text("client_id")?,
        state: state(r)?,
        expires_at: UnixTime(r.int("expires_at")?),
        too_soon: r.flag("too_soon")?,
    })
}

/// Approves: the policy, the decision (on a pending code only), then the code.
fn approve<'t>(
    tx: &'t mut dyn Tx,
    (user_code_hash, code, project, now): &'t (Vec<u8>, AuthCode, String, UnixTime),
) -> BoxFuture<'t, StoreResult<Outcome<Result<bool, Refusal>>>> {
    Box::pin(async move {
        if let Err(refusal) = crate::orgs::code::allowed(tx, code, project).await? {
            return Ok(Outcome::Discard(Err(refusal)));
        }
        if tx.exec(&DECIDE, args![State::Approved.as_str(), user_code_hash, *now]).await? == 0 {
            return Ok(Outcome::Discard(Ok(false)));
        }
        tx.exec(&INSERT_CODE, code_args(code)).await?;
        Ok(Outcome::Keep(Ok(true)))
    })
}

/// Notes a poll: one statement, in a unit of its own (a write with its answer).
fn poll<'t>(
    tx: &'t mut dyn Tx,
    (hash, client_id, now): &'t (Vec<u8>, String, UnixTime),
) -> BoxFuture<'t, StoreResult<Outcome<Option<Poll>>>> {
    Box::pin(async move {
        let step = latchkey_core::device::SLOW_DOWN_STEP;
        let found = rows_of(tx, &POLL, args![hash, *now, step, client_id], poll_from_row).await?.pop();
        Ok(Outcome::Keep(found))
    })
}

#[async_trait]
impl<E: Engine> DeviceCodes for Db<E> {
    async fn insert_device_code(&self, c: &DeviceCode) -> StoreResult<()> {
        let scopes = c.scopes.to_stored();
        let row = args![
            &c.device_code_hash,
            &c.user_code_hash,
            &c.client_id,
            scopes,
            c.created_at,
            c.expires_at,
            c.interval,
            c.state.as_str()
        ];
        self.exec(&INSERT, row).await.map(|_| ())
    }

    async fn device_code_by_user_code(&self, user_code_hash: &[u8]) -> StoreResult<Option<DeviceCode>> {
        self.engine.one(&BY_USER_CODE, args![user_code_hash], from_row).await
    }

    async fn deny_device_code(&self, user_code_hash: &[u8], now: UnixTime) -> StoreResult<bool> {
        self.exec_one(&DECIDE, args![State::Denied.as_str(), user_code_hash, now]).await
    }

    async fn approve_device_code(
        &self,
        user_code_hash: &[u8],
        code: &AuthCode,
        project_id: &str,
        now: UnixTime,
    ) -> StoreResult<Result<bool, Refusal>> {
        let data = (user_code_hash.to_vec(), code.clone(), project_id.to_owned(), now);
        self.engine.unit(Durability::Durable, approve, data).await
    }

    async fn poll_device_code(
        &self,
        device_code_hash: &[u8],
        client_id: &str,
        now: UnixTime,
    ) -> StoreResult<Option<Poll>> {
        // A poll lost to a crash costs nothing but a forgotten pace: no fsync for it.
        self.engine.unit(Durability::Ephemeral, poll, (device_code_hash.to_vec(), client_id.to_owned(), now)).await
    }
}
