//! The data API: `GET /video/v3/channels` (`channels.list`), bearer-protected (RFC 6750). A token acts for a user
//! (through their grant) or for a service account (through its key); [`bearer`] checks either.

pub(crate) mod channels;

pub use channels::channels_get;

use super::ports::StorePorts;
use crate::error::ApiError;
use crate::extract;
use crate::state::AppState;
use axum::http::{header, HeaderMap};
use latchkey_core::access_token::{AccessClaims, AccessTokenError, Holder};
use latchkey_core::flow;
use latchkey_core::service_account::ServiceKeyState;
use latchkey_core::time::UnixTime;
use latchkey_store::{Channel, GrantState};

/// Whom a checked access token acts for, with what decides whether it still may.
pub(super) enum Bearer {
    /// A user, through a live grant; with the user's channel, read with the grant (one read where the data API
    /// would make two, one after the other).
    User(GrantState, Option<Channel>),
    /// A service account, through a live key of an enabled account.
    ServiceAccount(ServiceKeyState),
}

impl Bearer {
    /// Whether the project the token was issued in has the data API enabled.
    fn api_enabled(&self) -> bool {
        match self {
            Self::User(g, _) => g.api_enabled,
            Self::ServiceAccount(k) => k.api_enabled,
        }
    }
}

/// Reads the access token (header or `access_token` query parameter, not both), checks it and what it acts
/// through: a user's grant, or a service account's key and the account.
pub(super) async fn bearer(
    state: &AppState,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<(AccessClaims, Bearer), ApiError> {
    let header = extract::single_header(headers, &header::AUTHORIZATION)
        .map_err(|e| ApiError::bad_request("invalidHeader", e.description.into_owned()))?;
    let from_header = match header {
        Some(h) => match h.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => Some(token.trim().to_owned()),
            _ => return Err(ApiError::unauthenticated("The Authorization header must use the Bearer scheme.", false)),
        },
        None => None,
    };
    let query_pairs = extract::pairs(query.unwrap_or("").as_bytes());
    let mut from_query = query_pairs.iter().filter(|(k, _)| k == "access_token").map(|(_, v)| v.clone());
    let query_token = from_query.next();
    if from_query.next().is_some() || (from_header.is_some() && query_token.is_some()) {
        return Err(ApiError::bad_request(
            "invalidParameter",
            "Send the access token once: in the Authorization header or the access_token parameter.".into(),
        ));
    }
    let Some(token) = from_header.or(query_token) else {
        return Err(ApiError::unauthenticated("The request is missing a valid access token.", false));
    };
    let now = state.clock.now();
    let claims = verify(state, headers, &token, now).await?;
    let revoked = || ApiError::unauthenticated("The access token was revoked.", true);
    let found = match claims.holder {
        Holder::Grant(id) => {
            let (grant, channel) =
                state.store.grant_with_channel(&id).await?.filter(|(g, _)| g.is_usable(now)).ok_or_else(revoked)?;
            state.last_used.note(&id, now);
            Bearer::User(grant, channel)
        }
        Holder::ServiceKey(id) => {
            let key = state.store.service_key_state(&id.encode()).await?;
            Bearer::ServiceAccount(key.filter(ServiceKeyState::is_usable).ok_or_else(revoked)?)
        }
    };
    Ok((claims, found))
}

/// Checks the MAC and expiry ([`flow::access_claims`], which reloads the key ring for a key id this instance
/// does not know, at most once per second).
async fn verify(state: &AppState, headers: &HeaderMap, token: &str, now: UnixTime) -> Result<AccessClaims, ApiError> {
    let ports = StorePorts::new(state, headers);
    let result = flow::access_claims(&ports, token, now, now).await.map_err(|e| ApiError::from(e.error))?;
    result.map_err(|e| match e {
        AccessTokenError::Expired => ApiError::unauthenticated("The access token expired.", true),
        AccessTokenError::Invalid | AccessTokenError::UnknownKey => {
            ApiError::unauthenticated("The access token is invalid.", true)
        }
    })
}
