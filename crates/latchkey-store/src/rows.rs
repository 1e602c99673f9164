//! Row mappers shared by both engines: the schemas use the same column names, and each backend's row type
//! ([`SqliteRow`] around rusqlite's for SQLite, tokio-postgres's for PostgreSQL) reads the few column types through
//! [`StoreRow`]. Only the grant id is stored differently (text in SQLite, raw bytes in PostgreSQL).

use crate::records::*;
use crate::{StoreError, StoreResult};
use latchkey_core::access_token::GrantId;
use latchkey_core::app_check::{AppCheck, AppCheckState, Category};
use latchkey_core::client::{Client, ClientDetails, ClientSecret, ClientType, Registration, RegistrationKind};
use latchkey_core::org::{AppAccess, Audience};
use latchkey_core::pkce::ChallengeMethod;
use latchkey_core::scope::ScopeSet;
use latchkey_core::time::UnixTime;
use latchkey_core::token::{AuthCode, Grant};

/// A row of one backend, read by column name.
pub(crate) trait StoreRow {
    /// A text column.
    fn text(&self, col: &str) -> StoreResult<String>;
    /// A nullable text column.
    fn opt_text(&self, col: &str) -> StoreResult<Option<String>>;
    /// An integer column.
    fn int(&self, col: &str) -> StoreResult<i64>;
    /// A nullable integer column.
    fn opt_int(&self, col: &str) -> StoreResult<Option<i64>>;
    /// A boolean column.
    fn flag(&self, col: &str) -> StoreResult<bool>;
    /// A binary column.
    fn bytes(&self, col: &str) -> StoreResult<Vec<u8>>;
    /// A nullable binary column.
    fn opt_bytes(&self, col: &str) -> StoreResult<Option<Vec<u8>>>;
    /// The grant-id column, in the backend's encoding.
    fn grant_id(&self, col: &str) -> StoreResult<GrantId>;
}

/// A column that cannot be read as its type: the schema and the code disagree.
fn decode_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Other(format!("reading a column: {e}"))
}

/// PostgreSQL rows (tokio-postgres); the grant id is stored as raw bytes.
impl StoreRow for tokio_postgres::Row {
    fn text(&self, col: &str) -> StoreResult<String> {
        self.try_get(col).map_err(decode_err)
    }
    fn opt_text(&self, col: &str) -> StoreResult<Option<String>> {
        self.try_get(col).map_err(decode_err)
    }
    fn int(&self, col: &str) -> StoreResult<i64> {
        self.try_get(col).map_err(decode_err)
    }
    fn opt_int(&self, col: &str) -> StoreResult<Option<i64>> {
        self.try_get(col).map_err(decode_err)
    }
    fn flag(&self, col: &str) -> StoreResult<bool> {
        self.try_get(col).map_err(decode_err)
    }
    fn bytes(&self, col: &str) -> StoreResult<Vec<u8>> {
        self.try_get(col).map_err(decode_err)
    }
    fn opt_bytes(&self, col: &str) -> StoreResult<Option<Vec<u8>>> {
        self.try_get(col).map_err(decode_err)
    }
    fn grant_id(&self, col: &str) -> StoreResult<GrantId> {
        let bytes: &[u8] = self.try_get(col).map_err(decode_err)?;
        bytes.try_into().map(GrantId).map_err(|_| StoreError::Other("malformed grant id".into()))
    }
}

/// A SQLite row (rusqlite), read by column name.
///
/// rusqlite finds a column by name by comparing it with every column's name in turn, and the mappers read every
/// column: a grant read that way compared names ~80 times (in a refresh's profile, 6.7% of the samples against
/// 1.8% with this type). The mappers read the columns in the order the statements select them, so the row first
/// tries the column after the last one read; only a read out of that order searches all names. Names are still
/// what is matched: a statement and a mapper that disagree on the order stay correct, only slower.
pub(crate) struct SqliteRow<'a, 'stmt> {
    row: &'a rusqlite::Row<'stmt>,
    next: std::cell::Cell<usize>,
}

impl<'a, 'stmt> SqliteRow<'a, 'stmt> {
    /// Wraps a row; reading starts at its first column.
    pub(crate) fn new(row: &'a rusqlite::Row<'stmt>) -> Self {
        Self { row, next: std::cell::Cell::new(0) }
    }

    /// Reads the column `col` as `T`.
    fn read<T: rusqlite::types::FromSql>(&self, col: &str) -> StoreResult<T> {
        let stmt: &rusqlite::Statement<'_> = self.row.as_ref();
        let guess = self.next.get();
        let index = if stmt.column_name(guess).is_ok_and(|name| name.eq_ignore_ascii_case(col)) {
            guess
        } else {
            stmt.column_index(col).map_err(decode_err)?
        };
        self.next.set(index + 1);
        self.row.get(index).map_err(decode_err)
    }
}

/// The row itself, for reads by index.
impl<'stmt> std::ops::Deref for SqliteRow<'_, 'stmt> {
    type Target = rusqlite::Row<'stmt>;
    fn deref(&self) -> &Self::Target {
        self.row
    }
}

impl StoreRow for SqliteRow<'_, '_> {
    fn text(&self, col: &str) -> StoreResult<String> {
        self.read(col)
    }
    fn opt_text(&self, col: &str) -> StoreResult<Option<String>> {
        self.read(col)
    }
    fn int(&self, col: &str) -> StoreResult<i64> {
        self.read(col)
    }
    fn opt_int(&self, col: &str) -> StoreResult<Option<i64>> {
        self.read(col)
    }
    fn flag(&self, col: &str) -> StoreResult<bool> {
        self.read(col)
    }
    fn bytes(&self, col: &str) -> StoreResult<Vec<u8>> {
        self.read(col)
    }
    fn opt_bytes(&self, col: &str) -> StoreResult<Option<Vec<u8>>> {
        self.read(col)
    }
    fn grant_id(&self, col: &str) -> StoreResult<GrantId> {
        GrantId::decode(&self.text(col)?).ok_or_else(|| StoreError::Other("malformed grant id".into()))
    }
}

pub(crate) fn time(r: &dyn StoreRow, col: &str) -> StoreResult<UnixTime> {
    r.int(col).map(UnixTime)
}

pub(crate) fn opt_time(r: &dyn StoreRow, col: &str) -> StoreResult<Option<UnixTime>> {
    Ok(r.opt_int(col)?.map(UnixTime))
}

pub(crate) fn scopes(r: &dyn StoreRow) -> StoreResult<ScopeSet> {
    scope_bits(r, "scopes")
}

pub(crate) fn project_from_row(r: &dyn StoreRow) -> StoreResult<Project> {
    Ok(Project {
        id: r.text("id")?,
        name: r.text("name")?,
        api_enabled: r.flag("api_enabled")?,
        created_at: time(r, "created_at")?,
        time_based_access: r.flag("time_based_access")?,
        org_id: r.opt_text("org_id")?,
        audience: audience(r)?,
        rotate_refresh_tokens: r.flag("rotate_refresh_tokens")?,
        open_registration: r.flag("open_registration")?,
    })
}

/// The `audience` column.
pub(crate) fn audience(r: &dyn StoreRow) -> StoreResult<Audience> {
    let name = r.text("audience")?;
    Audience::parse(&name).ok_or_else(|| StoreError::Other(format!("audience {name}")))
}

/// A scope-set column (the registry's bits).
pub(crate) fn scope_bits(r: &dyn StoreRow, col: &str) -> StoreResult<ScopeSet> {
    Ok(ScopeSet::from_stored(r.int(col)?))
}

/// An app-access pair of columns: the access's name and the scopes of a `specific` one.
pub(crate) fn app_access(r: &dyn StoreRow, col: &str, scopes: &str) -> StoreResult<Option<AppAccess>> {
    let Some(name) = r.opt_text(col)? else { return Ok(None) };
    let listed = match r.opt_int(scopes)? {
        Some(bits) => ScopeSet::from_stored(bits),
        None => ScopeSet::EMPTY,
    };
    AppAccess::parse(&name, listed).map(Some).ok_or_else(|| StoreError::Other(format!("app access {name}")))
}

pub(crate) fn client_from_row(r: &dyn StoreRow) -> StoreResult<Client> {
    // Read in the table's column order (see `SqliteRow`).
    let (client_id, project_id, name) = (r.text("client_id")?, r.text("project_id")?, r.text("name")?);
    let kind = r.text("client_type")?;
    let uris = r.text("redirect_uris")?;
    Ok(Client {
        client_id,
        project_id,
        name,
        client_type: ClientType::parse(&kind).ok_or_else(|| StoreError::Other(format!("client type {kind}")))?,
        redirect_uris: serde_json::from_str(&uris).map_err(|e| StoreError::Other(e.to_string()))?,
        details: ClientDetails {
            bundle_id: r.opt_text("bundle_id")?,
            store_id: r.opt_text("store_id")?,
            team_id: r.opt_text("team_id")?,
            app_check: r.flag("app_check")?,
            uwp_store_id: r.opt_text("uwp_store_id")?,
            package_sid: r.opt_text("package_sid")?,
            extension_item_id: r.opt_text("extension_item_id")?,
        },
        created_at: time(r, "created_at")?,
        deleted_at: opt_time(r, "deleted_at")?,
        last_used_at: opt_time(r, "last_used_at")?,
        app_check: app_check_from_row(r)?,
        ownership_verified_at: opt_time(r, "ownership_verified_at")?,
        secrets: secrets_from_json(&r.text("secrets")?)?,
        registration: registration_from_row(r)?,
        project_rotates: r.flag("project_rotates")?,
    })
}

/// A self-registered client's registration columns; `None` for a client made in the console.
fn registration_from_row(r: &dyn StoreRow) -> StoreResult<Option<Registration>> {
    let Some(kind) = r.opt_text("registration")? else { return Ok(None) };
    Ok(Some(Registration {
        kind: RegistrationKind::parse(&kind).ok_or_else(|| StoreError::Other(format!("registration {kind}")))?,
        token_hash: r.opt_bytes("registration_token_hash")?,
        client_uri: r.opt_text("client_uri")?,
        logo_uri: r.opt_text("logo_uri")?,
    }))
}

/// A client secret as the `secrets` column holds it (the migration that made the column writes this form too).
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredSecret {
    id: String,
    hash: String,
    hint: Option<String>,
    created_at: i64,
    disabled_at: Option<i64>,
}

/// The `secrets` column of a client: JSON, in one form only, so that a change can require the list it read.
pub(crate) fn secrets_json(secrets: &[ClientSecret]) -> StoreResult<String> {
    let stored: Vec<StoredSecret> = secrets
        .iter()
        .map(|s| StoredSecret {
            id: s.id.clone(),
            hash: hex::encode(&s.hash),
            hint: s.hint.clone(),
            created_at: s.created_at.0,
            disabled_at: s.disabled_at.map(|t| t.0),
        })
        .collect();
    serde_json::to_string(&stored).map_err(|e| StoreError::Other(e.to_string()))
}

pub(crate) fn secrets_from_json(text: &str) -> StoreResult<Vec<ClientSecret>> {
    let stored: Vec<StoredSecret> =
        serde_json::from_str(text).map_err(|e| StoreError::Other(format!("secrets: {e}")))?;
    stored
        .into_iter()
        .map(|s| {
            Ok(ClientSecret {
                hash: hex::decode(&s.hash).map_err(|e| StoreError::Other(format!("secret hash: {e}")))?,
                id: s.id,
                hint: s.hint,
                created_at: UnixTime(s.created_at),
                disabled_at: s.disabled_at.map(UnixTime),
            })
        })
        .collect()
}

fn app_check_state(s: &str) -> StoreResult<AppCheckState> {
    AppCheckState::parse(s).ok_or_else(|| StoreError::Other(format!("App Check state {s}")))
}

fn app_check_from_row(r: &dyn StoreRow) -> StoreResult<AppCheck> {
    let state = app_check_state(&r.text("app_check_state")?)?;
    let pending = match (r.opt_text("app_check_pending")?, opt_time(r, "app_check_pending_at")?) {
        (Some(s), Some(at)) => Some((app_check_state(&s)?, at)),
        _ => None,
    };
    Ok(AppCheck { state, pending })
}

pub(crate) fn app_check_count_from_row(r: &dyn StoreRow) -> StoreResult<AppCheckCount> {
    let category = r.text("category")?;
    Ok(AppCheckCount {
        hour: time(r, "hour")?,
        category: Category::parse(&category).ok_or_else(|| StoreError::Other(format!("category {category}")))?,
        count: u64::try_from(r.int("count")?).unwrap_or(0),
    })
}

pub(crate) fn listing_from_row(r: &dyn StoreRow) -> StoreResult<Listing> {
    let publisher = match (r.opt_text("publisher_email")?, r.opt_text("group_name")?) {
        (Some(email), _) => Publisher::Individual(email),
        (None, Some(name)) => Publisher::Group {
            name,
            members: serde_json::from_str(&r.text("members")?).map_err(|e| StoreError::Other(e.to_string()))?,
        },
        (None, None) => return Err(StoreError::Other("a listing without publisher".into())),
    };
    Ok(Listing { item_id: r.text("item_id")?, publisher, created_at: time(r, "created_at")? })
}

pub(crate) fn user_from_row(r: &dyn StoreRow) -> StoreResult<User> {
    Ok(User {
        id: r.text("id")?,
        email: r.text("email")?,
        name: r.opt_text("name")?,
        password_hash: r.text("password_hash")?,
        created_at: time(r, "created_at")?,
        disabled_at: opt_time(r, "disabled_at")?,
    })
}

pub(crate) fn channel_from_row(r: &dyn StoreRow) -> StoreResult<Channel> {
    Ok(Channel {
        id: r.text("id")?,
        user_id: r.text("user_id")?,
        title: r.text("title")?,
        description: r.text("description")?,
        created_at: time(r, "created_at")?,
    })
}

pub(crate) fn session_from_row(r: &dyn StoreRow) -> StoreResult<Session> {
    Ok(Session {
        token_hash: r.bytes("token_hash")?,
        user_id: r.text("user_id")?,
        created_at: time(r, "created_at")?,
        expires_at: time(r, "expires_at")?,
        method: {
            let m = r.text("method")?;
            latchkey_core::sign_in::Method::parse(&m).ok_or_else(|| StoreError::Other(format!("sign-in method {m}")))?
        },
    })
}

pub(crate) fn code_from_row(r: &dyn StoreRow) -> StoreResult<AuthCode> {
    // Read in the table's column order (see `SqliteRow`).
    let (code_hash, client_id, user_id) = (r.bytes("code_hash")?, r.text("client_id")?, r.text("user_id")?);
    let (redirect_uri, scopes) = (r.text("redirect_uri")?, scopes(r)?);
    let challenge = match (r.opt_text("challenge_method")?, r.opt_text("challenge")?) {
        (Some(m), Some(c)) => {
            Some((ChallengeMethod::parse(Some(&m)).map_err(|e| StoreError::Other(e.to_string()))?, c))
        }
        _ => None,
    };
    Ok(AuthCode {
        code_hash,
        client_id,
        user_id,
        redirect_uri,
        scopes,
        challenge,
        nonce: r.opt_text("nonce")?,
        auth_time: time(r, "auth_time")?,
        expires_at: time(r, "expires_at")?,
        used: opt_time(r, "used_at")?.is_some(),
        grant_lifetime: r.opt_int("grant_lifetime")?,
    })
}

pub(crate) fn grant_state_from_row(r: &dyn StoreRow) -> StoreResult<GrantState> {
    Ok(GrantState {
        grant: Grant {
            id: r.grant_id("id")?,
            client_id: r.text("client_id")?,
            user_id: r.text("user_id")?,
            scopes: scopes(r)?,
            refresh_hash: r.bytes("refresh_hash")?,
            dpop_jkt: r.opt_text("dpop_jkt")?,
            created_at: time(r, "created_at")?,
            expires_at: opt_time(r, "expires_at")?,
            revoked_at: opt_time(r, "revoked_at")?,
            code_hash: r.bytes("code_hash")?,
        },
        user_disabled_at: opt_time(r, "user_disabled_at")?,
        client_deleted_at: opt_time(r, "client_deleted_at")?,
        api_enabled: r.flag("api_enabled")?,
    })
}

/// A code and its user (`user_*` columns, `NULL` when the user is deleted).
pub(crate) fn code_and_user_from_row(r: &dyn StoreRow) -> StoreResult<(AuthCode, Option<User>)> {
    let code = code_from_row(r)?;
    let user = match r.opt_text("user_row_id")? {
        Some(id) => Some(User {
            id,
            email: r.text("user_email")?,
            name: r.opt_text("user_name")?,
            password_hash: r.text("user_password_hash")?,
            created_at: time(r, "user_created_at")?,
            disabled_at: opt_time(r, "user_disabled_at")?,
        }),
        None => None,
    };
    Ok((code, user))
}

/// A grant's state and its user's channel (`channel_*` columns, `NULL` when the user has none).
pub(crate) fn grant_and_channel_from_row(r: &dyn StoreRow) -> StoreResult<(GrantState, Option<Channel>)> {
    let state = grant_state_from_row(r)?;
    let channel = match r.opt_text("channel_id")? {
        Some(id) => Some(Channel {
            id,
            user_id: state.grant.user_id.clone(),
            title: r.text("channel_title")?,
            description: r.text("channel_description")?,
            created_at: time(r, "channel_created_at")?,
        }),
        None => None,
    };
    Ok((state, channel))
}

pub(crate) fn key_from_row(r: &dyn StoreRow) -> StoreResult<StoredKey> {
    Ok(StoredKey {
        id: u32::try_from(r.int("id")?).map_err(|_| StoreError::Other("key id out of range".into()))?,
        secret: r.bytes("secret")?,
        created_at: time(r, "created_at")?,
        retired_at: opt_time(r, "retired_at")?,
    })
}
