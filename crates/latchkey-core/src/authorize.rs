//! The authorization endpoint's rules (`docs/api.md`, "Authorization"; RFC 6749 §4.1.1, RFC 7636 §4.3).
//!
//! The checks run in one visible order. Until the client and its redirect URI are known to be good, every
//! failure is user-facing (an error page, never a redirect); after that, failures travel back to the redirect
//! URI with the `state`.

use crate::client::Client;
use crate::pkce::{self, ChallengeMethod};
use crate::scope::{ScopeRegistry, ScopeSet, DATA_API};
use crate::{redirect, target, useragent, ErrorCode, OAuthError};
use std::borrow::Cow;

/// Declares the known parameters once: the field list, the name table and the accessors follow from it.
macro_rules! known_params {
    ($($field:ident),* $(,)?) => {
        /// The parameters the endpoint knows. Others are ignored, as RFC 6749 §3.1 requires.
        const KNOWN: &[&str] = &[$(stringify!($field)),*];

        impl AuthorizeParams {
            fn slot(&mut self, name: &str) -> Option<&mut Option<String>> {
                match name {
                    $(stringify!($field) => Some(&mut self.$field),)*
                    _ => None,
                }
            }

            /// The parameters as query pairs, to carry a request through the login and consent forms.
            pub fn to_pairs(&self) -> Vec<(&'static str, &str)> {
                let mut out = Vec::new();
                $(if let Some(v) = &self.$field { out.push((stringify!($field), v.as_str())); })*
                out.extend(self.resources.iter().map(|r| ("resource", r.as_str())));
                out
            }
        }
    };
}

known_params!(
    client_id,
    redirect_uri,
    response_type,
    scope,
    code_challenge,
    code_challenge_method,
    state,
    login_hint,
    nonce,
    prompt,
    access_type,
    include_granted_scopes,
    response_mode,
    hd,
    authuser,
    max_age,
);

/// The raw query of an authorization request, one value per known parameter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizeParams {
    /// `client_id`.
    pub client_id: Option<String>,
    /// `redirect_uri`.
    pub redirect_uri: Option<String>,
    /// `response_type`.
    pub response_type: Option<String>,
    /// `scope`.
    pub scope: Option<String>,
    /// `code_challenge`.
    pub code_challenge: Option<String>,
    /// `code_challenge_method`.
    pub code_challenge_method: Option<String>,
    /// `state`.
    pub state: Option<String>,
    /// `login_hint`.
    pub login_hint: Option<String>,
    /// OpenID Connect `nonce`, echoed in the id_token.
    pub nonce: Option<String>,
    /// `prompt`: `none`, `consent`, `select_account`, `login`.
    pub prompt: Option<String>,
    /// `access_type` (`offline`/`online`); accepted, installed apps always get a refresh token.
    pub access_type: Option<String>,
    /// `include_granted_scopes`; accepted.
    pub include_granted_scopes: Option<String>,
    /// `response_mode`; only `query` is supported.
    pub response_mode: Option<String>,
    /// `hd`; accepted and ignored.
    pub hd: Option<String>,
    /// The signed-in account of this browser to continue as (a user id): set by the account chooser and after
    /// signing in, never needed from an app. An account not signed in here is refused with an error page.
    pub authuser: Option<String>,
    /// OpenID Connect `max_age`: the most seconds since the account last signed in; older, it signs in again.
    pub max_age: Option<String>,
    /// RFC 8707 `resource`, which may be sent more than once.
    pub resources: Vec<String>,
    /// The first known parameter that was sent more than once.
    pub duplicate: Option<&'static str>,
}

impl AuthorizeParams {
    /// Collects the known parameters from decoded query pairs, noting the first repeated one.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut p = Self::default();
        for (k, v) in pairs {
            if k == "resource" {
                p.resources.push(v.to_owned());
                continue;
            }
            let Some(name) = KNOWN.iter().copied().find(|n| *n == k) else {
                continue;
            };
            let first_duplicate = p.duplicate.is_none();
            match p.slot(name) {
                Some(slot @ None) => *slot = Some(v.to_owned()),
                Some(Some(_)) if first_duplicate => p.duplicate = Some(name),
                _ => {}
            }
        }
        p
    }
}

/// What `prompt` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prompt {
    /// `none`: no page may be shown.
    pub none: bool,
    /// `login`: sign in again even with a session.
    pub login: bool,
    /// `select_account`: show the account chooser.
    pub select_account: bool,
}

/// A request that passed every check: what the login and consent pages work from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidRequest {
    /// The redirect URI, exactly as sent.
    pub redirect_uri: String,
    /// The requested scopes.
    pub scopes: ScopeSet,
    /// The PKCE challenge and its method, when one was sent.
    pub challenge: Option<(ChallengeMethod, String)>,
    /// The `state`, returned unchanged.
    pub state: Option<String>,
    /// The `login_hint`.
    pub login_hint: Option<String>,
    /// The OpenID Connect `nonce`.
    pub nonce: Option<String>,
    /// What `prompt` asked for.
    pub prompt: Prompt,
    /// `max_age`, in seconds.
    pub max_age: Option<i64>,
}

/// A failed check, with where its answer goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizeError {
    /// The error.
    pub error: OAuthError,
    /// The redirect URI and `state` to send it to, or `None` for an error page.
    pub redirect: Option<(String, Option<String>)>,
}

/// What the rest of the request depends on, looked up by the caller.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The client named by `client_id`, if there is one.
    pub client: Option<&'a Client>,
    /// Whether the client's project has the data API enabled.
    pub api_enabled: bool,
    /// The scopes the server knows.
    pub registry: &'a ScopeRegistry,
    /// Whether a request without PKCE is refused (RFC 9700; `docs/decisions.md`, "PKCE").
    pub require_pkce: bool,
    /// The `User-Agent` header.
    pub user_agent: &'a str,
}

/// The scopes a request asks for (the authorization endpoint's and the device authorization endpoint's rule): its
/// `resource` parameters must be resources a client of `project_id` may name, and stand for their scopes when no
/// `scope` is sent, else bound the API scopes asked for (`invalid_target`, [`target`]); a scope is required, each
/// must be known to a client of `project_id` (`invalid_scope`: a registered API of another project that is not
/// public is as unknown as a scope never registered), and data-API scopes need the API enabled for the client's
/// project (`unauthorized_client`).
pub fn requested_scopes(
    registry: &ScopeRegistry,
    scope: Option<&str>,
    resources: &[impl AsRef<str>],
    api_enabled: bool,
    project_id: &str,
) -> Result<ScopeSet, OAuthError> {
    let targets = target::requested(registry, resources, project_id)?;
    // Resources named without a scope stand for their scopes.
    let scope = match (targets.is_empty(), scope.filter(|s| !s.trim().is_empty())) {
        (false, None) => Cow::Owned(registry.format(target::union(&targets))),
        (_, scope) => Cow::Borrowed(scope.unwrap_or("")),
    };
    if scope.trim().is_empty() {
        return Err(OAuthError::invalid_request("Missing required parameter: scope"));
    }
    let scopes = registry.parse(&scope)?;
    target::within(registry, scopes, &targets, resources)?;
    if let Some(hidden) = registry.iter(registry.hidden_from(project_id, scopes)).next() {
        return Err(OAuthError::new(
            ErrorCode::InvalidScope,
            format!("Some requested scopes were invalid: {{invalid={}}}", hidden.id),
        ));
    }
    data_api_enabled(scopes, api_enabled)?;
    Ok(scopes)
}

/// Data-API scopes need the API enabled for the client's project (`unauthorized_client`).
pub fn data_api_enabled(scopes: ScopeSet, api_enabled: bool) -> Result<(), OAuthError> {
    if !api_enabled && scopes.intersects(DATA_API) {
        return Err(OAuthError::new(
            ErrorCode::UnauthorizedClient,
            "The Video Data API is not enabled for this OAuth client's project. The project's developer must \
             enable it in the console.",
        ));
    }
    Ok(())
}

/// Checks an authorization request, in order.
pub fn validate(params: &AuthorizeParams, cx: Context<'_>) -> Result<ValidRequest, AuthorizeError> {
    let page = |e: OAuthError| AuthorizeError { error: OAuthError { redirectable: false, ..e }, redirect: None };

    // 1. Who is asking, and where the answer may go: until both are known good, errors are pages.
    if matches!(params.duplicate, Some("client_id" | "redirect_uri")) {
        return Err(page(duplicate(params.duplicate)));
    }
    if params.client_id.as_deref().is_none_or(str::is_empty) {
        return Err(page(OAuthError::invalid_request("Missing required parameter: client_id")));
    }
    let Some(client) = cx.client else {
        return Err(page(OAuthError::new(ErrorCode::InvalidClient, "The OAuth client was not found.")));
    };
    if client.deleted_at.is_some() {
        return Err(page(OAuthError::new(
            ErrorCode::DeletedClient,
            "The OAuth client was deleted. Its owner can restore it within 30 days of deletion.",
        )));
    }
    let Some(redirect_uri) = params.redirect_uri.as_deref().filter(|s| !s.is_empty()) else {
        return Err(page(OAuthError::invalid_request("Missing required parameter: redirect_uri")));
    };
    redirect::check(client, redirect_uri).map_err(page)?;
    if useragent::is_embedded(cx.user_agent) {
        return Err(page(OAuthError::new(
            ErrorCode::DisallowedUseragent,
            "This app's request is shown in an embedded browser, which is not allowed. Open it in your \
             system browser instead.",
        )));
    }

    // 2. Everything else goes back to the app.
    let back =
        |error: OAuthError| AuthorizeError { error, redirect: Some((redirect_uri.to_owned(), params.state.clone())) };
    if params.duplicate.is_some() {
        return Err(back(duplicate(params.duplicate)));
    }
    match params.response_type.as_deref() {
        None | Some("") => return Err(back(OAuthError::invalid_request("Missing required parameter: response_type"))),
        Some("code") => {}
        Some(_) => {
            return Err(back(OAuthError::new(
                ErrorCode::UnsupportedResponseType,
                "Only response_type=code is supported for installed apps.",
            )))
        }
    }
    if !matches!(params.response_mode.as_deref(), None | Some("query")) {
        return Err(back(OAuthError::invalid_request("Unsupported response_mode: responses travel in the query.")));
    }
    let max_age = match params.max_age.as_deref().filter(|v| !v.is_empty()) {
        None => None,
        Some(v) => match v.parse::<u32>() {
            Ok(secs) => Some(i64::from(secs)),
            Err(_) => return Err(back(OAuthError::invalid_request("max_age is a number of seconds."))),
        },
    };
    let prompt = parse_prompt(params.prompt.as_deref()).map_err(back)?;
    let project_id = cx.client.map_or("", |c| c.project_id.as_str());
    let (scope, resources) = (params.scope.as_deref(), &params.resources);
    // The scopes are checked here, whether the data API is enabled after PKCE (the order of the checks).
    let scopes = requested_scopes(cx.registry, scope, resources, true, project_id).map_err(back)?;
    let challenge = match params.code_challenge.as_deref() {
        Some(c) => {
            let method = ChallengeMethod::parse(params.code_challenge_method.as_deref()).map_err(back)?;
            pkce::check_challenge(method, c).map_err(back)?;
            Some((method, c.to_owned()))
        }
        None if params.code_challenge_method.is_some() || cx.require_pkce => {
            return Err(back(OAuthError::invalid_grant(
                "Missing code_challenge: this server requires PKCE (RFC 7636) for installed apps.",
            )))
        }
        None => None,
    };
    data_api_enabled(scopes, cx.api_enabled).map_err(back)?;
    Ok(ValidRequest {
        redirect_uri: redirect_uri.to_owned(),
        scopes,
        challenge,
        state: params.state.clone(),
        login_hint: params.login_hint.clone().filter(|h| !h.is_empty()),
        nonce: params.nonce.clone(),
        prompt,
        max_age,
    })
}

fn duplicate(name: Option<&str>) -> OAuthError {
    OAuthError::invalid_request(format!("Parameter sent more than once: {}", name.unwrap_or("?")))
}

fn parse_prompt(value: Option<&str>) -> Result<Prompt, OAuthError> {
    let mut p = Prompt::default();
    for v in value.unwrap_or("").split(' ').filter(|s| !s.is_empty()) {
        match v {
            "none" => p.none = true,
            "consent" => {}
            "login" => p.login = true,
            "select_account" => p.select_account = true,
            _ => return Err(OAuthError::invalid_request("Invalid prompt value.")),
        }
    }
    if p.none && value.is_some_and(|v| v.split(' ').filter(|s| !s.is_empty()).count() > 1) {
        return Err(OAuthError::invalid_request("prompt=none cannot be combined with other values."));
    }
    Ok(p)
}

#[cfg(test)]
pub(crate) mod tests;
