//! `GET /o/oauth2/v2/auth` (the request, then the sign-in, account-chooser or consent page) and
//! `POST /o/oauth2/v2/auth` (the user's decision on the consent page).
//!
//! Which account a request continues as is decided once, in [`choose`]: `prompt=login` signs in (again); an
//! `authuser` (set by the chooser and after signing in) names a signed-in account; `prompt=select_account` shows
//! the chooser; a `login_hint` selects the signed-in account whose e-mail address or `sub` it is, or pre-fills the
//! sign-in form with an e-mail address (never with a `sub`); one signed-in account goes straight on, several show
//! the chooser.

use super::AUTHORIZE_PATH;
use crate::clock::OsRandom;
use crate::error::{redirect_to_app, store_error, AuthorizeFailure};
use crate::extract::{self, Pairs};
use crate::session::{self, Browser, BrowserError, SignedIn};
use crate::state::AppState;
use crate::views::{self, Choice, ConsentPage, ConsentScope, Period, SelectAccountPage};
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use latchkey_core::account::{self, ACCESS_PERIODS};
use latchkey_core::authorize::{self, AuthorizeParams, Context, ValidRequest};
use latchkey_core::client::Client;
use latchkey_core::org::{self, Audience, Consent, Placement};
use latchkey_core::redirect;
use latchkey_core::scope::ScopeSet;
use latchkey_core::secret::Secret;
use latchkey_core::token::AuthCode;
use latchkey_core::{ErrorCode, OAuthError};

/// The API service named on the consent page.
const API_NAME: &str = "Video Data API";

/// A request that passed the checks, with what its pages depend on.
struct Checked {
    client: Client,
    request: ValidRequest,
    /// Whether the client's project offers time-based access.
    time_based: bool,
    /// The client's project's organisation, if any.
    org_id: Option<String>,
    /// Who the client's project serves.
    audience: Audience,
}

impl Checked {
    /// Runs the checks that need the account (`latchkey_core::org`'s order: audience, delegation, app access)
    /// with its organisation's policy for this client, read once. A refusal is a page, never a redirect, but with
    /// `prompt=none`, which may show no page (OIDC Core §3.1.2.6): then the refusal goes back to the app.
    async fn policy(&self, state: &AppState, user_id: &str) -> Result<Consent, Response> {
        let issuer = &state.urls.issuer;
        let member = match state.store.member_policy(user_id, &self.client.client_id).await {
            Ok(m) => m,
            Err(e) => return Err(AuthorizeFailure::page(store_error(e), issuer).into_response()),
        };
        let identity_assured = self.client.identity_assured(state.clock.now());
        let placement = Placement { org_id: self.org_id.as_deref(), audience: self.audience, identity_assured };
        match org::decide(placement, member.as_ref(), self.request.scopes) {
            Ok(consent) => Ok(consent),
            Err(refusal) => {
                let error = refusal.error(&self.client, &state.scopes);
                if self.request.prompt.none {
                    // Its redirect URI was checked: the refusal may go back to the app.
                    return Err(back_with(state, &self.request, OAuthError { redirectable: true, ..error }));
                }
                Err(AuthorizeFailure::page(error, issuer).into_response())
            }
        }
    }
}

/// What the request shows next, once the browser's accounts are known.
enum Next<'b> {
    /// Go on as this account.
    Account(&'b SignedIn),
    /// The sign-in page, pre-filled with this address.
    SignIn(&'b str),
    /// The account chooser.
    Chooser,
    /// `authuser` names an account that is not signed in in this browser.
    Unknown,
}

/// Decides which account the request continues as (the order is the module's doc).
fn choose<'b>(browser: &'b Browser, request: &'b ValidRequest, params: &AuthorizeParams) -> Next<'b> {
    let hint = request.login_hint.as_deref();
    let prefill = hint.filter(|h| h.contains('@')).unwrap_or("");
    if request.prompt.login {
        return Next::SignIn(prefill);
    }
    if let Some(id) = params.authuser.as_deref() {
        return browser.find(id).map_or(Next::Unknown, Next::Account);
    }
    if request.prompt.select_account {
        return if browser.accounts.is_empty() { Next::SignIn(prefill) } else { Next::Chooser };
    }
    if let Some(h) = hint {
        return browser.hinted(h).map_or(Next::SignIn(prefill), Next::Account);
    }
    match browser.accounts.as_slice() {
        [] => Next::SignIn(""),
        [one] => Next::Account(one),
        _ => Next::Chooser,
    }
}

/// Shows the page the request needs next.
pub async fn authorize_get(State(state): State<AppState>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let pairs = extract::pairs(query.unwrap_or_default().as_bytes());
    let params = AuthorizeParams::from_pairs(extract::borrowed(&pairs));
    let checked = match validate(&state, &params, &headers).await {
        Ok(ok) => ok,
        Err(failure) => return failure.into_response(),
    };
    let request = &checked.request;
    let none = request.prompt.none;
    let browser = match session::accounts(&state, &headers).await {
        Ok(b) => b,
        Err(BrowserError::Tampered) if none => {
            let mut r = back(&state, request, ErrorCode::LoginRequired, "The user must sign in.");
            r.headers_mut().append(header::SET_COOKIE, session::clear_session_cookie());
            return r;
        }
        Err(e) => return browser_failure(&state, e),
    };
    let mut next = choose(&browser, request, &params);
    // OIDC Core §3.1.2.1 `max_age`: an account that signed in longer ago signs in again.
    if let (Next::Account(s), Some(max_age)) = (&next, request.max_age) {
        if state.clock.now().0 - s.session.created_at.0 > max_age {
            next = Next::SignIn(&s.user.email);
        }
    }
    match next {
        Next::Account(s) => {
            let consent = match checked.policy(&state, &s.user.id).await {
                Ok(c) => c,
                Err(refused) => return refused,
            };
            let mut page = match consent {
                Consent::Skip => issue_code(&state, &checked, s, request.scopes, None).await,
                _ if none => {
                    return back(&state, request, ErrorCode::ConsentRequired, "The user must consent to this request.")
                }
                _ => consent_page(&state, &checked, &params, s, consent, None),
            };
            if browser.stale || browser.accounts.first().is_some_and(|f| f.user.id != s.user.id) {
                let cookie = browser.cookie_with_first(&s.user.id, state.config.session_lifetime);
                page.headers_mut().append(header::SET_COOKIE, cookie);
            }
            page
        }
        Next::SignIn(_) if none => back(&state, request, ErrorCode::LoginRequired, "The user must sign in."),
        Next::SignIn(email) => super::login::login_page(
            &headers,
            StatusCode::OK,
            Some(&checked.client.name),
            None,
            &continue_url(&params, Mode::Continue),
            email,
        ),
        Next::Chooser if none => back(
            &state,
            request,
            ErrorCode::AccountSelectionRequired,
            "The browser is signed in to several accounts: the user must choose one.",
        ),
        Next::Chooser => {
            let accounts = browser
                .accounts
                .iter()
                .map(|s| Choice {
                    email: &s.user.email,
                    name: s.user.name.as_deref(),
                    href: continue_url(&params, Mode::As(&s.user.id)),
                })
                .collect();
            let switch_href = continue_url(&params, Mode::SignInAgain);
            views::page(
                StatusCode::OK,
                &SelectAccountPage { app_name: &checked.client.name, accounts, switch_href: &switch_href },
            )
        }
        Next::Unknown if none => {
            back(&state, request, ErrorCode::LoginRequired, "The account named by authuser is not signed in here.")
        }
        Next::Unknown => unknown_account(),
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
    let browser = match session::accounts(&state, &headers).await {
        Ok(b) => b,
        Err(e) => return browser_failure(&state, e),
    };
    let signed_in = match params.authuser.as_deref() {
        Some(id) => browser.find(id),
        None => browser.accounts.first().filter(|_| browser.accounts.len() == 1),
    };
    let Some(signed_in) = signed_in else {
        return super::login::login_page(
            &headers,
            StatusCode::OK,
            None,
            Some("Your session ended. Sign in again to continue."),
            &continue_url(&params, Mode::Continue),
            "",
        );
    };
    if !session::csrf_ok(&state, &signed_in.session, field("csrf").unwrap_or("")) {
        return views::notice(
            StatusCode::FORBIDDEN,
            "This page has expired",
            "The form could not be verified. Go back to the app and start again.",
        );
    }
    let checked = match validate(&state, &params, &headers).await {
        Ok(ok) => ok,
        Err(failure) => return failure.into_response(),
    };
    let request = &checked.request;
    let consent = match checked.policy(&state, &signed_in.user.id).await {
        Ok(c) => c,
        Err(refused) => return refused,
    };
    match field("decision") {
        Some("deny") => back(&state, request, ErrorCode::AccessDenied, "The user denied the request."),
        Some("allow") if (consent == Consent::AllOrNone) != (field("mode") == Some("all")) => {
            // The app became trusted, or stopped being, while the page was open: the choice shown no longer fits.
            let again = Some("This app's access changed while the page was open. Review it again.");
            consent_page(&state, &checked, &params, signed_in, consent, again)
        }
        Some("allow") => {
            let Ok(lifetime) = account::access_period(field("duration"), checked.time_based) else {
                return AuthorizeFailure::page(
                    OAuthError::invalid_request("The access period chosen is not one this app offers."),
                    &state.urls.issuer,
                )
                .into_response();
            };
            let mut granted = ScopeSet::EMPTY;
            for (_, id) in form.iter().filter(|(k, _)| k == "scope") {
                if let Some(i) = state.scopes.index_of(id) {
                    granted.0 |= 1 << i;
                }
            }
            let granted = match consent {
                Consent::Granular => granted.intersection(request.scopes),
                Consent::AllOrNone | Consent::Skip => request.scopes,
            };
            if granted.is_empty() {
                let again = Some("Select at least one permission to allow, or choose Cancel.");
                return consent_page(&state, &checked, &params, signed_in, consent, again);
            }
            issue_code(&state, &checked, signed_in, granted, lifetime).await
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
) -> Result<Checked, AuthorizeFailure> {
    let issuer = &state.urls.issuer;
    let page = |e| AuthorizeFailure::page(store_error(e), issuer);
    let client = match params.client_id.as_deref() {
        Some(id) if !id.is_empty() => state.store.client(id).await.map_err(page)?,
        _ => None,
    };
    let project = match &client {
        Some(c) => state.store.project(&c.project_id).await.map_err(page)?,
        None => None,
    };
    let user_agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let cx = Context {
        client: client.as_ref(),
        api_enabled: project.as_ref().is_some_and(|p| p.api_enabled),
        registry: &state.scopes,
        require_pkce: state.config.require_pkce,
        user_agent,
    };
    let failure = |e: authorize::AuthorizeError| AuthorizeFailure {
        details: Some(request_details(params, client.as_ref(), e.error.code)),
        error: e.error,
        redirect: e.redirect,
        issuer: issuer.clone(),
    };
    let request = authorize::validate(params, cx).map_err(failure)?;
    match client {
        Some(client) => Ok(Checked {
            client,
            request,
            time_based: project.as_ref().is_some_and(|p| p.time_based_access),
            audience: project.as_ref().map_or(Audience::External, |p| p.audience),
            org_id: project.and_then(|p| p.org_id),
        }),
        None => Err(AuthorizeFailure {
            details: Some(request_details(params, None, ErrorCode::InvalidClient)),
            ..AuthorizeFailure::page(
                OAuthError::new(ErrorCode::InvalidClient, "The OAuth client was not found."),
                issuer,
            )
        }),
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

/// Sends an error back to the app.
fn back(state: &AppState, request: &ValidRequest, code: ErrorCode, text: &'static str) -> Response {
    back_with(state, request, OAuthError::new(code, text))
}

/// Sends `error` back to the app.
fn back_with(state: &AppState, request: &ValidRequest, error: OAuthError) -> Response {
    AuthorizeFailure {
        details: None,
        error,
        redirect: Some((request.redirect_uri.clone(), request.state.clone())),
        issuer: state.urls.issuer.clone(),
    }
    .into_response()
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
    let csrf = session::csrf_token(state, &signed_in.session);
    let carried = continue_url(params, Mode::As(&signed_in.user.id));
    let carried = carried.split_once('?').map(|(_, q)| q).unwrap_or("");
    let scopes = state
        .scopes
        .iter(checked.request.scopes)
        .map(|s| ConsentScope { id: &s.id, summary: s.summary, checked: false })
        .collect();
    let periods = match checked.time_based {
        true => ACCESS_PERIODS.iter().map(|(secs, label)| Period { secs: *secs, label }).collect(),
        false => Vec::new(),
    };
    let status = if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    views::page(
        status,
        &ConsentPage {
            app_name: &checked.client.name,
            api_name: API_NAME,
            user_email: &signed_in.user.email,
            switch_href: &continue_url(params, Mode::Chooser),
            periods,
            scopes,
            all_or_none: consent == Consent::AllOrNone,
            csrf: &csrf,
            request: carried,
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
        grant_lifetime,
    };
    // The policy's last word: judged again under the locks every organisation change takes, in the unit of work
    // that stores the code, so that no change slips between the check and the code (`Orgs::insert_code_if_allowed`).
    match state.store.insert_code_if_allowed(&record, &client.project_id).await {
        Ok(Ok(())) => {}
        Ok(Err(refusal)) => {
            let error = refusal.error(client, &state.scopes);
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
