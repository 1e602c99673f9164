//! A company's own API protected by latchkey (a resource, RFC 8707): `GET /orders` answers the caller's identity
//! when the request carries `Authorization: Bearer <access token>` for this API with the scope it requires;
//! otherwise `401` with `WWW-Authenticate: Bearer error="invalid_token", resource_metadata="..."` (RFC 6750 §3,
//! RFC 9728 §5.1), or `403` with `error="insufficient_scope", scope="..."` when the token lacks the scope. It
//! also serves its protected resource metadata (RFC 9728 §3), through which a client finds latchkey.
//!
//! Register the API, then run it next to a latchkey server:
//!
//! ```text
//! latchkey admin resource create --project ... --uri https://orders.example.com/api --scope 'orders.read|Read orders'
//! LATCHKEY_RESOURCE_SECRET=... cargo run -p latchkey-client --example protected_api -- \
//!     --issuer https://localhost:8443 --resource https://orders.example.com/api --resource-id res_... \
//!     --scope orders.read --listen 127.0.0.1:9091 --ca-file latchkey-data/tls/cert.pem
//! ```
//!
//! Each option may also be given in the environment (`LATCHKEY_ISSUER`, `LATCHKEY_RESOURCE`,
//! `LATCHKEY_RESOURCE_ID`, `LATCHKEY_RESOURCE_SCOPE`, `PROTECTED_API_LISTEN`, `LATCHKEY_CA_FILE`); the secret only
//! there, in `LATCHKEY_RESOURCE_SECRET`, so that it does not show in the process list. An app gets a token for
//! the API by naming it: `AppConfig::new(issuer, client_id).with_resource("https://orders.example.com/api")`.
//!
//! Tokens are checked by introspection (RFC 7662) here; to verify JWT access tokens locally instead (RFC 9068,
//! for an API registered with the JWT token format), see [`Checker`].

#[path = "common/options.rs"]
mod options;

use axum::extract::{FromRef, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use latchkey_client::resource_server::Introspector;
use latchkey_client::{Error, ReqwestHttp};
use serde_json::json;
use std::sync::Arc;

/// What the example is told on its command line or in its environment.
struct Options {
    issuer: String,
    resource: String,
    resource_id: String,
    secret: String,
    scope: String,
    listen: String,
    ca_file: Option<String>,
}

impl Options {
    /// Reads `--name value` arguments, falling back to the environment and then to the defaults.
    fn read() -> Result<Self, String> {
        let arg = options::arg;
        Ok(Self {
            issuer: arg("issuer", "LATCHKEY_ISSUER")
                .unwrap_or_else(|| "https://localhost:8443".into())
                .trim_end_matches('/')
                .to_owned(),
            resource: arg("resource", "LATCHKEY_RESOURCE")
                .ok_or("give the API's resource URI: --resource https://... (or LATCHKEY_RESOURCE)")?,
            resource_id: arg("resource-id", "LATCHKEY_RESOURCE_ID")
                .ok_or("give the API's id: --resource-id res_... (or LATCHKEY_RESOURCE_ID)")?,
            secret: std::env::var("LATCHKEY_RESOURCE_SECRET")
                .map_err(|_| "give the API's introspection secret in LATCHKEY_RESOURCE_SECRET")?,
            scope: arg("scope", "LATCHKEY_RESOURCE_SCOPE").unwrap_or_else(|| "orders.read".into()),
            listen: arg("listen", "PROTECTED_API_LISTEN").unwrap_or_else(|| "127.0.0.1:9091".into()),
            ca_file: arg("ca-file", "LATCHKEY_CA_FILE"),
        })
    }
}

/// How the API checks tokens. To verify JWT access tokens locally instead of asking latchkey, hold a
/// `latchkey_client::resource_server::AccessTokenVerifier` here:
///
/// ```text
/// let checker = AccessTokenVerifier::new(&issuer, &resource, format!("{issuer}/oauth2/v3/certs"), http);
/// ```
///
/// and in [`Caller::from_request_parts`] call `checker.verify(token)`: `Err(Error::InvalidToken(_))` is the
/// 401, another error the 503, and `claims.has_scope(...)` decides the 403 (the audience is checked already).
type Checker = Introspector;

/// The API: how it checks tokens, and what it tells a client that is refused.
struct Api {
    checker: Checker,
    issuer: String,
    resource: String,
    scope: String,
    /// Where the protected resource metadata is (RFC 9728 §3.1).
    metadata_url: String,
}

/// A caller whose access token is active, meant for this API, and grants the API's scope.
struct Caller {
    sub: Option<String>,
    client_id: Option<String>,
    scopes: Vec<String>,
}

impl<S> FromRequestParts<S> for Caller
where
    Arc<Api>: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let api = Arc::<Api>::from_ref(state);
        let Some(token) = bearer_token(parts) else {
            // RFC 6750 §3.1: a request without credentials gets the challenge without an error code.
            return Err(api.challenge(StatusCode::UNAUTHORIZED, None));
        };
        let answer = match api.checker.introspect(token).await {
            Ok(answer) => answer,
            Err(e) => {
                // `e` never holds the token; neither does anything this example prints.
                eprintln!("the token could not be checked: {e}");
                let status = match e {
                    Error::OAuth { .. } => StatusCode::INTERNAL_SERVER_ERROR,
                    _ => StatusCode::SERVICE_UNAVAILABLE,
                };
                return Err(status.into_response());
            }
        };
        // A DPoP-bound token (`cnf.jkt`) comes with `Authorization: DPoP` and a proof (RFC 9449 §7); this
        // example takes Bearer tokens only, so it refuses one presented as a Bearer token.
        if !answer.active || !answer.audience_includes(&api.resource) || answer.cnf_jkt.is_some() {
            return Err(api.challenge(StatusCode::UNAUTHORIZED, Some("invalid_token")));
        }
        if !answer.has_scope(&api.scope) {
            return Err(api.challenge(StatusCode::FORBIDDEN, Some("insufficient_scope")));
        }
        Ok(Self { sub: answer.sub, client_id: answer.client_id, scopes: answer.scope })
    }
}

/// The token of `Authorization: Bearer <token>` (the scheme in any case), if the header is one.
fn bearer_token(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("Bearer") && !token.is_empty() && !token.contains(' ')).then_some(token)
}

impl Api {
    /// A refusal with its `WWW-Authenticate` challenge (RFC 6750 §3, RFC 9728 §5.1).
    fn challenge(&self, status: StatusCode, error: Option<&str>) -> Response {
        let mut challenge = String::from("Bearer ");
        if let Some(error) = error {
            challenge.push_str(&format!("error=\"{error}\", "));
        }
        if status == StatusCode::FORBIDDEN {
            challenge.push_str(&format!("scope=\"{}\", ", self.scope));
        }
        challenge.push_str(&format!("resource_metadata=\"{}\"", self.metadata_url));
        let mut response = status.into_response();
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// Where the metadata of the resource `resource` is, and the path this server serves it at: the well-known path
/// inserted between the URI's host and its path (RFC 9728 §3.1).
fn metadata_location(resource: &str) -> Result<(String, String), String> {
    let url = url::Url::parse(resource).map_err(|e| format!("the resource URI {resource}: {e}"))?;
    let path = format!("/.well-known/oauth-protected-resource{}", url.path().trim_end_matches('/'));
    let mut metadata = url.clone();
    metadata.set_path(&path);
    metadata.set_query(None);
    Ok((metadata.into(), path))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = Options::read()?;
    let http = Arc::new(ReqwestHttp::with_ca_file(options.ca_file.as_deref().map(std::path::Path::new))?);
    let checker =
        Introspector::new(format!("{}/introspect", options.issuer), &options.resource_id, options.secret, http);
    let (metadata_url, metadata_path) = metadata_location(&options.resource)?;
    let api = Arc::new(Api {
        checker,
        issuer: options.issuer,
        resource: options.resource,
        scope: options.scope,
        metadata_url,
    });
    println!("protecting {} with the scope {} (tokens from {})", api.resource, api.scope, api.issuer);
    let app = Router::new().route("/orders", get(orders)).route(&metadata_path, get(metadata)).with_state(api);
    let listener = tokio::net::TcpListener::bind(&options.listen).await?;
    println!("GET http://{}/orders", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

/// `GET /orders`: who is calling, for a caller allowed to.
async fn orders(caller: Caller) -> Json<serde_json::Value> {
    Json(json!({ "sub": caller.sub, "client_id": caller.client_id, "scope": caller.scopes.join(" "), "orders": [] }))
}

/// The protected resource metadata (RFC 9728 §2): this API, and the authorization server that issues its tokens.
async fn metadata(State(api): State<Arc<Api>>) -> Json<serde_json::Value> {
    Json(json!({
        "resource": api.resource,
        "authorization_servers": [api.issuer],
        "scopes_supported": [api.scope],
        "bearer_methods_supported": ["header"],
    }))
}
