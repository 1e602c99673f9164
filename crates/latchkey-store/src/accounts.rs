//! What a person's account holds beyond its record: the apps with access to it, the changes a person or an
//! operator makes to it (each with its domain event, in one unit of work), and the day each grant was last used.
//!
//! Every account change goes through [`Accounts::change_account`], which applies it and writes its event
//! (`latchkey_core::account::AccountChange::event`) to the `account_events` outbox, with the security events it
//! causes for the apps' streams (`crate::streams::fanout`), in the same transaction: so that none is lost and
//! none reports a change that rolled back.

use crate::db::{BoxFuture, Db, Durability, Engine, Outcome, Tx};
use crate::rows::{self, StoreRow};
use crate::sql::{args, Sql};
use crate::streams::fanout;
use crate::StoreResult;
use async_trait::async_trait;
use latchkey_core::access_token::GrantId;
use latchkey_core::account::{AccountChange, AccountEvent, EventKind};
use latchkey_core::scope::ScopeSet;
use latchkey_core::time::UnixTime;

/// A live grant of a user, with the names the account page shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveGrant {
    /// The client.
    pub client_id: String,
    /// The client's name.
    pub client_name: String,
    /// The client's project.
    pub project_id: String,
    /// The project's name.
    pub project_name: String,
    /// Whether the client is a TV or Limited Input device, whose grants come only from the device flow.
    pub device: bool,
    /// How the client registered itself, when it did.
    pub registration: Option<latchkey_core::client::RegistrationKind>,
    /// The granted scopes.
    pub scopes: ScopeSet,
    /// When the grant was made.
    pub created_at: UnixTime,
    /// When a time-limited grant ends.
    pub expires_at: Option<UnixTime>,
    /// The day (its first second, UTC) of the grant's last recorded use, if any.
    pub last_used_at: Option<UnixTime>,
}

/// Accounts: their apps, their changes and events, and last-use days.
#[async_trait]
pub trait Accounts: Send + Sync {
    /// Applies a change to a user's account and records its event, in one transaction. `None` when there is no
    /// such user; `Some(n)` with the rows the change touched (for [`AccountChange::AppAccessRemoved`], the grants
    /// revoked). A change that touches nothing (a user already disabled, no grant of that client) records no event.
    async fn change_account(&self, user_id: &str, change: &AccountChange, now: UnixTime) -> StoreResult<Option<u64>>;
    /// A user's account events, oldest first.
    async fn account_events(&self, user_id: &str) -> StoreResult<Vec<AccountEvent>>;
    /// The user's grants that still hold at `now` (not revoked, not ended) of clients not deleted, by client.
    async fn live_grants(&self, user_id: &str, now: UnixTime) -> StoreResult<Vec<LiveGrant>>;
    /// Records the days on which grants were used (a batch, off the request path); a grant's day only moves
    /// forward.
    async fn record_last_used(&self, uses: &[(GrantId, UnixTime)]) -> StoreResult<()>;
}

/// A BIGINT on both engines (`Tx::scalar` reads an i64; PostgreSQL types a bare 1 as INT4).
pub(crate) static USER_EXISTS: Sql = Sql::new("SELECT CAST(1 AS BIGINT) FROM users WHERE id = $1");
static DISABLE: Sql = Sql::new("UPDATE users SET disabled_at = $1 WHERE id = $2 AND disabled_at IS NULL");
static ENABLE: Sql = Sql::new("UPDATE users SET disabled_at = NULL WHERE id = $1 AND disabled_at IS NOT NULL");
static DELETE: Sql = Sql::new("DELETE FROM users WHERE id = $1");
static SET_PASSWORD: Sql = Sql::new("UPDATE users SET password_hash = $1 WHERE id = $2");
/// An account without a password has `''` for its hash; only one with a passkey may lose it.
static REMOVE_PASSWORD: Sql = Sql::new(
    "UPDATE users SET password_hash = '' WHERE id = $1 AND password_hash <> '' \
     AND EXISTS (SELECT 1 FROM passkeys WHERE user_id = $1)",
);
/// Ends a user's sessions but the one whose hash is `$2` (an empty hash keeps none).
static END_SESSIONS: Sql = Sql::new("DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2");
static REVOKE_APP: Sql =
    Sql::new("UPDATE grants SET revoked_at = $1 WHERE user_id = $2 AND client_id = $3 AND revoked_at IS NULL");
static AUDIT_APP: Sql = Sql::new(
    "INSERT INTO audit_log (at, action, user_id, client_id, grant_id) SELECT $1, 'app_access_removed', user_id, \
     client_id, id FROM grants WHERE user_id = $2 AND client_id = $3 AND revoked_at = $1",
);
static EVENTS: Sql =
    Sql::new("SELECT id, at, kind, user_id, client_id FROM account_events WHERE user_id = $1 ORDER BY id");
static LIVE_GRANTS: Sql = Sql::new(
    "SELECT g.client_id, c.name AS client_name, c.project_id, p.name AS project_name, c.client_type, g.scopes, \
     c.registration, g.created_at, \
     g.expires_at, g.last_used_at FROM grants g JOIN clients c ON c.client_id = g.client_id \
     JOIN projects p ON p.id = c.project_id WHERE g.user_id = $1 AND g.revoked_at IS NULL \
     AND (g.expires_at IS NULL OR g.expires_at > $2) AND c.deleted_at IS NULL ORDER BY g.client_id, g.created_at",
);
static RECORD_LAST_USED: Sql =
    Sql::new("UPDATE grants SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)");

/// A change, its user and its time: a unit's data.
type Changing = (String, AccountChange, UnixTime);

/// Applies the change, then records its event when it touched anything: one unit of work.
fn apply<'t>(
    tx: &'t mut dyn Tx,
    (user, change, now): &'t Changing,
) -> BoxFuture<'t, StoreResult<Outcome<Option<u64>>>> {
    Box::pin(async move {
        let now = *now;
        if tx.scalar(&USER_EXISTS, args![user]).await?.is_none() {
            return Ok(Outcome::Discard(None));
        }
        let keep_none = Vec::new();
        let touched = match change {
            AccountChange::Disable => {
                let n = tx.exec(&DISABLE, args![now, user]).await?;
                tx.exec(&END_SESSIONS, args![user, &keep_none]).await?;
                n
            }
            AccountChange::Enable => tx.exec(&ENABLE, args![user]).await?,
            AccountChange::Delete => {
                // The event first, while the account and its grants still say which apps hear of it.
                fanout::record(tx, now, change.event(), user, None).await?;
                return Ok(Outcome::Keep(Some(tx.exec(&DELETE, args![user]).await?)));
            }
            AccountChange::PasswordChanged { password_hash, keep } => {
                let n = tx.exec(&SET_PASSWORD, args![password_hash, user]).await?;
                tx.exec(&END_SESSIONS, args![user, keep.as_ref().unwrap_or(&keep_none)]).await?;
                n
            }
            AccountChange::OtherSessionsEnded { keep } => {
                tx.exec(&END_SESSIONS, args![user, keep.as_ref().unwrap_or(&keep_none)]).await?
            }
            AccountChange::CredentialChangeRequired => tx.exec(&END_SESSIONS, args![user, &keep_none]).await?.max(1),
            AccountChange::PasskeyAdded { passkey: k } => {
                let add = args![&k.credential_id, user, &k.name, &k.credential, k.created_at];
                tx.exec(&crate::passkeys::ADD, add).await?
            }
            AccountChange::PasskeyRemoved { credential_id, keep } => {
                let n = tx.exec(&crate::passkeys::REMOVE, args![credential_id, user]).await?;
                if n > 0 {
                    tx.exec(&END_SESSIONS, args![user, keep.as_ref().unwrap_or(&keep_none)]).await?;
                }
                n
            }
            AccountChange::TwoStepOn { secret, recovery_codes } => {
                crate::two_step::turn_on(tx, user, secret, recovery_codes, now).await?
            }
            AccountChange::TwoStepOff { keep } => {
                let n = crate::two_step::turn_off(tx, user).await?;
                if n > 0 {
                    tx.exec(&END_SESSIONS, args![user, keep.as_ref().unwrap_or(&keep_none)]).await?;
                }
                n
            }
            AccountChange::RecoveryCodesRenewed { recovery_codes } => {
                crate::two_step::renew_codes(tx, user, recovery_codes, now).await?
            }
            AccountChange::RecoveryCodeUsed { code_hash } => {
                crate::two_step::use_code(tx, user, code_hash, now).await?
            }
            AccountChange::PasswordRemoved { keep } => {
                let n = tx.exec(&REMOVE_PASSWORD, args![user]).await?;
                if n > 0 {
                    crate::two_step::turn_off(tx, user).await?;
                    tx.exec(&END_SESSIONS, args![user, keep.as_ref().unwrap_or(&keep_none)]).await?;
                }
                n
            }
            AccountChange::TwoStepReset => {
                let n = crate::two_step::turn_off(tx, user).await?
                    + tx.exec(&crate::passkeys::REMOVE_ALL, args![user]).await?;
                tx.exec(&END_SESSIONS, args![user, &keep_none]).await?;
                n
            }
            AccountChange::AppAccessRemoved { client_id } => {
                let n = tx.exec(&REVOKE_APP, args![now, user, client_id]).await?;
                if n > 0 {
                    tx.exec(&AUDIT_APP, args![now, user, client_id]).await?;
                }
                n
            }
        };
        if touched == 0 {
            return Ok(Outcome::Discard(Some(0)));
        }
        fanout::record(tx, now, change.event(), user, change.client_id()).await?;
        Ok(Outcome::Keep(Some(touched)))
    })
}

/// Records a batch of last-use days: one unit of work.
fn record<'t>(tx: &'t mut dyn Tx, uses: &'t Vec<(GrantId, UnixTime)>) -> BoxFuture<'t, StoreResult<Outcome<()>>> {
    Box::pin(async move {
        for (id, day) in uses {
            tx.exec(&RECORD_LAST_USED, args![*day, id]).await?;
        }
        Ok(Outcome::Keep(()))
    })
}

fn event_from_row(r: &dyn StoreRow) -> StoreResult<AccountEvent> {
    let kind = r.text("kind")?;
    Ok(AccountEvent {
        id: r.int("id")?,
        at: UnixTime(r.int("at")?),
        kind: EventKind::parse(&kind).ok_or_else(|| crate::StoreError::Other(format!("event kind {kind}")))?,
        user_id: r.text("user_id")?,
        client_id: r.opt_text("client_id")?,
    })
}

fn live_grant_from_row(r: &dyn StoreRow) -> StoreResult<LiveGrant> {
    Ok(LiveGrant {
        client_id: r.text("client_id")?,
        client_name: r.text("client_name")?,
        project_id: r.text("project_id")?,
        project_name: r.text("project_name")?,
        device: r.text("client_type")? == latchkey_core::client::ClientType::Tv.as_str(),
        registration: r.opt_text("registration")?.as_deref().and_then(latchkey_core::client::RegistrationKind::parse),
        scopes: rows::scopes(r)?,
        created_at: UnixTime(r.int("created_at")?),
        expires_at: r.opt_int("expires_at")?.map(UnixTime),
        last_used_at: r.opt_int("last_used_at")?.map(UnixTime),
    })
}

#[async_trait]
impl<E: Engine> Accounts for Db<E> {
    async fn change_account(&self, user_id: &str, change: &AccountChange, now: UnixTime) -> StoreResult<Option<u64>> {
        self.engine.unit(Durability::Durable, apply, (user_id.to_owned(), change.clone(), now)).await
    }

    async fn account_events(&self, user_id: &str) -> StoreResult<Vec<AccountEvent>> {
        self.engine.all(&EVENTS, args![user_id], event_from_row).await
    }

    async fn live_grants(&self, user_id: &str, now: UnixTime) -> StoreResult<Vec<LiveGrant>> {
        self.engine.all(&LIVE_GRANTS, args![user_id, now], live_grant_from_row).await
    }

    async fn record_last_used(&self, uses: &[(GrantId, UnixTime)]) -> StoreResult<()> {
        if uses.is_empty() {
            return Ok(());
        }
        self.engine.unit(Durability::Ephemeral, record, uses.to_vec()).await
    }
}
