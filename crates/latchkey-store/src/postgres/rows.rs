//! Row mappers of the PostgreSQL backend.

use super::map_err;
use crate::records::*;
use crate::{StoreError, StoreResult};
use latchkey_core::access_token::GrantId;
use latchkey_core::client::{Client, ClientDetails, ClientType};
use latchkey_core::pkce::ChallengeMethod;
use latchkey_core::scope::ScopeSet;
use latchkey_core::time::UnixTime;
use latchkey_core::token::{AuthCode, Grant};
use sqlx::postgres::PgRow;
use sqlx::Row;

fn time(r: &PgRow, col: &str) -> StoreResult<UnixTime> {
    r.try_get::<i64, _>(col).map(UnixTime).map_err(map_err)
}

fn opt_time(r: &PgRow, col: &str) -> StoreResult<Option<UnixTime>> {
    Ok(r.try_get::<Option<i64>, _>(col).map_err(map_err)?.map(UnixTime))
}

fn get<'r, T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>>(
    r: &'r PgRow,
    col: &str,
) -> StoreResult<T> {
    r.try_get(col).map_err(map_err)
}

fn scopes(r: &PgRow) -> StoreResult<ScopeSet> {
    let v: i64 = get(r, "scopes")?;
    u32::try_from(v).map(ScopeSet).map_err(|_| StoreError::Other("scopes out of range".into()))
}

pub(super) fn project_from_row(r: &PgRow) -> StoreResult<Project> {
    Ok(Project {
        id: get(r, "id")?,
        name: get(r, "name")?,
        api_enabled: get(r, "api_enabled")?,
        created_at: time(r, "created_at")?,
    })
}

pub(super) fn client_from_row(r: &PgRow) -> StoreResult<Client> {
    let kind: String = get(r, "client_type")?;
    let uris: String = get(r, "redirect_uris")?;
    Ok(Client {
        client_id: get(r, "client_id")?,
        project_id: get(r, "project_id")?,
        name: get(r, "name")?,
        client_type: ClientType::parse(&kind).ok_or_else(|| StoreError::Other(format!("client type {kind}")))?,
        redirect_uris: serde_json::from_str(&uris).map_err(|e| StoreError::Other(e.to_string()))?,
        secret_hash: get(r, "secret_hash")?,
        details: ClientDetails {
            bundle_id: get(r, "bundle_id")?,
            store_id: get(r, "store_id")?,
            team_id: get(r, "team_id")?,
            app_check: get(r, "app_check")?,
            uwp_store_id: get(r, "uwp_store_id")?,
            package_sid: get(r, "package_sid")?,
            extension_item_id: get(r, "extension_item_id")?,
        },
        created_at: time(r, "created_at")?,
        deleted_at: opt_time(r, "deleted_at")?,
    })
}

pub(super) fn user_from_row(r: &PgRow) -> StoreResult<User> {
    Ok(User {
        id: get(r, "id")?,
        email: get(r, "email")?,
        name: get(r, "name")?,
        password_hash: get(r, "password_hash")?,
        created_at: time(r, "created_at")?,
        disabled_at: opt_time(r, "disabled_at")?,
    })
}

pub(super) fn channel_from_row(r: &PgRow) -> StoreResult<Channel> {
    Ok(Channel {
        id: get(r, "id")?,
        user_id: get(r, "user_id")?,
        title: get(r, "title")?,
        description: get(r, "description")?,
        created_at: time(r, "created_at")?,
    })
}

pub(super) fn session_from_row(r: &PgRow) -> StoreResult<Session> {
    Ok(Session {
        token_hash: get(r, "token_hash")?,
        user_id: get(r, "user_id")?,
        created_at: time(r, "created_at")?,
        expires_at: time(r, "expires_at")?,
    })
}

pub(super) fn code_from_row(r: &PgRow) -> StoreResult<AuthCode> {
    let method: Option<String> = get(r, "challenge_method")?;
    let challenge: Option<String> = get(r, "challenge")?;
    let challenge = match (method, challenge) {
        (Some(m), Some(c)) => {
            Some((ChallengeMethod::parse(Some(&m)).map_err(|e| StoreError::Other(e.to_string()))?, c))
        }
        _ => None,
    };
    Ok(AuthCode {
        code_hash: get(r, "code_hash")?,
        client_id: get(r, "client_id")?,
        user_id: get(r, "user_id")?,
        redirect_uri: get(r, "redirect_uri")?,
        scopes: scopes(r)?,
        challenge,
        nonce: get(r, "nonce")?,
        auth_time: time(r, "auth_time")?,
        expires_at: time(r, "expires_at")?,
        used: opt_time(r, "used_at")?.is_some(),
        grant_lifetime: get(r, "grant_lifetime")?,
    })
}

pub(super) fn grant_state_from_row(r: &PgRow) -> StoreResult<GrantState> {
    let id: Vec<u8> = get(r, "id")?;
    Ok(GrantState {
        grant: Grant {
            id: GrantId(id.try_into().map_err(|_| StoreError::Other("malformed grant id".into()))?),
            client_id: get(r, "client_id")?,
            user_id: get(r, "user_id")?,
            scopes: scopes(r)?,
            refresh_hash: get(r, "refresh_hash")?,
            dpop_jkt: get(r, "dpop_jkt")?,
            created_at: time(r, "created_at")?,
            expires_at: opt_time(r, "expires_at")?,
            revoked_at: opt_time(r, "revoked_at")?,
            code_hash: get(r, "code_hash")?,
        },
        user_disabled_at: opt_time(r, "user_disabled_at")?,
        client_deleted_at: opt_time(r, "client_deleted_at")?,
        api_enabled: get(r, "api_enabled")?,
    })
}

pub(super) fn key_from_row(r: &PgRow) -> StoreResult<StoredKey> {
    let id: i64 = get(r, "id")?;
    Ok(StoredKey {
        id: u32::try_from(id).map_err(|_| StoreError::Other("key id out of range".into()))?,
        secret: get(r, "secret")?,
        created_at: time(r, "created_at")?,
        retired_at: opt_time(r, "retired_at")?,
    })
}
