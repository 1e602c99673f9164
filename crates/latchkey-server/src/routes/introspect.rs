//! `POST /introspect` (RFC 7662): a client asks what one of its tokens stands for, or a registered API what a
//! token sent to it does. The rules are the core's (`latchkey_core::flow::introspect`); this module writes the
//! answer, as JSON or, when the caller's `Accept` asks for it, as a JWT signed with the id_token key (RFC 9701).

use super::ports::StorePorts;
use super::token::{read_pairs, refused};
use crate::error::{no_store_json, TokenError};
use crate::extract;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use latchkey_admin::clock::OsRandom;
use latchkey_core::flow::introspect::{introspect, Active, Caller, IntrospectCall, TokenKind};
use latchkey_core::token::Form;
use latchkey_core::{ErrorCode, OAuthError};
use serde_json::{json, Map, Value};

/// The media type of a signed introspection answer (RFC 9701 §5).
const SIGNED: &str = "application/token-introspection+jwt";

/// Handles an introspection request: 200 with `active` for any token, 400 or 401 for a bad request or caller.
pub async fn introspect_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let pairs = match read_pairs(&headers, &body) {
        Ok(p) => p,
        Err(e) => return refused(e, &headers, None),
    };
    let form = match Form::new(extract::borrowed(&pairs)) {
        Ok(f) => f,
        Err(e) => return refused(e.into(), &headers, None),
    };
    let authorization = extract::single_header(&headers, &header::AUTHORIZATION);
    let call = IntrospectCall { form: &form, authorization: authorization.as_ref().copied(), now: state.clock.now() };
    let (caller, active) = match introspect(&StorePorts::new(&state, &headers), call).await {
        Ok(found) => found,
        Err(e) => return refused(e, &headers, Some(&form)),
    };
    let answer = answer(&state, active.as_ref());
    if wants_signed(&headers) {
        let audience = match &caller {
            Caller::Client(client) => &client.client_id,
            Caller::Api(api) => &api.uri,
        };
        return match signed(&state, audience, answer) {
            Ok(r) => r,
            Err(e) => refused(e, &headers, Some(&form)),
        };
    }
    let mut response = no_store_json(&answer);
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The RFC 7662 §2.2 answer: `active`, and for an active token what it stands for.
fn answer(state: &AppState, active: Option<&Active>) -> Value {
    let Some(a) = active else { return json!({ "active": false }) };
    let scopes = state.scopes.get();
    let mut v = Map::new();
    v.insert("active".into(), true.into());
    v.insert("scope".into(), scopes.format(a.scopes).into());
    v.insert("client_id".into(), a.client_id.clone().into());
    v.insert("sub".into(), a.user_id.clone().into());
    // The APIs its scopes belong to (RFC 8707): one as a string, several as an array (RFC 7662 §2.2).
    match scopes.audience(a.audience).as_slice() {
        [] => {}
        [one] => {
            v.insert("aud".into(), (*one).into());
        }
        many => {
            v.insert("aud".into(), many.into());
        }
    }
    v.insert("iss".into(), state.urls.issuer.clone().into());
    v.insert("iat".into(), a.issued_at.0.into());
    if let Some(exp) = a.expires_at {
        v.insert("exp".into(), exp.0.into());
    }
    let token_type = match a.kind {
        TokenKind::Access => "Bearer",
        TokenKind::Refresh => "refresh_token",
    };
    v.insert("token_type".into(), token_type.into());
    if let Some(jkt) = &a.jkt {
        v.insert("cnf".into(), json!({ "jkt": jkt }));
    }
    Value::Object(v)
}

/// Whether `Accept` names the signed form (RFC 9701 §4).
fn wants_signed(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|t| t.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case(SIGNED))))
}

/// The answer as a JWT (RFC 9701 §5): `typ` `token-introspection+jwt`, the caller as `aud`, the answer under
/// `token_introspection`, signed with the id_token key (so the JWKS verifies it).
fn signed(state: &AppState, audience: &str, answer: Value) -> Result<Response, TokenError> {
    let claims = json!({
        "iss": state.urls.issuer,
        "aud": audience,
        "iat": state.clock.now().0,
        "token_introspection": answer,
    });
    let keys = state.keys.get();
    let jwt = keys.id_token_signer().sign("token-introspection+jwt", &claims, &OsRandom).map_err(|e| {
        tracing::error!(error = %e, "signing an introspection answer");
        TokenError::from(OAuthError::new(ErrorCode::ServerError, "Could not sign the introspection answer."))
    })?;
    let mut response = jwt.into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(SIGNED));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}
