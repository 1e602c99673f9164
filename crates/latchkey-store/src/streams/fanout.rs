//! Writing an account event and the SETs it causes, inside the unit of work of the change that caused it.

use crate::db::Tx;
use crate::rows::StoreRow;
use crate::sql::{args, Sql};
use crate::{StoreError, StoreResult};
use latchkey_core::account::EventKind;
use latchkey_core::events::{self, stream, SubjectFormat};
use latchkey_core::refresh_token;
use latchkey_core::scope::Scope;
use latchkey_core::time::UnixTime;

static INSERT_EVENT: Sql = Sql::new(
    "INSERT INTO account_events (at, kind, user_id, client_id) VALUES ($1, $2, $3, $4) RETURNING CAST(id AS BIGINT)",
);
/// The streams that hear about an account: not disabled, of a client holding a grant of the account at `$4`
/// (`docs/decisions.md`, "Security events": "only apps holding a grant from the user hear about that user"; a grant
/// this very change revoked counts, since its revocation is the news), and not leaving the account out. `$2` narrows
/// them to one client when `$3` is false. `email_grants` counts those of the grants that hold the `email` scope (`$5`,
/// its bit): only they let the stream name the account by its address.
static STREAMS_OF_ACCOUNT: Sql = Sql::new(
    "SELECT s.stream_id, s.subject_format, s.events_requested, u.email, \
     (SELECT COUNT(*) FROM grants e WHERE e.user_id = $1 AND e.client_id = s.client_id AND (e.scopes & $5) <> 0 \
     AND (e.revoked_at IS NULL OR e.revoked_at = $4) AND (e.expires_at IS NULL OR e.expires_at > $4)) AS email_grants \
     FROM ssf_streams s JOIN users u ON u.id = $1 \
     WHERE s.status <> 'disabled' AND (s.client_id = $2 OR $3) \
     AND EXISTS (SELECT 1 FROM grants g WHERE g.user_id = $1 AND g.client_id = s.client_id \
     AND (g.revoked_at IS NULL OR g.revoked_at = $4) AND (g.expires_at IS NULL OR g.expires_at > $4)) \
     AND NOT EXISTS (SELECT 1 FROM ssf_excluded x WHERE x.stream_id = s.stream_id AND x.user_id = $1)",
);
/// On PostgreSQL, changes to one account queue their events one after the other, so that the outbox's ids, which
/// order a subject's events, follow the order in which the changes commit (a lock until the transaction ends;
/// SQLite's single writer already runs them one by one).
static SUBJECT_LOCK: Sql = Sql::new("{pg: SELECT pg_advisory_xact_lock(hashtextextended($1, 22))}");
/// The grants of one client and account revoked by the change at `$3`.
static REVOKED_NOW: Sql =
    Sql::new("SELECT id FROM grants WHERE user_id = $1 AND client_id = $2 AND revoked_at = $3 ORDER BY id");
static INSERT_SET: Sql = Sql::new(
    "INSERT INTO set_deliveries (stream_id, txn, subject_format, subject, event_type, payload, created_at, next_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
);

/// A stream that hears about the account.
struct Listener {
    stream_id: String,
    format: SubjectFormat,
    requested: Vec<String>,
    email: String,
    /// Whether the account granted the stream's app the `email` scope.
    email_granted: bool,
}

impl Listener {
    /// The subject's format and value: the e-mail address only where the account granted the app the `email`
    /// scope; `iss_sub` for a stream asking for `email` otherwise (`docs/events.md`).
    fn subject<'a>(&'a self, user: &'a str) -> (SubjectFormat, &'a str) {
        match self.format {
            SubjectFormat::Email if self.email_granted => (SubjectFormat::Email, &self.email),
            SubjectFormat::Email => (SubjectFormat::IssSub, user),
            other => (other, user),
        }
    }
}

fn listener(r: &dyn StoreRow) -> StoreResult<Listener> {
    let format = r.text("subject_format")?;
    Ok(Listener {
        stream_id: r.text("stream_id")?,
        format: SubjectFormat::parse(&format).ok_or_else(|| StoreError::Other(format!("subject format {format}")))?,
        requested: serde_json::from_str(&r.text("events_requested")?)
            .map_err(|e| StoreError::Other(format!("events_requested: {e}")))?,
        email: r.text("email")?,
        email_granted: r.int("email_grants")? > 0,
    })
}

/// Records an account event (`client` for the events about one app) and queues the SETs it causes for every
/// stream that hears about the account, in the caller's unit of work. A [`EventKind::TokensRevoked`] event
/// causes one token-revoked SET per grant the change revoked at `now`. Must run while the account still
/// exists (before a deletion).
pub(crate) async fn record(
    tx: &mut dyn Tx,
    now: UnixTime,
    kind: EventKind,
    user: &str,
    client: Option<&str>,
) -> StoreResult<()> {
    tx.lock(&SUBJECT_LOCK, args![user]).await?;
    let id = tx
        .scalar(&INSERT_EVENT, args![now, kind.as_str(), user, client])
        .await?
        .ok_or_else(|| StoreError::Other("no account event id".into()))?;
    let email_scope = Scope::Email.set().to_stored();
    let args = args![user, client, client.is_none(), now, email_scope];
    let listeners = crate::db::rows(tx, &STREAMS_OF_ACCOUNT, args, listener).await?;
    if listeners.is_empty() {
        return Ok(());
    }
    let prefixes: Vec<Option<String>> = match (kind, client) {
        (EventKind::TokensRevoked, Some(client)) => {
            let ids = crate::db::rows(tx, &REVOKED_NOW, args![user, client, now], |r| r.grant_id("id")).await?;
            ids.iter().map(|g| Some(format!("{}{}", refresh_token::PREFIX, g.encode()))).collect()
        }
        _ => vec![None],
    };
    let txn = id.to_string();
    for l in &listeners {
        let delivered = stream::delivered(&l.requested);
        let (format, subject) = l.subject(user);
        for prefix in &prefixes {
            for e in events::set_events(kind, now, prefix.as_deref()) {
                if delivered.contains(&e.event_type) {
                    let row =
                        args![&l.stream_id, &txn, format.as_str(), subject, e.event_type, e.payload.to_string(), now];
                    tx.exec(&INSERT_SET, row).await?;
                }
            }
        }
    }
    Ok(())
}

/// Queues an event about the stream itself (verification, stream-updated), its subject the stream.
pub(crate) async fn stream_event(
    tx: &mut dyn Tx,
    stream_id: &str,
    event_type: &str,
    payload: &serde_json::Value,
    now: UnixTime,
) -> StoreResult<()> {
    let txn = format!("{stream_id}.{}.{}", event_type.rsplit('/').next().unwrap_or(event_type), now.0);
    let format = SubjectFormat::Opaque.as_str();
    tx.exec(&INSERT_SET, args![stream_id, &txn, format, stream_id, event_type, payload.to_string(), now]).await?;
    Ok(())
}
