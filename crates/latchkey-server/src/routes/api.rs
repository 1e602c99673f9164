//! The data API: `GET /video/v3/channels` (`channels.list`), bearer-protected (RFC 6750).

use super::ports::StorePorts;
use crate::error::{no_store_json, ApiError};
use crate::extract;
use crate::state::AppState;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use latchkey_core::access_token::{AccessClaims, AccessTokenError};
use latchkey_core::flow;
use latchkey_core::scope::CHANNELS_LIST;
use latchkey_core::time::UnixTime;
use latchkey_store::{Channel, GrantState};
use serde_json::{json, Map, Value};

/// The parts `channels.list` can return.
const PARTS: [&str; 5] = ["id", "snippet", "contentDetails", "statistics", "status"];

/// Reads the access token (header or `access_token` query parameter, not both), checks it and its grant.
pub(super) async fn bearer_grant(
    state: &AppState,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<(AccessClaims, GrantState), ApiError> {
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
    let found = state
        .store
        .grant(&claims.grant_id)
        .await?
        .filter(|g| g.is_usable(now))
        .ok_or_else(|| ApiError::unauthenticated("The access token was revoked.", true))?;
    state.last_used.note(&claims.grant_id, now);
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

/// `channels.list` with `mine=true`: the authenticated user's channel.
pub async fn channels_get(State(state): State<AppState>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    match channels(&state, &headers, query.as_deref()).await {
        Ok(body) => no_store_json(&body),
        Err(e) => e.into_response(),
    }
}

async fn channels(state: &AppState, headers: &HeaderMap, query: Option<&str>) -> Result<Value, ApiError> {
    let (claims, found) = bearer_grant(state, headers, query).await?;
    if !claims.scopes.intersects(CHANNELS_LIST) {
        return Err(ApiError::insufficient_scope(&state.scopes.format(CHANNELS_LIST)));
    }
    if !found.api_enabled {
        return Err(ApiError::forbidden(
            "accessNotConfigured",
            "The Video Data API is not enabled for the project of this OAuth client. Enable it in the console.".into(),
        ));
    }
    let pairs = extract::pairs(query.unwrap_or("").as_bytes());
    let get = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let parts = parse_parts(get("part"))?;
    match get("mine") {
        Some("true") => {}
        Some("false") | None => {
            return Err(ApiError::bad_request(
                "missingRequiredParameter",
                "No filter selected. Expected: mine=true.".into(),
            ))
        }
        Some(_) => return Err(ApiError::bad_request("invalidParameter", "mine must be true or false.".into())),
    }
    let channel = state.store.channel_of(&found.grant.user_id).await?;
    let items: Vec<Value> = channel.iter().map(|c| channel_resource(c, &parts)).collect();
    Ok(json!({
        "kind": "video#channelListResponse",
        "pageInfo": { "totalResults": items.len(), "resultsPerPage": 5 },
        "items": items,
    }))
}

fn parse_parts(part: Option<&str>) -> Result<Vec<&'static str>, ApiError> {
    let Some(part) = part.filter(|p| !p.trim().is_empty()) else {
        return Err(ApiError::bad_request("required", "Required parameter: part".into()));
    };
    let mut out = Vec::new();
    for p in part.split(',').map(str::trim) {
        match PARTS.iter().find(|k| **k == p) {
            Some(k) if !out.contains(k) => out.push(*k),
            Some(_) => {}
            None => {
                let shown: String = p.chars().take(64).collect();
                return Err(ApiError::bad_request("unknownPart", format!("'{shown}' is not a valid part.")));
            }
        }
    }
    Ok(out)
}

/// The channel resource, with the requested parts (documented in `docs/api.md`).
fn channel_resource(c: &Channel, parts: &[&str]) -> Value {
    let mut item = Map::new();
    item.insert("kind".into(), "video#channel".into());
    item.insert("id".into(), c.id.clone().into());
    for part in parts {
        let value = match *part {
            "snippet" => json!({
                "title": c.title,
                "description": c.description,
                "publishedAt": rfc3339(c.created_at),
            }),
            "contentDetails" => {
                json!({ "relatedPlaylists": { "uploads": format!("UU{}", c.id.trim_start_matches("UC")) } })
            }
            "statistics" => {
                json!({ "viewCount": "0", "subscriberCount": "0", "hiddenSubscriberCount": false, "videoCount": "0" })
            }
            "status" => json!({ "privacyStatus": "public", "isLinked": true }),
            _ => continue,
        };
        item.insert((*part).into(), value);
    }
    Value::Object(item)
}

fn rfc3339(t: UnixTime) -> String {
    time::OffsetDateTime::from_unix_timestamp(t.0)
        .ok()
        .and_then(|d| d.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}
