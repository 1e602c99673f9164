//! Passkeys: the accounts' WebAuthn credentials (public halves and counters), and the state of the ceremonies in
//! progress. A passkey is added and removed through [`crate::Accounts::change_account`]
//! (`AccountChange::PasskeyAdded`, `PasskeyRemoved`), so that its security event commits with it; here are the
//! reads, the note of a use, and the ceremonies.
//!
//! A ceremony's state (its challenge) is kept under the hash of an id that only the browser holds, sealed by the
//! caller under a key derived from that id: the store never holds a usable challenge, a ceremony begun on one
//! instance finishes on any other, and each is taken once, before it expires.

use crate::db::{rows, BoxFuture, Db, Durability, Engine, Outcome, Tx};
use crate::rows::StoreRow;
use crate::sql::{args, Sql};
use crate::StoreResult;
use async_trait::async_trait;
use latchkey_core::passkey::PasskeyRecord;
use latchkey_core::time::UnixTime;

/// A ceremony's state, as it was put.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ceremony {
    /// The account it is for (a registration), or none (a sign-in, whose account the passkey names).
    pub user_id: Option<String>,
    /// The state, sealed by the caller.
    pub sealed: Vec<u8>,
}

/// Passkeys and their ceremonies.
#[async_trait]
pub trait Passkeys: Send + Sync {
    /// The account's passkeys, oldest first.
    async fn passkeys_of(&self, user_id: &str) -> StoreResult<Vec<PasskeyRecord>>;
    /// The passkey with this credential id, whichever account holds it.
    async fn passkey(&self, credential_id: &str) -> StoreResult<Option<PasskeyRecord>>;
    /// Notes that the passkey signed someone in at `now`, with its credential as the WebAuthn library updated it
    /// (its counter). False when it was removed meanwhile.
    async fn passkey_used(&self, credential_id: &str, credential: &str, now: UnixTime) -> StoreResult<bool>;
    /// Keeps a ceremony's sealed state under the hash of its id, until `expires_at`.
    async fn put_ceremony(&self, id_hash: &[u8], ceremony: &Ceremony, expires_at: UnixTime) -> StoreResult<()>;
    /// Takes a ceremony's state: once (a second take finds nothing), and only before it expires.
    async fn take_ceremony(&self, id_hash: &[u8], now: UnixTime) -> StoreResult<Option<Ceremony>>;
}

static OF_USER: Sql = Sql::new(
    "SELECT credential_id, user_id, name, credential, created_at, last_used_at FROM passkeys WHERE user_id = $1 \
     ORDER BY created_at, credential_id",
);
static ONE: Sql = Sql::new(
    "SELECT credential_id, user_id, name, credential, created_at, last_used_at FROM passkeys WHERE credential_id = $1",
);
static USED: Sql = Sql::new("UPDATE passkeys SET credential = $1, last_used_at = $2 WHERE credential_id = $3");
/// Added through `change_account`; a credential id already held changes nothing.
pub(crate) static ADD: Sql = Sql::new(
    "INSERT INTO passkeys (credential_id, user_id, name, credential, created_at) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (credential_id) DO NOTHING",
);
/// Removed through `change_account`: only the account's own, and never the last one of an account without a
/// password (it could not sign in).
pub(crate) static REMOVE: Sql = Sql::new(
    "DELETE FROM passkeys WHERE credential_id = $1 AND user_id = $2 AND (\
     EXISTS (SELECT 1 FROM users WHERE id = $2 AND password_hash <> '') \
     OR (SELECT COUNT(*) FROM passkeys WHERE user_id = $2) > 1)",
);
/// Every passkey of an account (an operator's reset).
pub(crate) static REMOVE_ALL: Sql = Sql::new("DELETE FROM passkeys WHERE user_id = $1");
static PUT_CEREMONY: Sql =
    Sql::new("INSERT INTO webauthn_ceremonies (id_hash, user_id, sealed, expires_at) VALUES ($1, $2, $3, $4)");
static READ_CEREMONY: Sql = Sql::new("SELECT user_id, sealed, expires_at FROM webauthn_ceremonies WHERE id_hash = $1");
static DELETE_CEREMONY: Sql = Sql::new("DELETE FROM webauthn_ceremonies WHERE id_hash = $1");

fn from_row(r: &dyn StoreRow) -> StoreResult<PasskeyRecord> {
    Ok(PasskeyRecord {
        credential_id: r.text("credential_id")?,
        user_id: r.text("user_id")?,
        name: r.text("name")?,
        credential: r.text("credential")?,
        created_at: UnixTime(r.int("created_at")?),
        last_used_at: r.opt_int("last_used_at")?.map(UnixTime),
    })
}

type Read = (Option<String>, Vec<u8>, UnixTime);

fn ceremony_from_row(r: &dyn StoreRow) -> StoreResult<Read> {
    Ok((r.opt_text("user_id")?, r.bytes("sealed")?, UnixTime(r.int("expires_at")?)))
}

/// Reads the ceremony and deletes it; it counts only for the unit whose delete removed it (on PostgreSQL two
/// takes may read it at once, and only one deletes it).
fn take<'t>(
    tx: &'t mut dyn Tx,
    (id_hash, now): &'t (Vec<u8>, UnixTime),
) -> BoxFuture<'t, StoreResult<Outcome<Option<Ceremony>>>> {
    Box::pin(async move {
        let Some((user_id, sealed, expires_at)) =
            rows(tx, &READ_CEREMONY, args![id_hash], ceremony_from_row).await?.pop()
        else {
            return Ok(Outcome::Discard(None));
        };
        if tx.exec(&DELETE_CEREMONY, args![id_hash]).await? != 1 || expires_at <= *now {
            // Expired: gone all the same, and no use.
            return Ok(Outcome::Keep(None));
        }
        Ok(Outcome::Keep(Some(Ceremony { user_id, sealed })))
    })
}

#[async_trait]
impl<E: Engine> Passkeys for Db<E> {
    async fn passkeys_of(&self, user_id: &str) -> StoreResult<Vec<PasskeyRecord>> {
        self.engine.all(&OF_USER, args![user_id], from_row).await
    }

    async fn passkey(&self, credential_id: &str) -> StoreResult<Option<PasskeyRecord>> {
        self.engine.one(&ONE, args![credential_id], from_row).await
    }

    async fn passkey_used(&self, credential_id: &str, credential: &str, now: UnixTime) -> StoreResult<bool> {
        self.exec_one(&USED, args![credential, now, credential_id]).await
    }

    async fn put_ceremony(&self, id_hash: &[u8], ceremony: &Ceremony, expires_at: UnixTime) -> StoreResult<()> {
        let args = args![id_hash, &ceremony.user_id, &ceremony.sealed, expires_at];
        self.exec(&PUT_CEREMONY, args).await.map(|_| ())
    }

    async fn take_ceremony(&self, id_hash: &[u8], now: UnixTime) -> StoreResult<Option<Ceremony>> {
        self.engine.unit(Durability::Durable, take, (id_hash.to_vec(), now)).await
    }
}
