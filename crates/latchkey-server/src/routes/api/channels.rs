//! `channels.list`: exactly one filter (`mine`, `managedByMe` or `id`), optionally on behalf of a content owner
//! (`onBehalfOfContentOwner`, for a service account the owner's administrator granted the role), paged by
//! `maxResults` and `pageToken`.

use super::{bearer, Bearer};
use crate::error::{no_store_json, ApiError};
use crate::extract;
use crate::state::AppState;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use latchkey_core::scope::{CHANNELS_LIST, DATA_API, REGISTERED};
use latchkey_core::time::UnixTime;
use latchkey_store::Channel;
use serde_json::{json, Map, Value};

/// The parts `channels.list` can return.
const PARTS: [&str; 5] = ["id", "snippet", "contentDetails", "statistics", "status"];
/// The most ids one `id` filter names, and the largest page.
const MAX_RESULTS: usize = 50;
/// A page's size when `maxResults` is not given.
const DEFAULT_RESULTS: usize = 5;

/// `GET /video/v3/channels`.
pub async fn channels_get(State(state): State<AppState>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    match channels(&state, &headers, query.as_deref()).await {
        Ok(body) => no_store_json(&body),
        Err(e) => e.with_resource_metadata(&state.urls.data_api_metadata()).into_response(),
    }
}

/// Which channels are asked for.
#[derive(Debug)]
pub enum Filter {
    /// `mine=true`: the user's own channel.
    Mine,
    /// `managedByMe=true`: every channel of the content owner.
    ManagedByMe,
    /// `id=A,B`: those of the named channels the caller may see.
    Ids(Vec<String>),
}

async fn channels(state: &AppState, headers: &HeaderMap, query: Option<&str>) -> Result<Value, ApiError> {
    let (claims, found) = bearer(state, headers, query).await?;
    // A token for other APIs (RFC 8707: its audience is theirs) is not one for this API at all; one with identity
    // scopes alone is for no API, and told which scopes would do.
    if claims.scopes.intersects(REGISTERED) && !claims.scopes.intersects(DATA_API) {
        return Err(ApiError::unauthenticated("The access token is for another API (its audience).", true));
    }
    if !claims.scopes.intersects(CHANNELS_LIST) {
        return Err(ApiError::insufficient_scope(&state.scopes.get().format(CHANNELS_LIST)));
    }
    if !found.api_enabled() {
        return Err(ApiError::forbidden(
            "accessNotConfigured",
            "The Video Data API is not enabled for the project of this OAuth client. Enable it in the console.".into(),
        ));
    }
    let pairs = extract::pairs(query.unwrap_or("").as_bytes());
    let ChannelsQuery { parts, filter, size, after, owner } = parse_query(&pairs)?;
    let mut visible =
        match (owner, &filter, &found) {
            (Some(_), Filter::Mine, _) => {
                return Err(ApiError::bad_request(
                    "invalidParameter",
                    "mine lists the signed-in user's channel; on behalf of a content owner use managedByMe=true or id."
                        .into(),
                ))
            }
            (Some(owner), _, _) => owner_channels(state, &found, owner).await?,
            (None, Filter::ManagedByMe, _) => {
                return Err(ApiError::bad_request(
                    "missingRequiredParameter",
                    "managedByMe=true needs onBehalfOfContentOwner, the content owner whose channels to list.".into(),
                ))
            }
            (None, _, Bearer::User(_, channel)) => channel.clone().into_iter().collect(),
            (None, _, Bearer::ServiceAccount(_)) => return Err(ApiError::bad_request(
                "missingRequiredParameter",
                "A service account has no channel of its own: send onBehalfOfContentOwner with managedByMe=true or id."
                    .into(),
            )),
        };
    if let Filter::Ids(ids) = &filter {
        visible.retain(|c| ids.contains(&c.id));
    }
    let total = visible.len();
    let start = after.map_or(0, |a| visible.partition_point(|c| c.id <= a));
    let page = &visible[start.min(total)..(start + size).min(total)];
    let mut body = json!({
        "kind": "video#channelListResponse",
        "pageInfo": { "totalResults": total, "resultsPerPage": size },
        "items": page.iter().map(|c| channel_resource(c, &parts)).collect::<Vec<_>>(),
    });
    if start + size < total {
        if let Some(last) = page.last() {
            body["nextPageToken"] = URL_SAFE_NO_PAD.encode(&last.id).into();
        }
    }
    Ok(body)
}

/// A `channels.list` query, read.
#[derive(Debug)]
pub struct ChannelsQuery<'a> {
    /// The parts to return, each once.
    pub parts: Vec<&'static str>,
    /// The one filter.
    pub filter: Filter,
    /// The page's size.
    pub size: usize,
    /// The channel id the page continues after.
    pub after: Option<String>,
    /// The content owner acted for.
    pub owner: Option<&'a str>,
}

/// The parameters `channels.list` reads, each at most once.
const PARAMETERS: [&str; 8] =
    ["part", "id", "mine", "managedByMe", "maxResults", "pageToken", "onBehalfOfContentOwner", "access_token"];

/// Reads a `channels.list` query's decoded pairs; a parameter it reads sent twice is refused.
pub fn parse_query(pairs: &extract::Pairs) -> Result<ChannelsQuery<'_>, ApiError> {
    let repeated = pairs
        .iter()
        .enumerate()
        .find(|(i, (k, _))| PARAMETERS.contains(&k.as_str()) && pairs[..*i].iter().any(|(earlier, _)| earlier == k));
    if let Some((_, (name, _))) = repeated {
        return Err(ApiError::bad_request("invalidParameter", format!("Parameter sent more than once: {name}.")));
    }
    let get = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let parts = parse_parts(get("part"))?;
    let filter = parse_filter(&get)?;
    let (size, after) = parse_page(get("maxResults"), get("pageToken"))?;
    let owner = get("onBehalfOfContentOwner").filter(|o| !o.is_empty());
    Ok(ChannelsQuery { parts, filter, size, after, owner })
}

/// The channels of `owner`, for a service account allowed to act for it; any other token is refused alike,
/// whether the owner exists or not.
async fn owner_channels(state: &AppState, found: &Bearer, owner: &str) -> Result<Vec<Channel>, ApiError> {
    let allowed = match found {
        Bearer::ServiceAccount(key) => state.store.may_act_for(&key.account_id, owner).await?,
        Bearer::User(..) => false,
    };
    if !allowed {
        let shown: String = owner.chars().take(64).collect();
        return Err(ApiError::forbidden(
            "accountDelegationForbidden",
            format!(
                "The authenticated account may not act on behalf of content owner {shown}: only a service account that \
                 the owner's administrator granted the content-owner role can."
            ),
        ));
    }
    // By id in byte order, which the page token continues after (PostgreSQL's collation may order them otherwise).
    let mut channels = state.store.owner_channels(owner).await?;
    channels.sort_unstable_by(|a, b| a.id.cmp(&b.id));
    Ok(channels)
}

fn parse_filter<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<Filter, ApiError> {
    let flag = |name: &str| match get(name) {
        Some("true") => Ok(true),
        Some("false") | None => Ok(false),
        Some(_) => Err(ApiError::bad_request("invalidParameter", format!("{name} must be true or false."))),
    };
    let ids: Vec<String> =
        get("id").unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    match (flag("mine")?, flag("managedByMe")?, ids.is_empty()) {
        (true, false, true) => Ok(Filter::Mine),
        (false, true, true) => Ok(Filter::ManagedByMe),
        (false, false, false) if ids.len() <= MAX_RESULTS => Ok(Filter::Ids(ids)),
        (false, false, false) => {
            Err(ApiError::bad_request("invalidParameter", format!("id names at most {MAX_RESULTS} channels.")))
        }
        (false, false, true) => Err(ApiError::bad_request(
            "missingRequiredParameter",
            "No filter selected. Expected one of: id, managedByMe, mine.".into(),
        )),
        _ => Err(ApiError::bad_request(
            "invalidParameter",
            "Incompatible parameters: send exactly one of the filters id, managedByMe and mine.".into(),
        )),
    }
}

/// `maxResults` (0 to 50, 5 by default) and the channel id a `pageToken` continues after.
fn parse_page(max: Option<&str>, token: Option<&str>) -> Result<(usize, Option<String>), ApiError> {
    let size = match max {
        None | Some("") => DEFAULT_RESULTS,
        Some(m) => m.parse().ok().filter(|n| *n <= MAX_RESULTS).ok_or_else(|| {
            ApiError::bad_request("invalidParameter", format!("maxResults must be a number from 0 to {MAX_RESULTS}."))
        })?,
    };
    let after = match token.filter(|t| !t.is_empty()) {
        None => None,
        Some(t) => {
            Some(URL_SAFE_NO_PAD.decode(t).ok().and_then(|b| String::from_utf8(b).ok()).ok_or_else(|| {
                ApiError::bad_request("invalidPageToken", "The pageToken is not one we issued.".into())
            })?)
        }
    };
    Ok((size, after))
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
