//! `GET /o/oauth2/v2/auth` (the request, then the sign-in, account-chooser or consent page) and
//! `POST /o/oauth2/v2/auth` (the user's decision on the consent page).
//!
//! What the endpoint does is decided once, in order, by `latchkey_core::flow::authorize` (its module doc lists the
//! checks); the handlers here read the request, the browser's accounts and the form, call it, and render its
//! outcome: a page, a redirect back to the app, or a code.

use super::AUTHORIZE_PATH;
use crate::error::{redirect_to_app, store_error, AuthorizeFailure};
use crate::extract::{self, ClientAddr, Pairs};
use crate::session::{self, Browser, BrowserError, SignedIn};
use crate::state::AppState;
use crate::views::{self, Choice, ConsentPage, ConsentScope, Period, SelectAccountPage};
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use latchkey_admin::clock::OsRandom;
use latchkey_core::account::ACCESS_PERIODS;
use latchkey_core::auth_code;
use latchkey_core::authorize::AuthorizeParams;
use latchkey_core::client::{Client, RegistrationKind};
use latchkey_core::flow::authorize::{
    self as flow, Account, AuthorizePorts, Checked, Decision, Outcome, ProjectFacts, Refused, Unreadable,
};
use latchkey_core::org::{Consent, Membership};
use latchkey_core::scope::{ScopeRegistry, ScopeSet};
use latchkey_core::time::UnixTime;
use latchkey_core::token::AuthCode;
use latchkey_core::ErrorCode;
use latchkey_core::{redirect, registration};
use latchkey_store::StoreError;

/// The flow's lookups, from the store, with the scopes in force when the request came, and the request's address
/// (for the limit on fetching client ID metadata documents).
pub(super) struct Ports<'a>(pub(super) &'a AppState, std::sync::Arc<ScopeRegistry>, Option<std::net::IpAddr>);

impl<'a> Ports<'a> {
    /// The lookups for one request.
    pub(super) fn of(state: &'a AppState) -> Self {
        Self(state, state.scopes.get(), None)
    }

    /// The lookups for one request from `peer`.
    fn from(state: &'a AppState, peer: Option<Extension<ClientAddr>>) -> Self {
        Self(state, state.scopes.get(), peer.map(|Extension(ClientAddr(a))| a.ip()))
    }

    /// Admits one more fetch of a metadata document for this request's address (the registrations' hourly limit).
    fn admit_fetch(&self) -> Result<(), String> {
        let Some(ip) = self.2 else { return Ok(()) };
        self.0
            .rate_limits
            .admit_registration(ip)
            .map_err(|r| format!("too many new apps from this address; try again in {} seconds", r.retry_after_secs))
    }
}

impl AuthorizePorts for Ports<'_> {
    type Error = StoreError;

    fn registry(&self) -> &ScopeRegistry {
        &self.1
    }

    fn require_pkce(&self) -> bool {
        self.0.config.require_pkce
    }

    fn now(&self) -> UnixTime {
        self.0.clock.now()
    }

    async fn client(&self, client_id: &str) -> Result<Result<Option<(Client, ProjectFacts)>, String>, StoreError> {
        // A client a metadata document describes is read through its document (cached, or fetched again).
        let client = match self.0.store.client(client_id).await? {
            // Deleted (blocked), it stays so without a fetch; made otherwise than by a document, it is as stored.
            Some(client)
                if client.deleted_at.is_some()
                    || client.registration.as_ref().is_none_or(|r| r.kind != RegistrationKind::Document) =>
            {
                client
            }
            _ => match self
                .0
                .documents
                .client(&*self.0.store, &self.0.config.client_metadata, client_id, (self.now(), &|| self.admit_fetch()))
                .await?
            {
                Some(Ok(client)) => client,
                Some(Err(why)) => return Ok(Err(why)),
                None => return Ok(Ok(None)),
            },
        };
        let project = self.0.store.project(&client.project_id).await?.map(|p| ProjectFacts {
            api_enabled: p.api_enabled,
            time_based_access: p.time_based_access,
            org_id: p.org_id,
            audience: p.audience,
        });
        Ok(Ok(Some((client, project.unwrap_or_default()))))
    }

    async fn membership(&self, user_id: &str, client_id: &str) -> Result<Option<Membership>, StoreError> {
        self.0.store.member_policy(user_id, client_id).await
    }
}

/// The browser's accounts as the flow reads them, in the same order.
fn accounts_of(browser: &Browser) -> Vec<Account<'_>> {
    fn of(s: &SignedIn) -> Account<'_> {
        Account {
            user_id: &s.user.id,
            email: &s.user.email,
            signed_in_at: s.session.created_at,
            method: s.session.method,
        }
    }
    browser.accounts.iter().map(of).collect()
}

fn user_agent(headers: &HeaderMap) -> &str {
    headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("")
}

/// Shows the page the request needs next (`latchkey_core::flow::authorize::show` decides which).
pub async fn authorize_get(
    State(state): State<AppState>,
    peer: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let pairs = extract::pairs(query.unwrap_or_default().as_bytes());
    let params = AuthorizeParams::from_pairs(extract::borrowed(&pairs));
    let browser = match session::accounts(&state, &headers).await {
        Ok(b) => Some(b),
        Err(BrowserError::Tampered) => None,
        Err(e) => return browser_failure(&state, e),
    };
    let accounts = browser.as_ref().map(accounts_of);
    let readable = accounts.as_deref().ok_or(Unreadable);
    let outcome = flow::show(&Ports::from(&state, peer), &params, user_agent(&headers), readable).await;
    // The account that goes on becomes the browser's first (and a cookie naming ended sessions is written anew).
    let shown = match &outcome {
        Ok(Outcome::Consent { account, .. } | Outcome::IssueCode { account, .. }) => Some(*account),
        _ => None,
    };
    let mut page = render(&state, &headers, &params, browser.as_ref(), outcome).await;
    if let (Some(browser), Some(i)) = (&browser, shown) {
        let id = &browser.accounts[i].user.id;
        if browser.stale || i != 0 {
            let cookie = browser.cookie_with_first(id, state.config.session_lifetime);
            page.headers_mut().append(header::SET_COOKIE, cookie);
        }
    }
    page
}

/// Takes the user's decision on the consent page (`latchkey_core::flow::authorize::decide`).
pub async fn authorize_post(
    State(state): State<AppState>,
    peer: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = match extract::form(&headers, &body) {
        Ok(f) => f,
        Err(e) => return AuthorizeFailure::page(e, &state.urls.issuer).into_response(),
    };
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let request_pairs: Pairs = extract::pairs(field("request").unwrap_or("").as_bytes());
    let params = AuthorizeParams::from_pairs(extract::borrowed(&request_pairs));
    let browser = match session::accounts(&state, &headers).await {
        Ok(b) => b,
        Err(e) => return browser_failure(&state, e),
    };
    let decision = decision_of(&state, &form);
    let csrf = field("csrf").unwrap_or("");
    let csrf_ok = |i: usize| session::csrf_ok(&state, &browser.accounts[i].session, csrf);
    let accounts = accounts_of(&browser);
    let ports = Ports::from(&state, peer);
    let outcome = flow::decide(&ports, &params, user_agent(&headers), &accounts, csrf_ok, decision).await;
    render(&state, &headers, &params, Some(&browser), outcome).await
}

/// The consent form's decision as sent (the authorization endpoint's and the device grant's page).
pub(super) fn decision_of<'a>(state: &AppState, form: &'a [(String, String)]) -> Decision<'a> {
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let mut scopes = ScopeSet::EMPTY;
    for (_, id) in form.iter().filter(|(k, _)| k == "scope") {
        if let Some(i) = state.scopes.get().index_of(id) {
            scopes.0 |= 1 << i;
        }
    }
    Decision {
        decision: field("decision"),
        all_or_none: field("mode") == Some("all"),
        duration: field("duration"),
        scopes,
    }
}

/// The response for what the flow decided.
async fn render(
    state: &AppState,
    headers: &HeaderMap,
    params: &AuthorizeParams,
    browser: Option<&Browser>,
    outcome: Result<Outcome, StoreError>,
) -> Response {
    let issuer = &state.urls.issuer;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => return AuthorizeFailure::page(store_error(e), issuer).into_response(),
    };
    let signed_in = |i: usize| browser.and_then(|b| b.accounts.get(i));
    match outcome {
        Outcome::SignIn(checked, prefill) => super::login::login_page(
            state,
            headers,
            StatusCode::OK,
            Some(&checked.client.name),
            None,
            &continue_url(params, Mode::Continue),
            &prefill,
        ),
        Outcome::StepUp { checked, email, passkeys_only } => {
            let why = match passkeys_only {
                true => "Your organisation requires you to sign in with a passkey. Use \"Sign in with a passkey\" to continue.",
                false => "Your organisation requires 2-step verification. Sign in again to continue.",
            };
            super::login::login_page(
                state,
                headers,
                StatusCode::OK,
                Some(&checked.client.name),
                Some(why),
                &continue_url(params, Mode::Continue),
                &email,
            )
        }
        Outcome::ChooseAccount(checked) => {
            let accounts = browser
                .map(|b| b.accounts.as_slice())
                .unwrap_or_default()
                .iter()
                .map(|s| Choice {
                    email: &s.user.email,
                    name: s.user.name.as_deref(),
                    href: continue_url(params, Mode::As(&s.user.id)),
                })
                .collect();
            let switch_href = continue_url(params, Mode::SignInAgain);
            views::page(
                StatusCode::OK,
                &SelectAccountPage { app_name: &checked.client.name, accounts, switch_href: &switch_href },
            )
        }
        Outcome::Consent { checked, account, consent, again } => match signed_in(account) {
            Some(s) => consent_page(state, &checked, params, s, consent, again),
            None => unknown_account(),
        },
        Outcome::IssueCode { checked, account, scopes, lifetime } => match signed_in(account) {
            Some(s) => issue_code(state, &checked, s, scopes, lifetime).await,
            None => unknown_account(),
        },
        Outcome::Refused(refused) => refusal(state, params, refused),
        Outcome::UnknownAccount => unknown_account(),
        Outcome::Unreadable => browser_failure(state, BrowserError::Tampered),
        Outcome::SessionEnded => super::login::login_page(
            state,
            headers,
            StatusCode::OK,
            None,
            Some("Your session ended. Sign in again to continue."),
            &continue_url(params, Mode::Continue),
            "",
        ),
        Outcome::FormExpired => views::notice(
            StatusCode::FORBIDDEN,
            "This page has expired",
            "The form could not be verified. Go back to the app and start again.",
        ),
    }
}

/// A refusal: back to the app, or a page (with the request's details when the request itself was refused).
fn refusal(state: &AppState, params: &AuthorizeParams, refused: Refused) -> Response {
    let issuer = state.urls.issuer.clone();
    match refused {
        Refused::Request { error, redirect, client } => AuthorizeFailure {
            details: Some(request_details(params, client.as_deref(), error.code)),
            error,
            redirect,
            issuer,
        }
        .into_response(),
        Refused::Back { error, redirect, clear_cookie } => {
            let mut r = AuthorizeFailure { details: None, error, redirect: Some(redirect), issuer }.into_response();
            if clear_cookie {
                r.headers_mut().append(header::SET_COOKIE, session::clear_session_cookie());
            }
            r
        }
        // An organisation refused this account: another account may be let in.
        Refused::Page(error) if matches!(error.code, ErrorCode::OrgInternal | ErrorCode::AdminPolicyEnforced) => {
            let page = AuthorizeFailure::page(error, &issuer).into_response();
            views::offering_another_account(page, continue_url(params, Mode::Chooser))
        }
        Refused::Page(error) => AuthorizeFailure::page(error, &issuer).into_response(),
    }
}

/// The error page's request details: what the app sent, what its client accepts, and a hint when the client or
/// the redirect URI was refused.
fn request_details(params: &AuthorizeParams, client: Option<&Client>, code: ErrorCode) -> Box<views::RequestDetails> {
    let about_redirect = matches!(code, ErrorCode::RedirectUriMismatch | ErrorCode::InvalidClient);
    // What the request sent is shown as sent, up to a length a developer can read.
    let shown = |v: &Option<String>| v.as_deref().map(|v| v.chars().take(300).collect::<String>());
    Box::new(views::RequestDetails {
        client_id: shown(&params.client_id).unwrap_or_default(),
        client_name: client.map(|c| c.name.clone()),
        client_type: client.map(|c| c.client_type.as_str()),
        redirect_uri: shown(&params.redirect_uri),
        accepted: client.map(redirect::accepted_forms).unwrap_or_default(),
        hint: about_redirect.then(|| redirect::hint(client, params.redirect_uri.as_deref())).flatten(),
    })
}

/// The page for a session cookie that cannot be read (removed with it) or a store failure.
pub fn browser_failure(state: &AppState, e: BrowserError) -> Response {
    match e {
        BrowserError::Store(e) => AuthorizeFailure::page(store_error(e), &state.urls.issuer).into_response(),
        BrowserError::Tampered => {
            let mut page = views::notice(
                StatusCode::BAD_REQUEST,
                "Your sign-in could not be read",
                "This browser sent a sign-in cookie that latchkey did not set. It has been removed: sign in again.",
            );
            page.headers_mut().append(header::SET_COOKIE, session::clear_session_cookie());
            page
        }
    }
}

/// The page for an `authuser` that names no account signed in in this browser.
pub fn unknown_account() -> Response {
    views::notice(
        StatusCode::BAD_REQUEST,
        "That account is not signed in",
        "The account chosen is not signed in in this browser. Go back to the app and start again, or sign in to it.",
    )
}

/// Where a page of the flow leads back to.
#[derive(Debug, Clone, Copy)]
pub enum Mode<'a> {
    /// On, with `login` and `select_account` dropped from `prompt` (they have been honoured).
    Continue,
    /// On as this signed-in account.
    As(&'a str),
    /// To the sign-in page, to add another account (`prompt=login`).
    SignInAgain,
    /// To the account chooser (`prompt=select_account`).
    Chooser,
}

/// The authorization URL to come back to after a page: `login_hint` goes (it pre-filled the form or selected the
/// account already), and `prompt` and `authuser` follow `mode`.
pub fn continue_url(params: &AuthorizeParams, mode: Mode<'_>) -> String {
    let mut p = params.clone();
    let rest: Vec<&str> = p
        .prompt
        .as_deref()
        .unwrap_or("")
        .split(' ')
        .filter(|v| !v.is_empty() && *v != "login" && *v != "select_account")
        .collect();
    p.prompt = match mode {
        Mode::SignInAgain => Some("login".into()),
        Mode::Chooser => Some("select_account".into()),
        Mode::Continue | Mode::As(_) => (!rest.is_empty()).then(|| rest.join(" ")),
    };
    p.authuser = match mode {
        Mode::As(id) => Some(id.to_owned()),
        Mode::Continue => p.authuser,
        Mode::SignInAgain | Mode::Chooser => None,
    };
    p.login_hint = None;
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in p.to_pairs() {
        query.append_pair(k, v);
    }
    format!("{AUTHORIZE_PATH}?{}", query.finish())
}

fn consent_page(
    state: &AppState,
    checked: &Checked,
    params: &AuthorizeParams,
    signed_in: &SignedIn,
    consent: Consent,
    error: Option<&str>,
) -> Response {
    let carried = continue_url(params, Mode::As(&signed_in.user.id));
    let carried = carried.split_once('?').map(|(_, q)| q).unwrap_or("");
    let form = ConsentForm {
        action: AUTHORIZE_PATH,
        request: carried,
        switch_href: &continue_url(params, Mode::Chooser),
        warning: None,
    };
    consent_view(state, checked, signed_in, consent, form, error)
}

/// Where a consent page's form goes and what it carries: the authorization request's, or a device's.
pub(super) struct ConsentForm<'a> {
    /// The form's action.
    pub action: &'a str,
    /// What the form carries back (`request`).
    pub request: &'a str,
    /// Where "Switch account" leads.
    pub switch_href: &'a str,
    /// A warning above the permissions (the device flow's).
    pub warning: Option<&'a str>,
}

/// The consent page of a checked request for a signed-in account, in `consent`'s form.
pub(super) fn consent_view(
    state: &AppState,
    checked: &Checked,
    signed_in: &SignedIn,
    consent: Consent,
    form: ConsentForm<'_>,
    error: Option<&str>,
) -> Response {
    let csrf = session::csrf_token(state, &signed_in.session);
    let registry = state.scopes.get();
    let scopes = registry
        .iter(checked.request.scopes)
        .map(|s| ConsentScope {
            id: &s.id,
            summary: &s.summary,
            checked: false,
            api: match &s.api {
                Some(api) => Some(api.name.as_str()),
                None => (!s.identity).then_some(super::DATA_API_NAME),
            },
        })
        .collect();
    let periods = match checked.project.time_based_access {
        true => ACCESS_PERIODS.iter().map(|(secs, label)| Period { secs: *secs, label }).collect(),
        false => Vec::new(),
    };
    let status = if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    views::page(
        status,
        &ConsentPage {
            app_name: &checked.client.name,
            user_email: &signed_in.user.email,
            switch_href: form.switch_href,
            periods,
            scopes,
            all_or_none: consent != Consent::Granular,
            csrf: &csrf,
            request: form.request,
            action: form.action,
            warning: form.warning,
            unverified: checked
                .client
                .registration
                .as_ref()
                .map(|r| registration::origin(r.kind, &checked.client.client_id)),
            error,
        },
    )
}

async fn issue_code(
    state: &AppState,
    checked: &Checked,
    signed_in: &SignedIn,
    granted: ScopeSet,
    grant_lifetime: Option<i64>,
) -> Response {
    let (client, request) = (&checked.client, &checked.request);
    let now = state.clock.now();
    let mut record = AuthCode {
        code_hash: vec![],
        client_id: client.client_id.clone(),
        user_id: signed_in.user.id.clone(),
        redirect_uri: request.redirect_uri.clone(),
        scopes: granted,
        challenge: request.challenge.clone(),
        nonce: request.nonce.clone(),
        auth_time: signed_in.session.created_at,
        expires_at: now.plus(state.config.code_lifetime),
        used: false,
        grant_lifetime,
    };
    // The code carries its record, sealed, so that its exchange asks the store once (`latchkey_core::auth_code`).
    let code = auth_code::issue(auth_code::sealing_key(&state.keys.get().mac), &record, &OsRandom);
    record.code_hash = code.hash();
    // The policy's last word: judged again under the locks every organisation change takes, in the unit of work
    // that stores the code, so that no change slips between the check and the code (`Orgs::insert_code_if_allowed`).
    match state.store.insert_code_if_allowed(&record, &client.project_id).await {
        Ok(Ok(())) => {}
        Ok(Err(refusal)) => {
            let error = refusal.error(client, &state.scopes.get());
            return AuthorizeFailure::page(error, &state.urls.issuer).into_response();
        }
        Err(e) => return AuthorizeFailure::page(store_error(e), &state.urls.issuer).into_response(),
    }
    let mut params = vec![("code", code.expose())];
    if let Some(s) = &request.state {
        params.push(("state", s));
    }
    params.push(("iss", &state.urls.issuer));
    redirect_to_app(&redirect::with_params(&request.redirect_uri, &params))
}
