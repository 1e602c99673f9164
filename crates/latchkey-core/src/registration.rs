//! Apps that register themselves (RFC 7591, RFC 7592): the client metadata such an app may send, read and checked
//! by one set of rules. A self-registered app is a native app: a public client (`token_endpoint_auth_method`
//! `none`, which an omitted method means), the code grant with refresh tokens, and redirects to a loopback address
//! or a private-use URI scheme only (RFC 8252 §7.1, §7.3). Anything else is refused with the RFC 7591 §3.2.2 codes.

use crate::{ErrorCode, OAuthError};
use serde::Serialize;
use serde_json::Value;

/// The most redirect URIs a registration may carry.
pub const MAX_REDIRECT_URIS: usize = 10;
/// The longest URI or name accepted, in characters.
const MAX_FIELD: usize = 2000;
/// The name of an app that gives none.
pub const UNNAMED: &str = "Unnamed app";

/// The client metadata of a self-registered app, as stored and as answered (RFC 7591 §2, §3.2.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClientMetadata {
    /// Loopback or private-use redirect URIs, at least one.
    pub redirect_uris: Vec<String>,
    /// Always `none`: a native app holds no secret.
    pub token_endpoint_auth_method: &'static str,
    /// `authorization_code`, and `refresh_token` (both always allowed).
    pub grant_types: Vec<String>,
    /// `code`.
    pub response_types: Vec<String>,
    /// The name shown on the consent page (marked unverified).
    pub client_name: String,
    /// The app's home page, an `https` URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_uri: Option<String>,
    /// The app's logo, an `https` URL (the consent page shows no logo of a self-registered app).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logo_uri: Option<String>,
}

fn invalid(text: impl Into<std::borrow::Cow<'static, str>>) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidClientMetadata, text)
}

fn invalid_redirect(text: impl Into<std::borrow::Cow<'static, str>>) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidRedirectUri, text)
}

/// The client a self-registered app is: a desktop app with no secret, of `project_id`, with its checked metadata
/// and how it registered (with its registration access token's hash, for a dynamic registration).
pub fn client(
    (client_id, project_id): (String, String),
    m: ClientMetadata,
    kind: crate::client::RegistrationKind,
    token_hash: Option<Vec<u8>>,
    now: crate::time::UnixTime,
) -> crate::client::Client {
    crate::client::Client {
        client_id,
        project_id,
        name: m.client_name,
        client_type: crate::client::ClientType::Desktop,
        redirect_uris: m.redirect_uris,
        secrets: vec![],
        details: Default::default(),
        created_at: now,
        deleted_at: None,
        last_used_at: None,
        app_check: Default::default(),
        ownership_verified_at: None,
        registration: Some(crate::client::Registration {
            kind,
            token_hash,
            client_uri: m.client_uri,
            logo_uri: m.logo_uri,
        }),
        project_rotates: false,
    }
}

/// Where a self-registered app comes from, as the account page says it: `registered itself` for a dynamic
/// registration; for a metadata document, the host of its URL (its `client_id`).
pub fn origin(kind: crate::client::RegistrationKind, client_id: &str) -> String {
    match kind {
        crate::client::RegistrationKind::Dynamic => "registered itself".to_owned(),
        crate::client::RegistrationKind::Document => {
            url::Url::parse(client_id).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default()
        }
    }
}

/// Reads and checks a registration's JSON body. Fields this server does not use (`contacts`, `software_id`, ...)
/// are ignored (RFC 7591 §2); a field it uses with a value it does not allow is refused.
pub fn parse(body: &[u8]) -> Result<ClientMetadata, OAuthError> {
    let doc: Value = serde_json::from_slice(body).map_err(|_| invalid("The body is not a JSON object."))?;
    let obj = doc.as_object().ok_or_else(|| invalid("The body is not a JSON object."))?;
    metadata(obj)
}

/// The metadata of a JSON object, checked by the rules of [`parse`].
fn metadata(obj: &serde_json::Map<String, Value>) -> Result<ClientMetadata, OAuthError> {
    let text = |name: &'static str| -> Result<Option<String>, OAuthError> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.chars().count() <= MAX_FIELD => Ok(Some(s.trim().to_owned())),
            Some(_) => Err(invalid(format!("{name} is a string of at most {MAX_FIELD} characters."))),
        }
    };
    let list = |name: &'static str, default: &[&str]| -> Result<Vec<String>, OAuthError> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(default.iter().map(|s| (*s).to_owned()).collect()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| invalid(format!("{name} is a list of strings."))))
                .collect(),
            Some(_) => Err(invalid(format!("{name} is a list of strings."))),
        }
    };
    match text("token_endpoint_auth_method")?.as_deref() {
        None | Some("none") => {}
        Some(other) => {
            return Err(invalid(format!(
                "token_endpoint_auth_method {other:?} is not allowed: an app that registers itself is a public client \
                 (none)."
            )))
        }
    }
    let grant_types = list("grant_types", &["authorization_code", "refresh_token"])?;
    if let Some(g) = grant_types.iter().find(|g| !matches!(g.as_str(), "authorization_code" | "refresh_token")) {
        return Err(invalid(format!("grant_types: {g:?} is not allowed (authorization_code, refresh_token).")));
    }
    let response_types = list("response_types", &["code"])?;
    if let Some(r) = response_types.iter().find(|r| *r != "code") {
        return Err(invalid(format!("response_types: {r:?} is not allowed (code).")));
    }
    if grant_types.iter().any(|g| g == "authorization_code") != response_types.iter().any(|r| r == "code") {
        return Err(invalid("grant_types authorization_code and response_types code go together (RFC 7591 §2.1)."));
    }
    let redirect_uris = list("redirect_uris", &[])?;
    check_redirect_uris(&redirect_uris)?;
    let client_name = text("client_name")?.filter(|n| !n.is_empty()).unwrap_or_else(|| UNNAMED.to_owned());
    if client_name.chars().count() > 100 {
        return Err(invalid("client_name is at most 100 characters."));
    }
    let client_uri = https_url(text("client_uri")?, "client_uri")?;
    let logo_uri = https_url(text("logo_uri")?, "logo_uri")?;
    Ok(ClientMetadata {
        redirect_uris,
        token_endpoint_auth_method: "none",
        grant_types: with_refresh(grant_types),
        response_types,
        client_name,
        client_uri,
        logo_uri,
    })
}

/// The project that holds the clients client ID metadata documents describe (made by the store's migrations): they
/// belong to no developer's project.
pub const DOCUMENTS_PROJECT: &str = "client-metadata-documents";

/// The most bytes a client ID metadata document may have.
pub const DOCUMENT_MAX_BYTES: usize = 5 * 1024;
/// The shortest time a document is kept, in seconds, whatever its caching headers say (5 minutes).
pub const DOCUMENT_MIN_TTL: i64 = 300;
/// The longest time a document is kept, in seconds (24 hours).
pub const DOCUMENT_MAX_TTL: i64 = 86_400;

/// The URL of a client ID metadata document, when `client_id` is one: `https` with a path other than `/`, no user
/// information, no fragment, no `.` or `..` segment (draft-ietf-oauth-client-id-metadata-document §3); with
/// `allow_loopback` (tests), `http://127.0.0.1:<port>/...` too.
pub fn document_url(client_id: &str, allow_loopback: bool) -> Option<url::Url> {
    let scheme_ok = client_id.starts_with("https://") || (allow_loopback && client_id.starts_with("http://127.0.0.1:"));
    if !scheme_ok || client_id.len() > MAX_FIELD {
        return None;
    }
    let url = url::Url::parse(client_id).ok()?;
    let dotted = client_id.split(['/', '?']).skip(3).any(|segment| segment == "." || segment == "..");
    let plain = url.username().is_empty() && url.password().is_none() && url.fragment().is_none();
    (plain && !dotted && url.host_str().is_some() && url.path() != "/" && url.as_str() == client_id).then_some(url)
}

/// Reads the client ID metadata document fetched from `url`: a JSON object that names `url` as its `client_id`,
/// and whose metadata follows the rules of a self-registered app ([`parse`]); otherwise why it cannot be used.
pub fn document(url: &str, body: &[u8]) -> Result<ClientMetadata, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|_| "the document is not JSON".to_owned())?;
    let obj = doc.as_object().ok_or_else(|| "the document is not a JSON object".to_owned())?;
    match obj.get("client_id").and_then(Value::as_str) {
        Some(id) if id == url => {}
        Some(id) => return Err(format!("the document names another client_id ({})", shown(id))),
        None => return Err("the document names no client_id".to_owned()),
    }
    metadata(obj).map_err(|e| e.description.into_owned())
}

/// A value of someone else's, shortened for a message.
fn shown(s: &str) -> String {
    s.chars().take(200).collect()
}

/// How long a fetched document is kept, from its `Cache-Control` header (`max-age`; `no-store` and `no-cache` keep
/// it the shortest time): between [`DOCUMENT_MIN_TTL`] and [`DOCUMENT_MAX_TTL`] seconds.
pub fn document_ttl(cache_control: Option<&str>) -> i64 {
    let directives = cache_control.unwrap_or_default().split(',').map(|d| d.trim().to_ascii_lowercase());
    let mut ttl = DOCUMENT_MIN_TTL;
    for d in directives {
        if d == "no-store" || d == "no-cache" {
            return DOCUMENT_MIN_TTL;
        }
        if let Some(secs) = d.strip_prefix("max-age=").and_then(|v| v.trim_matches('"').parse::<i64>().ok()) {
            ttl = secs;
        }
    }
    ttl.clamp(DOCUMENT_MIN_TTL, DOCUMENT_MAX_TTL)
}

/// Every grant type granted: the code grant always comes with refresh tokens.
fn with_refresh(mut grant_types: Vec<String>) -> Vec<String> {
    for g in ["authorization_code", "refresh_token"] {
        if !grant_types.iter().any(|x| x == g) {
            grant_types.push(g.to_owned());
        }
    }
    grant_types
}

fn https_url(value: Option<String>, name: &str) -> Result<Option<String>, OAuthError> {
    match value.filter(|v| !v.is_empty()) {
        Some(v) if url::Url::parse(&v).is_ok_and(|u| u.scheme() == "https" && u.host_str().is_some()) => Ok(Some(v)),
        Some(_) => Err(invalid(format!("{name} is an https URL."))),
        None => Ok(None),
    }
}

/// The redirect URIs of an app that registers itself (RFC 8252): at least one and at most
/// [`MAX_REDIRECT_URIS`], each absolute without a fragment, to a loopback address over `http` (any port), or with
/// a private-use scheme. No `https` (a native app does not own a web origin it could prove), no other `http`, no
/// scheme that runs or reads something in the browser.
pub fn check_redirect_uris(uris: &[String]) -> Result<(), OAuthError> {
    if uris.is_empty() {
        return Err(invalid_redirect("redirect_uris is required: at least one loopback or private-use URI."));
    }
    if uris.len() > MAX_REDIRECT_URIS {
        return Err(invalid_redirect(format!("At most {MAX_REDIRECT_URIS} redirect URIs.")));
    }
    for uri in uris {
        if let Some(why) = native_redirect_refusal(uri) {
            return Err(invalid_redirect(format!("{why}: {uri}")));
        }
    }
    Ok(())
}

/// Why `uri` is no redirect URI of a native app, if it is not.
fn native_redirect_refusal(uri: &str) -> Option<&'static str> {
    let Ok(parsed) = url::Url::parse(uri) else { return Some("Not an absolute URI") };
    if parsed.fragment().is_some() || uri.chars().count() > MAX_FIELD {
        return Some("A redirect URI has no fragment and at most 2000 characters");
    }
    match parsed.scheme() {
        "http" => match parsed.host() {
            Some(url::Host::Ipv4(ip)) if ip.is_loopback() => None,
            Some(url::Host::Ipv6(ip)) if ip.is_loopback() => None,
            Some(url::Host::Domain("localhost")) => None,
            _ => Some("An http redirect URI of an app that registers itself is a loopback address"),
        },
        "https" => Some("An app that registers itself redirects to a loopback address or its own private-use scheme"),
        "javascript" | "data" | "file" | "blob" | "about" | "vbscript" | "ftp" | "ws" | "wss" | "urn" => {
            Some("Not a private-use URI scheme")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
