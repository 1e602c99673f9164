//! The authorization endpoint (RFC 6749 §4.1.1, OpenID Connect Core §3.1.2): one ordered list of named checks
//! over [`AuthorizePorts`], returning what the endpoint does next ([`Outcome`]). The server reads the browser's
//! accounts and the form, calls [`show`] (a `GET`) or [`decide`] (the consent page's `POST`) once, and renders the
//! outcome; nothing here does I/O itself.
//!
//! [`show`], in order:
//! 1. [`request`]: the client, its redirect URI, the user agent, then the request's parameters
//!    ([`crate::authorize::validate`]). A refusal is a page until the redirect URI is known good, then it goes
//!    back to the app.
//! 2. [`readable`]: a session cookie that cannot be read is a page (it is removed), or `login_required` with
//!    `prompt=none`.
//! 3. [`choose`]: which account goes on. `prompt=login` signs in (again); an `authuser` (set by the chooser and
//!    after signing in) names a signed-in account; `prompt=select_account` shows the chooser; a `login_hint`
//!    selects the signed-in account whose e-mail address or `sub` it is, or pre-fills the sign-in form with an
//!    e-mail address (never with a `sub`); one signed-in account goes straight on, several show the chooser.
//! 4. [`max_age`]: an account that signed in longer ago than `max_age` signs in again (OIDC Core §3.1.2.1).
//! 5. [`without_prompt`]: with `prompt=none`, whatever would need a page goes back to the app as its error
//!    (OIDC Core §3.1.2.6): `login_required`, `account_selection_required`.
//! 6. [`policy`]: the organisation's rules for the account: its sign-in policy (2-step verification required,
//!    passkeys only) against how the session signed in, which signs in again when it falls short; then its
//!    audience and app policy ([`crate::org::decide`]). With `prompt=none` a refusal goes back to the app,
//!    otherwise it is a page.
//! 7. [`consent`]: no consent page for a delegated app whose identity is assured (a code at once); otherwise the
//!    consent page, or `consent_required` with `prompt=none`.
//!
//! [`decide`], in order: the account the page was shown to ([`Outcome::SessionEnded`] without it), the form's
//! CSRF token, [`request`] and [`policy`] again (either may have changed while the page was open), then the
//! decision: Cancel, the form of the page against the policy's, the access period, the scopes chosen.

use crate::account;
use crate::authorize::{self, AuthorizeParams, Context, ValidRequest};
use crate::client::Client;
use crate::org::{self, Audience, Consent, Membership, Placement};
use crate::scope::{ScopeRegistry, ScopeSet};
use crate::sign_in;
use crate::time::UnixTime;
use crate::{ErrorCode, OAuthError};

/// What the flow reads of a client's project.
#[derive(Debug, Clone, Default)]
pub struct ProjectFacts {
    /// Whether the project has the data API enabled.
    pub api_enabled: bool,
    /// Whether the project offers time-based access.
    pub time_based_access: bool,
    /// The project's organisation, if any.
    pub org_id: Option<String>,
    /// Who the project's clients serve.
    pub audience: Audience,
}

/// A signed-in account of the browser, as the flow needs it.
#[derive(Debug, Clone, Copy)]
pub struct Account<'a> {
    /// The account's id (its `sub`).
    pub user_id: &'a str,
    /// Its e-mail address.
    pub email: &'a str,
    /// When its session signed in.
    pub signed_in_at: UnixTime,
    /// How its session signed in.
    pub method: sign_in::Method,
}

/// The session cookie named sessions latchkey did not make: the browser's accounts cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreadable;

/// What the flow asks of the server: each method is one lookup.
#[allow(async_fn_in_trait)]
pub trait AuthorizePorts: Sync {
    /// The server's own failure (the store's), passed through.
    type Error: Send;
    /// The scopes this deployment knows.
    fn registry(&self) -> &ScopeRegistry;
    /// Whether a request without PKCE is refused.
    fn require_pkce(&self) -> bool;
    /// The time now.
    fn now(&self) -> UnixTime;
    /// A client by id, with what the flow reads of its project (the defaults when the project is gone); `Err` with
    /// the reason when the id is the URL of a client ID metadata document that cannot be used.
    async fn client(&self, client_id: &str) -> Result<Result<Option<(Client, ProjectFacts)>, String>, Self::Error>;
    /// The account's membership of an organisation, with its policy for this client.
    async fn membership(&self, user_id: &str, client_id: &str) -> Result<Option<Membership>, Self::Error>;
}

/// A request that passed [`request`], with what the pages depend on.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The client.
    pub client: Client,
    /// The request, checked.
    pub request: ValidRequest,
    /// The client's project.
    pub project: ProjectFacts,
}

/// Why a request is refused, and how the refusal is shown.
#[derive(Debug, Clone)]
pub enum Refused {
    /// The request itself: a page with the request's details (its `client`, when known), or back to the app at
    /// `redirect` once the redirect URI is known good.
    Request {
        /// The error.
        error: OAuthError,
        /// The redirect URI and `state` to send it to, or `None` for the page.
        redirect: Option<(String, Option<String>)>,
        /// The client named, if it is known.
        client: Option<Box<Client>>,
    },
    /// Back to the app (its redirect URI was checked); `clear_cookie` when the session cookie could not be read.
    Back {
        /// The error.
        error: OAuthError,
        /// The redirect URI and `state`.
        redirect: (String, Option<String>),
        /// Whether the unreadable session cookie goes too.
        clear_cookie: bool,
    },
    /// A page of its own, without the request's details.
    Page(OAuthError),
}

/// What the endpoint does next.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The sign-in page, pre-filled with this e-mail address (or empty).
    SignIn(Box<Checked>, String),
    /// The account chooser.
    ChooseAccount(Box<Checked>),
    /// The account's organisation asks for a stronger sign-in than its session's (2-step verification, or a
    /// passkey): the sign-in page again, pre-filled with its address, saying why.
    StepUp {
        /// The request.
        checked: Box<Checked>,
        /// The account's e-mail address.
        email: String,
        /// Whether only a passkey will do.
        passkeys_only: bool,
    },
    /// The consent page for the account at this index of the browser's, in this form; `again` says why it is
    /// shown once more.
    Consent {
        /// The request.
        checked: Box<Checked>,
        /// The account's index among the browser's.
        account: usize,
        /// The page's form.
        consent: Consent,
        /// Why the page is shown again, if it is.
        again: Option<&'static str>,
    },
    /// A code for the account at this index, for these scopes, with the grant's lifetime chosen.
    IssueCode {
        /// The request.
        checked: Box<Checked>,
        /// The account's index among the browser's.
        account: usize,
        /// The scopes granted.
        scopes: ScopeSet,
        /// The access period chosen (seconds), if any.
        lifetime: Option<i64>,
    },
    /// Refused.
    Refused(Refused),
    /// `authuser` names no account signed in in this browser.
    UnknownAccount,
    /// The session cookie cannot be read (it is removed).
    Unreadable,
    /// The consent page's session ended before its form came back: sign in again.
    SessionEnded,
    /// The consent form's CSRF token does not match its session.
    FormExpired,
}

/// The consent page's form, as it came back.
#[derive(Debug, Clone, Copy)]
pub struct Decision<'a> {
    /// `allow` or `deny`.
    pub decision: Option<&'a str>,
    /// Whether the page was the all-or-none form (`mode=all`).
    pub all_or_none: bool,
    /// The access period chosen, as sent.
    pub duration: Option<&'a str>,
    /// The scopes whose boxes were checked.
    pub scopes: ScopeSet,
}

/// `GET` of the endpoint: what it shows or does next (the order is the module's).
pub async fn show<P: AuthorizePorts>(
    ports: &P,
    params: &AuthorizeParams,
    user_agent: &str,
    accounts: Result<&[Account<'_>], Unreadable>,
) -> Result<Outcome, P::Error> {
    let checked = match request(ports, params, user_agent).await? {
        Ok(checked) => checked,
        Err(refused) => return Ok(Outcome::Refused(refused)),
    };
    let accounts = match readable(&checked, accounts) {
        Ok(accounts) => accounts,
        Err(outcome) => return Ok(outcome),
    };
    let next = max_age(ports.now(), &checked.request, choose(accounts, &checked.request, params), accounts);
    let account = match without_prompt(checked, next) {
        Ok((checked, index)) => (checked, index),
        Err(outcome) => return Ok(*outcome),
    };
    let (checked, index) = account;
    let consent = match policy(ports, checked, &accounts[index]).await? {
        Ok((checked, consent)) => (checked, consent),
        Err(outcome) => return Ok(*outcome),
    };
    Ok(self::consent(consent.0, index, consent.1))
}

/// `POST` of the endpoint, the consent page's form: the account it was shown to (the one `authuser` names, or
/// the browser's only one), whose CSRF token `csrf_ok` checks, then the checks of [`show`] that may have changed,
/// then the decision.
pub async fn decide<P: AuthorizePorts>(
    ports: &P,
    params: &AuthorizeParams,
    user_agent: &str,
    accounts: &[Account<'_>],
    csrf_ok: impl FnOnce(usize) -> bool,
    form: Decision<'_>,
) -> Result<Outcome, P::Error> {
    let index = match params.authuser.as_deref() {
        Some(id) => accounts.iter().position(|a| a.user_id == id),
        None => (accounts.len() == 1).then_some(0),
    };
    let Some(index) = index else { return Ok(Outcome::SessionEnded) };
    if !csrf_ok(index) {
        return Ok(Outcome::FormExpired);
    }
    let checked = match request(ports, params, user_agent).await? {
        Ok(checked) => Box::new(checked),
        Err(refused) => return Ok(Outcome::Refused(refused)),
    };
    let (checked, consent) = match policy(ports, checked, &accounts[index]).await? {
        Ok(decided) => decided,
        Err(outcome) => return Ok(*outcome),
    };
    let page_again = |checked, again| Outcome::Consent { checked, account: index, consent, again: Some(again) };
    Ok(match consent_choice(&checked, consent, &form) {
        Choice::Deny => back(&checked.request, ErrorCode::AccessDenied, "The user denied the request."),
        Choice::Again(why) => page_again(checked, why),
        Choice::Allow { scopes, lifetime } => Outcome::IssueCode { checked, account: index, scopes, lifetime },
        Choice::Refused(error) => Outcome::Refused(Refused::Page(error)),
    })
}

/// What a consent form's decision comes to, against the consent now due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// The person chose Cancel.
    Deny,
    /// The page again, saying why.
    Again(&'static str),
    /// Allowed: these scopes, for this access period (`None`: until revoked).
    Allow {
        /// The scopes granted.
        scopes: ScopeSet,
        /// The grant's lifetime in seconds.
        lifetime: Option<i64>,
    },
    /// A form no page of ours sends.
    Refused(OAuthError),
}

/// Reads a consent form's decision (shared by the authorization endpoint and the device grant's page). A page
/// shown for a trusted or delegated app is the all-or-none form, so its boxes are never read: the choice shown
/// must still be the one due, or the page comes again.
pub fn consent_choice(checked: &Checked, consent: Consent, form: &Decision<'_>) -> Choice {
    match form.decision {
        Some("deny") => Choice::Deny,
        // The app became trusted, or stopped being, while the page was open: the choice shown no longer fits.
        Some("allow") if (consent != Consent::Granular) != form.all_or_none => {
            Choice::Again("This app's access changed while the page was open. Review it again.")
        }
        Some("allow") => {
            let Ok(lifetime) = account::access_period(form.duration, checked.project.time_based_access) else {
                return Choice::Refused(OAuthError::invalid_request(
                    "The access period chosen is not one this app offers.",
                ));
            };
            let scopes = match consent {
                Consent::Granular => form.scopes.intersection(checked.request.scopes),
                Consent::AllOrNone | Consent::Skip => checked.request.scopes,
            };
            if scopes.is_empty() {
                return Choice::Again("Select at least one permission to allow, or choose Cancel.");
            }
            Choice::Allow { scopes, lifetime }
        }
        _ => Choice::Refused(OAuthError::invalid_request("Choose Allow or Cancel.")),
    }
}

/// Check 1: the client and the request's parameters.
pub async fn request<P: AuthorizePorts>(
    ports: &P,
    params: &AuthorizeParams,
    user_agent: &str,
) -> Result<Result<Checked, Refused>, P::Error> {
    let found = match params.client_id.as_deref() {
        Some(id) if !id.is_empty() => match ports.client(id).await? {
            Ok(found) => found,
            Err(why) => {
                let text = format!("The app's client ID metadata document cannot be used: {why}.");
                let error = OAuthError::new(ErrorCode::InvalidClient, text);
                return Ok(Err(Refused::Request { error, redirect: None, client: None }));
            }
        },
        _ => None,
    };
    let (client, project) = match found {
        Some((client, project)) => (Some(client), project),
        None => (None, ProjectFacts::default()),
    };
    let cx = Context {
        client: client.as_ref(),
        api_enabled: project.api_enabled,
        registry: ports.registry(),
        require_pkce: ports.require_pkce(),
        user_agent,
    };
    let request = match authorize::validate(params, cx) {
        Ok(request) => request,
        Err(e) => {
            return Ok(Err(Refused::Request { error: e.error, redirect: e.redirect, client: client.map(Box::new) }))
        }
    };
    Ok(match client {
        Some(client) => Ok(Checked { client, request, project }),
        None => Err(Refused::Request {
            error: OAuthError::new(ErrorCode::InvalidClient, "The OAuth client was not found."),
            redirect: None,
            client: None,
        }),
    })
}

/// Check 2: the browser's accounts, unless its cookie cannot be read.
fn readable<'b, 'a>(
    checked: &Checked,
    accounts: Result<&'b [Account<'a>], Unreadable>,
) -> Result<&'b [Account<'a>], Outcome> {
    match accounts {
        Ok(accounts) => Ok(accounts),
        Err(Unreadable) if checked.request.prompt.none => {
            let error = OAuthError::new(ErrorCode::LoginRequired, "The user must sign in.");
            Err(Outcome::Refused(Refused::Back { error, redirect: redirect_of(&checked.request), clear_cookie: true }))
        }
        Err(Unreadable) => Err(Outcome::Unreadable),
    }
}

/// Where the request goes next, once the browser's accounts are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// On as the account at this index.
    Account(usize),
    /// The sign-in page, pre-filled with this address.
    SignIn(String),
    /// The account chooser.
    Chooser,
    /// `authuser` names an account that is not signed in in this browser.
    Unknown,
}

/// Check 3: which account the request continues as (the order is the module's).
pub fn choose(accounts: &[Account<'_>], request: &ValidRequest, params: &AuthorizeParams) -> Next {
    let hint = request.login_hint.as_deref();
    let prefill = || hint.filter(|h| h.contains('@')).unwrap_or("").to_owned();
    let position = |found: &dyn Fn(&Account<'_>) -> bool| accounts.iter().position(found);
    if request.prompt.login {
        return Next::SignIn(prefill());
    }
    if let Some(id) = params.authuser.as_deref() {
        return position(&|a| a.user_id == id).map_or(Next::Unknown, Next::Account);
    }
    if request.prompt.select_account {
        return if accounts.is_empty() { Next::SignIn(prefill()) } else { Next::Chooser };
    }
    if let Some(h) = hint {
        let hinted = position(&|a| a.email.eq_ignore_ascii_case(h) || a.user_id == h);
        return hinted.map_or_else(|| Next::SignIn(prefill()), Next::Account);
    }
    match accounts.len() {
        0 => Next::SignIn(String::new()),
        1 => Next::Account(0),
        _ => Next::Chooser,
    }
}

/// Check 4: an account that signed in longer ago than `max_age` signs in again, its address pre-filled.
pub fn max_age(now: UnixTime, request: &ValidRequest, next: Next, accounts: &[Account<'_>]) -> Next {
    match (next, request.max_age) {
        (Next::Account(i), Some(max_age)) if now.0 - accounts[i].signed_in_at.0 > max_age => {
            Next::SignIn(accounts[i].email.to_owned())
        }
        (next, _) => next,
    }
}

/// Check 5: with `prompt=none`, a page goes back to the app as its error; otherwise the pages are the outcome. The
/// account that goes on, if one does.
fn without_prompt(checked: Checked, next: Next) -> Result<(Box<Checked>, usize), Box<Outcome>> {
    let checked = Box::new(checked);
    let none = checked.request.prompt.none;
    let refused = |code, text: &'static str| Box::new(back(&checked.request, code, text));
    Err(match next {
        Next::Account(i) => return Ok((checked, i)),
        Next::SignIn(_) if none => refused(ErrorCode::LoginRequired, "The user must sign in."),
        Next::Chooser if none => refused(
            ErrorCode::AccountSelectionRequired,
            "The browser is signed in to several accounts: the user must choose one.",
        ),
        Next::Unknown if none => {
            refused(ErrorCode::LoginRequired, "The account named by authuser is not signed in here.")
        }
        Next::SignIn(prefill) => Box::new(Outcome::SignIn(checked, prefill)),
        Next::Chooser => Box::new(Outcome::ChooseAccount(checked)),
        Next::Unknown => Box::new(Outcome::UnknownAccount),
    })
}

/// Check 6: the organisation's rules for the account, read once: its sign-in policy against how the session
/// signed in (a stronger sign-in first: [`Outcome::StepUp`]), then its audience and app policy
/// ([`crate::org::decide`]). A refusal is a page, never a redirect, but with `prompt=none`, which may show no page
/// (OIDC Core §3.1.2.6): then it goes back to the app (`login_required` for a sign-in to make again).
pub async fn policy<P: AuthorizePorts>(
    ports: &P,
    checked: Box<Checked>,
    account: &Account<'_>,
) -> Result<Result<(Box<Checked>, Consent), Box<Outcome>>, P::Error> {
    let member = ports.membership(account.user_id, &checked.client.client_id).await?;
    if let Some(m) = member.as_ref().filter(|m| !sign_in::satisfies(account.method, m.sign_in)) {
        if checked.request.prompt.none {
            let text = "The user must sign in again as the organisation's policy requires.";
            return Ok(Err(Box::new(back(&checked.request, ErrorCode::LoginRequired, text))));
        }
        let passkeys_only = m.sign_in.passkeys_only;
        return Ok(Err(Box::new(Outcome::StepUp { checked, email: account.email.to_owned(), passkeys_only })));
    }
    let placement = Placement {
        org_id: checked.project.org_id.as_deref(),
        audience: checked.project.audience,
        identity_assured: checked.client.identity_assured(ports.now()),
        self_registered: checked.client.registration.is_some(),
    };
    let decided = org::decide(placement, member.as_ref(), checked.request.scopes).map_err(|refusal| {
        let error = refusal.error(&checked.client, ports.registry());
        Box::new(Outcome::Refused(if checked.request.prompt.none {
            let error = OAuthError { redirectable: true, ..error };
            Refused::Back { error, redirect: redirect_of(&checked.request), clear_cookie: false }
        } else {
            Refused::Page(error)
        }))
    });
    Ok(decided.map(|consent| (checked, consent)))
}

/// Check 7: a code at once when consent is skipped; otherwise the consent page, which `prompt=none` cannot show.
fn consent(checked: Box<Checked>, account: usize, consent: Consent) -> Outcome {
    match consent {
        Consent::Skip => {
            let scopes = checked.request.scopes;
            Outcome::IssueCode { checked, account, scopes, lifetime: None }
        }
        _ if checked.request.prompt.none => {
            back(&checked.request, ErrorCode::ConsentRequired, "The user must consent to this request.")
        }
        _ => Outcome::Consent { checked, account, consent, again: None },
    }
}

/// An error sent back to the app.
fn back(request: &ValidRequest, code: ErrorCode, text: &'static str) -> Outcome {
    let error = OAuthError::new(code, text);
    Outcome::Refused(Refused::Back { error, redirect: redirect_of(request), clear_cookie: false })
}

fn redirect_of(request: &ValidRequest) -> (String, Option<String>) {
    (request.redirect_uri.clone(), request.state.clone())
}

#[cfg(test)]
#[path = "authorize_tests.rs"]
mod tests;
