//! The device authorization grant (RFC 8628): `POST /device/code`, where a TV or Limited Input device asks for its
//! codes, and `/device`, where the person enters the user code on a phone or computer, sees which app asks (with a
//! warning), and consents on the same page as the code flow, after the same organisation checks
//! (`latchkey_core::flow::authorize::policy`). Allowing stores an authorization code under the device code's hash,
//! under the organisation locks like any code, then marks the device code approved; the device's next poll of the
//! token endpoint redeems it (`latchkey_core::flow::device`).

use super::authorize::{browser_failure, consent_view, decision_of, ConsentForm, Ports};
use super::ports::StorePorts;
use super::token::{read_pairs, refused};
use crate::error::{no_store_json, store_error, TokenError};
use crate::extract::{self, ClientAddr};
use crate::rate_limit::address_group;
use crate::session::{self, SignedIn};
use crate::state::AppState;
use crate::views;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::Extension;
use latchkey_admin::clock::OsRandom;
use latchkey_core::authorize::{requested_scopes, Prompt, ValidRequest};
use latchkey_core::client::ClientType;
use latchkey_core::device::{self, DeviceCode, State as Decided};
use latchkey_core::flow::authorize::{self as flow, AuthorizePorts, Checked, Choice, Outcome};
use latchkey_core::scope::DATA_API;
use latchkey_core::secret::Secret;
use latchkey_core::token::{client_auth, AuthCode, Form};
use latchkey_core::{ErrorCode, OAuthError};
use latchkey_store::{LoginWindows, StoreError};
use std::collections::HashMap;

/// Wrong user codes a browser session, and an address, may enter in a minute.
const WRONG_CODES_PER_MINUTE: u32 = 5;

/// The warning shown before consent: the person must have started this on a device of their own.
const WARNING: &str = "Only continue if you started this yourself on a device you own, such as your TV or game \
                       console. If someone sent you this code, stop: they would get access to your account.";

/// `POST /device/code`: a device's codes (RFC 8628 §3.1, §3.2).
pub async fn code_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let pairs = match read_pairs(&headers, &body) {
        Ok(p) => p,
        Err(e) => return refused(e, &headers, None),
    };
    let form = match Form::new(extract::borrowed(&pairs)) {
        Ok(f) => f,
        Err(e) => return refused(e.into(), &headers, None),
    };
    match new_codes(&state, &headers, &form).await {
        Ok(body) => no_store_json(&body),
        Err(e) => refused(e, &headers, Some(&form)),
    }
}

async fn new_codes(state: &AppState, headers: &HeaderMap, form: &Form<'_>) -> Result<serde_json::Value, TokenError> {
    let authorization = extract::single_header(headers, &header::AUTHORIZATION)?;
    let auth = client_auth(form, authorization)?;
    let client = latchkey_core::flow::authenticate(&StorePorts::new(state, headers), &auth).await?;
    if client.client_type != ClientType::Tv {
        let why = "Only clients of the type TVs and Limited Input devices may use the device authorization grant.";
        return Err(OAuthError::new(ErrorCode::UnauthorizedClient, why).into());
    }
    let api_enabled = state.store.project(&client.project_id).await?.is_some_and(|p| p.api_enabled);
    let (scope, resources) = (form.get("scope"), form.all("resource"));
    let scopes = requested_scopes(&state.scopes.get(), scope, &resources, api_enabled, &client.project_id)?;
    let now = state.clock.now();
    let device_code = Secret::generate("lkd_", &OsRandom);
    let (lifetime, interval) = (state.config.device_code_lifetime, state.config.device_poll_interval);
    for _ in 0..5 {
        let user_code = device::new_user_code(&OsRandom);
        let record = DeviceCode {
            device_code_hash: device_code.hash(),
            user_code_hash: device::user_code_hash(&user_code),
            client_id: client.client_id.clone(),
            scopes,
            created_at: now,
            expires_at: now.plus(lifetime),
            interval,
            state: Decided::Pending,
        };
        match state.store.insert_device_code(&record).await {
            Ok(()) => {
                let shown = device::format_user_code(&user_code);
                let uri = format!("{}/device", state.urls.auth);
                let complete = format!("{uri}?user_code={shown}");
                return Ok(serde_json::json!({
                    "device_code": device_code.expose(),
                    "user_code": shown,
                    "verification_uri": uri,
                    "verification_uri_complete": complete,
                    "expires_in": lifetime,
                    "interval": interval,
                }));
            }
            // A user code taken by another pending device: draw again.
            Err(StoreError::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(OAuthError::new(ErrorCode::TemporarilyUnavailable, "No free user code: try again.").into())
}

/// The browser's account that enters the code: `authuser`, else the most recently used; or the response that
/// sends it to sign in first.
async fn account(state: &AppState, headers: &HeaderMap, authuser: &str, back_to: &str) -> Result<SignedIn, Response> {
    let browser = session::accounts(state, headers).await.map_err(|e| browser_failure(state, e))?;
    let found = match authuser {
        "" => browser.accounts.first(),
        id => browser.find(id),
    };
    match found {
        Some(s) => Ok(s.clone()),
        None => {
            let query = form_urlencoded::Serializer::new(String::new()).append_pair("continue", back_to).finish();
            Err(super::session_start::see_other(&format!("/signin?{query}")))
        }
    }
}

fn device_path(user_code: &str) -> String {
    match user_code {
        "" => "/device".into(),
        code => format!(
            "/device?{}",
            form_urlencoded::Serializer::new(String::new()).append_pair("user_code", code).finish()
        ),
    }
}

/// `GET /device[?user_code=...]`: the code's form, pre-filled from `verification_uri_complete` (still a click away).
pub async fn page_get(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let typed = q.get("user_code").map(String::as_str).unwrap_or("");
    let signed_in = match account(&state, &headers, "", &device_path(typed)).await {
        Ok(s) => s,
        Err(page) => return page,
    };
    code_page(&state, &signed_in, typed, StatusCode::OK, None)
}

fn code_page(state: &AppState, s: &SignedIn, typed: &str, status: StatusCode, error: Option<&str>) -> Response {
    let csrf = session::csrf_token(state, &s.session);
    let page = views::DevicePage { csrf: &csrf, account: &s.user.id, email: &s.user.email, user_code: typed, error };
    views::page(status, &page)
}

/// Counts a user code entered from this session and from this address before it is checked, in one-minute
/// windows: the keys to forgive if it is right, or `None` past the limit (nothing checked).
async fn admit_code(
    state: &AppState,
    s: &SignedIn,
    addr: Option<std::net::IpAddr>,
) -> Result<Option<[String; 2]>, StoreError> {
    let keys = [
        format!("device-session:{}", hex(&s.session.token_hash)),
        format!("device-ip:{}", addr.map(address_group).unwrap_or_default()),
    ];
    let windows = LoginWindows { base: 60, longest: 60 };
    let limits = [(keys[0].as_str(), WRONG_CODES_PER_MINUTE), (keys[1].as_str(), WRONG_CODES_PER_MINUTE)];
    let counts = state.store.record_login_attempts(&limits, state.clock.now(), windows).await?;
    Ok(counts.iter().all(|c| c.count <= WRONG_CODES_PER_MINUTE).then_some(keys))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The pending, unexpired device code a typed user code names, with its checked request for the consent page.
async fn pending(state: &AppState, typed: &str) -> Result<Option<(DeviceCode, Box<Checked>)>, StoreError> {
    let Some(code) = device::user_code(typed) else { return Ok(None) };
    let Some(record) = state.store.device_code_by_user_code(&device::user_code_hash(&code)).await? else {
        return Ok(None);
    };
    if record.state != Decided::Pending || record.expires_at <= state.clock.now() {
        return Ok(None);
    }
    let Ok(Some((client, project))) = Ports::of(state).client(&record.client_id).await? else { return Ok(None) };
    // The data API may have been switched off for the project since the code was issued.
    if client.deleted_at.is_some() || (!project.api_enabled && record.scopes.intersects(DATA_API)) {
        return Ok(None);
    }
    let request = ValidRequest {
        redirect_uri: device::REDIRECT_URI.into(),
        scopes: record.scopes,
        challenge: None,
        state: None,
        login_hint: None,
        nonce: None,
        prompt: Prompt::default(),
        max_age: None,
    };
    Ok(Some((record, Box::new(Checked { client, request, project }))))
}

/// The account as the organisation's checks see it.
fn signed_in_account(s: &SignedIn) -> flow::Account<'_> {
    flow::Account {
        user_id: &s.user.id,
        email: &s.user.email,
        signed_in_at: s.session.created_at,
        method: s.session.method,
    }
}

/// The name of the project the asking app belongs to (empty when it cannot be read: the page goes on without it).
async fn project_name(state: &AppState, checked: &Checked) -> String {
    state.store.project(&checked.client.project_id).await.ok().flatten().map(|p| p.name).unwrap_or_default()
}

/// Which app asks, from which project, then the warning.
fn warning(checked: &Checked, project: &str) -> String {
    match project {
        "" => format!("{} asks for access. {WARNING}", checked.client.name),
        project => format!("{} (project {project}) asks for access. {WARNING}", checked.client.name),
    }
}

/// The consent page's form for a device's user code.
fn consent_form<'a>(code: &'a str, warning: &'a str) -> ConsentForm<'a> {
    ConsentForm {
        action: "/device/consent",
        request: code,
        switch_href: "/signin?continue=/device",
        warning: Some(warning),
    }
}

/// The organisation's checks for the account (the authorization endpoint's check 6), then the consent page.
async fn consent_for(state: &AppState, s: &SignedIn, checked: Box<Checked>, code: &str) -> Response {
    match flow::policy(&Ports::of(state), checked, &signed_in_account(s)).await {
        Ok(Ok((checked, consent))) => {
            let switch = format!(
                "/signin?continue={}",
                form_urlencoded::byte_serialize(device_path(code).as_bytes()).collect::<String>()
            );
            let project = project_name(state, &checked).await;
            let warning = warning(&checked, &project);
            let form = ConsentForm { switch_href: &switch, ..consent_form(code, &warning) };
            consent_view(state, &checked, s, consent, form, None)
        }
        Ok(Err(outcome)) => match *outcome {
            Outcome::StepUp { checked, email, .. } => super::login::login_page(
                state,
                &HeaderMap::new(),
                StatusCode::OK,
                Some(&checked.client.name),
                Some("Your organisation requires a stronger sign-in. Sign in again to continue."),
                &device_path(code),
                &email,
            ),
            Outcome::Refused(flow::Refused::Page(error)) => views::error_page(StatusCode::FORBIDDEN, &error, None),
            _ => views::notice(StatusCode::BAD_REQUEST, "This request cannot go on", "Start again on your device."),
        },
        Err(e) => views::error_page(StatusCode::SERVICE_UNAVAILABLE, &store_error(e), None),
    }
}

/// A user code entered, as the page that took it found it.
enum Entry {
    /// A pending code of a usable client, with its request for the consent page.
    Found(DeviceCode, Box<Checked>),
    /// No such pending code (counted as a wrong code).
    Wrong,
    /// Past the wrong codes allowed this minute (nothing checked).
    TooMany,
}

/// Counts the user code entered against the session's and the address's wrong codes, then looks it up; a right
/// code is taken back from the count. Both forms that carry a user code come through here, so neither can be
/// used to guess codes faster.
async fn enter(
    state: &AppState,
    s: &SignedIn,
    addr: Option<Extension<ClientAddr>>,
    typed: &str,
) -> Result<Entry, StoreError> {
    let Some(keys) = admit_code(state, s, addr.map(|Extension(a)| a.0.ip())).await? else {
        return Ok(Entry::TooMany);
    };
    let Some((record, checked)) = pending(state, typed).await? else { return Ok(Entry::Wrong) };
    state.store.forgive_login_attempts(&[&keys[0], &keys[1]]).await?;
    Ok(Entry::Found(record, checked))
}

const TOO_MANY: &str = "Too many wrong codes. Wait a minute, then enter the code your device shows.";

/// `POST /device`: the user code entered (`user_code`; case, spaces and the hyphen do not matter), counted; a
/// right one shows which app asks, the warning and the consent page.
pub async fn page_post(
    State(state): State<AppState>,
    addr: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = extract::pairs(&body);
    let field = |name: &str| extract::field(&form, name);
    let typed = field("user_code");
    let s = match account(&state, &headers, field("account"), &device_path(typed)).await {
        Ok(s) => s,
        Err(page) => return page,
    };
    if !session::csrf_ok(&state, &s.session, field("csrf")) {
        return code_page(&state, &s, typed, StatusCode::FORBIDDEN, Some("The form expired. Enter the code again."));
    }
    match enter(&state, &s, addr, typed).await {
        Ok(Entry::Found(_, checked)) => {
            let code = device::user_code(typed).unwrap_or_default();
            consent_for(&state, &s, checked, &code).await
        }
        Ok(Entry::Wrong) => {
            let why = "That code is not valid, or it expired. Check the code your device shows, or start again there.";
            code_page(&state, &s, typed, StatusCode::BAD_REQUEST, Some(why))
        }
        Ok(Entry::TooMany) => super::session_start::retry_after(
            code_page(&state, &s, typed, StatusCode::TOO_MANY_REQUESTS, Some(TOO_MANY)),
            60,
        ),
        Err(e) => views::error_page(StatusCode::SERVICE_UNAVAILABLE, &store_error(e), None),
    }
}

/// `POST /device/consent`: the consent page's decision, read as the authorization endpoint reads it
/// (`flow::consent_choice`). The user code it carries is counted like one typed on `/device`. Allow approves the
/// device code and stores the authorization code the device will redeem, in one unit; Cancel declines it (the
/// device gets `access_denied`).
pub async fn consent_post(
    State(state): State<AppState>,
    addr: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = extract::pairs(&body);
    let field = |name: &str| extract::field(&form, name);
    let code = field("request");
    let s = match account(&state, &headers, "", &device_path(code)).await {
        Ok(s) => s,
        Err(page) => return page,
    };
    if !session::csrf_ok(&state, &s.session, field("csrf")) {
        return views::notice(StatusCode::FORBIDDEN, "This page has expired", "Enter the code again.");
    }
    let gone = || views::notice(StatusCode::BAD_REQUEST, "This code is no longer valid", "Start again on your device.");
    let unavailable = |e| views::error_page(StatusCode::SERVICE_UNAVAILABLE, &store_error(e), None);
    let (record, checked) = match enter(&state, &s, addr, code).await {
        Ok(Entry::Found(record, checked)) => (record, checked),
        Ok(Entry::Wrong) => return gone(),
        Ok(Entry::TooMany) => {
            return super::session_start::retry_after(
                views::notice(StatusCode::TOO_MANY_REQUESTS, "Too many wrong codes", TOO_MANY),
                60,
            )
        }
        Err(e) => return unavailable(e),
    };
    // The policy again (it may have changed while the page was open), then the decision.
    let (checked, consent) = match flow::policy(&Ports::of(&state), checked, &signed_in_account(&s)).await {
        Ok(Ok(decided)) => decided,
        // Refused now: the page that says why (the checks run again on a fresh read).
        Ok(Err(_)) => {
            return match pending(&state, code).await {
                Ok(Some((_, checked))) => consent_for(&state, &s, checked, code).await,
                _ => gone(),
            }
        }
        Err(e) => return unavailable(e),
    };
    let now = state.clock.now();
    let (scopes, lifetime) = match flow::consent_choice(&checked, consent, &decision_of(&state, &form)) {
        Choice::Allow { scopes, lifetime } => (scopes, lifetime),
        Choice::Deny => {
            return match state.store.deny_device_code(&record.user_code_hash, now).await {
                Ok(_) => views::notice(
                    StatusCode::OK,
                    "You declined",
                    "The device was not given access. You can close this page.",
                ),
                Err(e) => unavailable(e),
            }
        }
        Choice::Again(why) => {
            let project = project_name(&state, &checked).await;
            let warning = warning(&checked, &project);
            let form = consent_form(code, &warning);
            return consent_view(&state, &checked, &s, consent, form, Some(why));
        }
        Choice::Refused(error) => return views::error_page(StatusCode::BAD_REQUEST, &error, None),
    };
    let record_code = AuthCode {
        code_hash: record.device_code_hash.clone(),
        client_id: record.client_id.clone(),
        user_id: s.user.id.clone(),
        redirect_uri: device::REDIRECT_URI.into(),
        scopes,
        challenge: None,
        nonce: None,
        auth_time: s.session.created_at,
        expires_at: record.expires_at,
        used: false,
        grant_lifetime: lifetime,
    };
    let project_id = &checked.client.project_id;
    match state.store.approve_device_code(&record.user_code_hash, &record_code, project_id, now).await {
        Ok(Ok(true)) => views::notice(
            StatusCode::OK,
            "You're all set",
            "Go back to your device: it is signing in now. You can close this page.",
        ),
        Ok(Ok(false)) => gone(),
        Ok(Err(refusal)) => {
            views::error_page(StatusCode::FORBIDDEN, &refusal.error(&checked.client, &state.scopes.get()), None)
        }
        Err(e) => unavailable(e),
    }
}
