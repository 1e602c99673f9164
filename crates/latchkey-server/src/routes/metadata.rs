//! Discovery: RFC 8414 metadata (also served as OpenID Connect Discovery), the data API's protected resource
//! metadata (RFC 9728) and the id_token JWKS.

use super::{
    AUTHORIZE_PATH, DATA_API_NAME, DEVICE_CODE_PATH, INTROSPECT_PATH, JWKS_PATH, REGISTER_PATH, REVOKE_PATH,
    USERINFO_PATH,
};
use crate::error::no_store_json;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use latchkey_core::device::GRANT_TYPE as DEVICE_CODE;
use latchkey_core::scope::{ScopeSet, DATA_API};
use latchkey_core::service_account::JWT_BEARER;
use latchkey_proto::ServerMetadata;
use serde_json::json;

/// Whether a project collects self-registered apps (a store that cannot say leaves the endpoint out).
async fn registration_open(state: &AppState) -> bool {
    match state.store.open_registration_project().await {
        Ok(project) => project.is_some(),
        Err(e) => {
            tracing::warn!(error = %e, "reading whether registration is open");
            false
        }
    }
}

/// `/.well-known/oauth-authorization-server` and `/.well-known/openid-configuration`.
pub async fn metadata_get(State(state): State<AppState>) -> Response {
    let u = &state.urls;
    let registry = state.scopes.get();
    let strings = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    // The data API's, the identity scopes, and those of the APIs any client may ask for.
    let advertised: Vec<_> = registry.all().iter().filter(|s| s.api.as_ref().is_none_or(|a| a.public)).collect();
    let public = advertised.iter().fold(DATA_API, |set, s| set.union(ScopeSet::bit(s.bit)));
    let body = ServerMetadata {
        issuer: u.issuer.clone(),
        authorization_endpoint: format!("{}{AUTHORIZE_PATH}", u.auth),
        token_endpoint: u.token_endpoint.clone(),
        revocation_endpoint: format!("{}{REVOKE_PATH}", u.token),
        introspection_endpoint: Some(format!("{}{INTROSPECT_PATH}", u.token)),
        introspection_endpoint_auth_methods_supported: strings(&["none", "client_secret_post", "client_secret_basic"]),
        introspection_signing_alg_values_supported: strings(&["ES256"]),
        device_authorization_endpoint: Some(format!("{}{DEVICE_CODE_PATH}", u.token)),
        registration_endpoint: registration_open(&state).await.then(|| format!("{}{REGISTER_PATH}", u.token)),
        client_id_metadata_document_supported: state.config.client_metadata.enabled,
        userinfo_endpoint: format!("{}{USERINFO_PATH}", u.api),
        jwks_uri: format!("{}{JWKS_PATH}", u.issuer),
        response_types_supported: strings(&["code"]),
        response_modes_supported: strings(&["query"]),
        grant_types_supported: strings(&["authorization_code", "refresh_token", JWT_BEARER, DEVICE_CODE]),
        code_challenge_methods_supported: strings(&["S256", "plain"]),
        scopes_supported: advertised.iter().map(|s| s.id.clone()).collect(),
        protected_resources: registry.audience(public).into_iter().map(str::to_owned).collect(),
        token_endpoint_auth_methods_supported: strings(&["none", "client_secret_post", "client_secret_basic"]),
        revocation_endpoint_auth_methods_supported: strings(&["none", "client_secret_post", "client_secret_basic"]),
        subject_types_supported: strings(&["public"]),
        id_token_signing_alg_values_supported: strings(&["ES256"]),
        claims_supported: strings(&[
            "iss",
            "sub",
            "aud",
            "azp",
            "exp",
            "iat",
            "auth_time",
            "nonce",
            "at_hash",
            "email",
            "email_verified",
            "name",
        ]),
        dpop_signing_alg_values_supported: strings(&["ES256"]),
        authorization_response_iss_parameter_supported: true,
    };
    cacheable(no_store_json(&body))
}

/// `/.well-known/oauth-protected-resource/video/v3`: the data API's protected resource metadata (RFC 9728), served
/// from the API's base URL. A client that met the API's 401 follows its `resource_metadata` here, and from here
/// to the authorization server's own metadata.
pub async fn data_api_resource_get(State(state): State<AppState>) -> Response {
    let u = &state.urls;
    let registry = state.scopes.get();
    let scopes: Vec<&str> = registry.iter(DATA_API).map(|s| s.id.as_str()).collect();
    cacheable(no_store_json(&json!({
        "resource": u.data_api_resource(),
        "authorization_servers": [u.issuer],
        "scopes_supported": scopes,
        "bearer_methods_supported": ["header", "query"],
        "resource_name": DATA_API_NAME,
    })))
}

/// The id_token keys (ES256) and the security event keys (RS256), live and recently retired. The set is read
/// again from the store first (at most once a second per instance), so that a key another instance or the admin
/// CLI just made is published at once: a receiver that fetches the JWKS for a SET signed with it must find it.
pub async fn jwks_get(State(state): State<AppState>) -> Response {
    if let Err(e) = state.keys.reload_on_demand(&*state.store, state.clock.now()).await {
        tracing::warn!(error = %e, "reloading keys for the JWKS");
    }
    let keys = state.keys.get();
    let id_token = keys.id_token.iter().map(|k| {
        let jwk = k.public_jwk();
        json!({ "kty": jwk.kty, "crv": jwk.crv, "x": jwk.x, "y": jwk.y, "kid": k.kid(), "use": "sig", "alg": "ES256" })
    });
    let event = keys.event.iter().map(|k| {
        let jwk = k.public_jwk();
        json!({ "kty": jwk.kty, "n": jwk.n, "e": jwk.e, "kid": k.kid(), "use": "sig", "alg": "RS256" })
    });
    let jwks: Vec<_> = id_token.chain(event).collect();
    cacheable(no_store_json(&json!({ "keys": jwks })))
}

fn cacheable(mut r: Response) -> Response {
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
    r
}
