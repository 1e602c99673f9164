//! `GET /o/oauth2/v2/auth` (the request, then the sign-in, account-chooser or consent page) and
//! `POST /o/oauth2/v2/auth` (the user's decision on the consent page).

use super::AUTHORIZE_PATH;
use crate::clock::OsRandom;
use crate::error::{redirect_to_app, store_error, AuthorizeFailure};
use crate::extract::{self, Pairs};
use crate::session::{self, SignedIn};
use crate::state::AppState;
use crate::views::{self, ConsentPage, ConsentScope, SelectAccountPage};
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use latchkey_core::authorize::{self, AuthorizeParams, Context, ValidRequest};
use latchkey_core::client::Client;
use latchkey_core::redirect;
use latchkey_core::scope::ScopeSet;
use latchkey_core::secret::Secret;
use latchkey_core::token::AuthCode;
use latchkey_core::{ErrorCode, OAuthError};

/// The API service named on the consent page.
const API_NAME: &str = "Video Data API";

/// Shows the page the request needs next.
pub async fn authorize_get(State(state): State<AppState>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let pairs = extract::pairs(query.unwrap_or_default().as_bytes());
    let params = AuthorizeParams::from_pairs(extract::borrowed(&pairs));
    let (client, request) = match validate(&state, &params, &headers).await {
        Ok(ok) => ok,
        Err(failure) => return failure.into_response(),
    };
    let signed_in = match session::current(&state, &headers).await {
        Ok(s) => s,
        Err(e) => return AuthorizeFailure::page(store_error(e), &state.urls.issuer).into_response(),
    };
    let continue_to = continue_url(&params, false);
    let hint_differs =
        |s: &SignedIn| request.login_hint.as_ref().is_some_and(|h| !s.user.email.eq_ignore_ascii_case(h));
    match signed_in {
        Some(s) if !request.prompt.login && !hint_differs(&s) => {
            if request.prompt.none {
                return back(&state, &request, ErrorCode::ConsentRequired, "The user must consent to this request.");
            }
            if request.prompt.select_account {
                return views::page(
                    StatusCode::OK,
                    &SelectAccountPage {
                        app_name: &client.name,
                        user_email: &s.user.email,
                        continue_href: &continue_to,
                        switch_href: &continue_url(&params, true),
                    },
                );
            }
            consent_page(&state, &client, &request, &params, &s, None)
        }
        _ if request.prompt.none => back(&state, &request, ErrorCode::LoginRequired, "The user must sign in."),
        _ => super::login::login_page(
            &headers,
            StatusCode::OK,
            Some(&client.name),
            None,
            &continue_to,
            request.login_hint.as_deref().unwrap_or(""),
        ),
    }
}

/// Takes the user's decision on the consent page.
pub async fn authorize_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let form = match extract::form(&headers, &body) {
        Ok(f) => f,
        Err(e) => return AuthorizeFailure::page(e, &state.urls.issuer).into_response(),
    };
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let request_pairs: Pairs = extract::pairs(field("request").unwrap_or("").as_bytes());
    let params = AuthorizeParams::from_pairs(extract::borrowed(&request_pairs));
    let signed_in = match session::current(&state, &headers).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            return super::login::login_page(
                &headers,
                StatusCode::OK,
                None,
                Some("Your session ended. Sign in again to continue."),
                &continue_url(&params, false),
                "",
            )
        }
        Err(e) => return AuthorizeFailure::page(store_error(e), &state.urls.issuer).into_response(),
    };
    if !session::csrf_ok(&state, &signed_in.session, field("csrf").unwrap_or("")) {
        return views::notice(
            StatusCode::FORBIDDEN,
            "This page has expired",
            "The form could not be verified. Go back to the app and start again.",
        );
    }
    let (client, request) = match validate(&state, &params, &headers).await {
        Ok(ok) => ok,
        Err(failure) => return failure.into_response(),
    };
    match field("decision") {
        Some("deny") => back(&state, &request, ErrorCode::AccessDenied, "The user denied the request."),
        Some("allow") => {
            let mut granted = ScopeSet::EMPTY;
            for (_, id) in form.iter().filter(|(k, _)| k == "scope") {
                if let Some(i) = state.scopes.index_of(id) {
                    granted.0 |= 1 << i;
                }
            }
            let granted = granted.intersection(request.scopes);
            if granted.is_empty() {
                return consent_page(
                    &state,
                    &client,
                    &request,
                    &params,
                    &signed_in,
                    Some("Select at least one permission to allow, or choose Cancel."),
                );
            }
            issue_code(&state, &client, &request, &signed_in, granted).await
        }
        _ => AuthorizeFailure::page(OAuthError::invalid_request("Choose Allow or Cancel."), &state.urls.issuer)
            .into_response(),
    }
}

/// Looks up what the checks depend on and runs them.
async fn validate(
    state: &AppState,
    params: &AuthorizeParams,
    headers: &HeaderMap,
) -> Result<(Client, ValidRequest), AuthorizeFailure> {
    let issuer = &state.urls.issuer;
    let page = |e| AuthorizeFailure::page(store_error(e), issuer);
    let client = match params.client_id.as_deref() {
        Some(id) if !id.is_empty() => state.store.client(id).await.map_err(page)?,
        _ => None,
    };
    let api_enabled = match &client {
        Some(c) => state.store.project(&c.project_id).await.map_err(page)?.is_some_and(|p| p.api_enabled),
        None => false,
    };
    let user_agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let cx = Context {
        client: client.as_ref(),
        api_enabled,
        registry: &state.scopes,
        require_pkce: state.config.require_pkce,
        user_agent,
    };
    let failure = |e: authorize::AuthorizeError| AuthorizeFailure {
        error: e.error,
        redirect: e.redirect,
        issuer: issuer.clone(),
    };
    let request = authorize::validate(params, cx).map_err(failure)?;
    match client {
        Some(client) => Ok((client, request)),
        None => Err(AuthorizeFailure::page(
            OAuthError::new(ErrorCode::InvalidClient, "The OAuth client was not found."),
            issuer,
        )),
    }
}

/// Sends an error back to the app.
fn back(state: &AppState, request: &ValidRequest, code: ErrorCode, text: &'static str) -> Response {
    AuthorizeFailure {
        error: OAuthError::new(code, text),
        redirect: Some((request.redirect_uri.clone(), request.state.clone())),
        issuer: state.urls.issuer.clone(),
    }
    .into_response()
}

/// The authorization URL to come back to after a page: `prompt` loses `login` and `select_account` (they
/// have been honoured), and `login_hint` goes (it pre-filled the form already). `sign_in_again` asks for
/// `prompt=login` instead.
fn continue_url(params: &AuthorizeParams, sign_in_again: bool) -> String {
    let mut p = params.clone();
    let rest: Vec<&str> = p
        .prompt
        .as_deref()
        .unwrap_or("")
        .split(' ')
        .filter(|v| !v.is_empty() && *v != "login" && *v != "select_account")
        .collect();
    p.prompt = if sign_in_again { Some("login".into()) } else { (!rest.is_empty()).then(|| rest.join(" ")) };
    p.login_hint = None;
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in p.to_pairs() {
        query.append_pair(k, v);
    }
    format!("{AUTHORIZE_PATH}?{}", query.finish())
}

fn consent_page(
    state: &AppState,
    client: &Client,
    request: &ValidRequest,
    params: &AuthorizeParams,
    signed_in: &SignedIn,
    error: Option<&str>,
) -> Response {
    let csrf = session::csrf_token(state, &signed_in.session);
    let carried = continue_url(params, false);
    let carried = carried.split_once('?').map(|(_, q)| q).unwrap_or("");
    let scopes = state
        .scopes
        .iter(request.scopes)
        .map(|s| ConsentScope { id: &s.id, summary: s.summary, checked: false })
        .collect();
    let status = if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    views::page(
        status,
        &ConsentPage {
            app_name: &client.name,
            api_name: API_NAME,
            user_email: &signed_in.user.email,
            scopes,
            csrf: &csrf,
            request: carried,
            error,
        },
    )
}

async fn issue_code(
    state: &AppState,
    client: &Client,
    request: &ValidRequest,
    signed_in: &SignedIn,
    granted: ScopeSet,
) -> Response {
    let now = state.clock.now();
    let code = Secret::generate("lkc_", &OsRandom);
    let record = AuthCode {
        code_hash: code.hash(),
        client_id: client.client_id.clone(),
        user_id: signed_in.user.id.clone(),
        redirect_uri: request.redirect_uri.clone(),
        scopes: granted,
        challenge: request.challenge.clone(),
        nonce: request.nonce.clone(),
        auth_time: signed_in.session.created_at,
        expires_at: now.plus(state.config.code_lifetime),
        used: false,
        grant_lifetime: None,
    };
    if let Err(e) = state.store.insert_code(&record).await {
        return AuthorizeFailure::page(store_error(e), &state.urls.issuer).into_response();
    }
    let mut params = vec![("code", code.expose())];
    if let Some(s) = &request.state {
        params.push(("state", s));
    }
    params.push(("iss", &state.urls.issuer));
    redirect_to_app(&redirect::with_params(&request.redirect_uri, &params))
}
