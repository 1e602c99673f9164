//! Token introspection (RFC 7662): what an access or refresh token stands for, told to the client it was issued
//! to, or to a registered API in its audience. The checks, in order: the token is named, the caller authenticates
//! (an API with its id and introspection secret, a client as at the token endpoint), then the token is looked up;
//! anything unknown, expired, revoked, another client's or outside the calling API is inactive, with nothing more
//! said.

use super::{access_claims, authenticate, grant_of_refresh, Ports};
use crate::access_token::{self, Holder};
use crate::client::Client;
use crate::resource::{self, Resource};
use crate::scope::ScopeSet;
use crate::time::UnixTime;
use crate::token::{self, ClientAuth, Form, GrantState};
use crate::{ErrorCode, OAuthError};

/// An introspection request as the handler read it.
#[derive(Clone, Copy)]
pub struct IntrospectCall<'a> {
    /// The form body.
    pub form: &'a Form<'a>,
    /// The `Authorization` header; more than one is an error.
    pub authorization: Result<Option<&'a str>, &'a OAuthError>,
    /// When the request came.
    pub now: UnixTime,
}

/// Which kind of token was introspected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// An access token.
    Access,
    /// A refresh token.
    Refresh,
}

/// What an active token stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Active {
    /// The kind of token.
    pub kind: TokenKind,
    /// The client it was issued to.
    pub client_id: String,
    /// The user it acts for.
    pub user_id: String,
    /// Its scopes: an access token's own (perhaps narrowed), a refresh token's grant's; told to an API, those of
    /// them that are its own.
    pub scopes: ScopeSet,
    /// The scopes its audience is read from (the token's; told to an API, its own).
    pub audience: ScopeSet,
    /// When it was issued: a refresh token's grant's creation; an access token's expiry less the access-token
    /// lifetime, or the grant's creation if later (a token cut short by a time-limited grant).
    pub issued_at: UnixTime,
    /// When it expires (a refresh token of a grant without an end: never).
    pub expires_at: Option<UnixTime>,
    /// The JWK thumbprint a DPoP-bound refresh token is bound to.
    pub jkt: Option<String>,
}

/// Who asks.
#[derive(Debug, Clone)]
pub enum Caller {
    /// A client, about its own tokens.
    Client(Box<Client>),
    /// A registered API, about access tokens whose audience includes it.
    Api(Resource),
}

/// Authenticates the caller and introspects the token: `None` when the token is inactive for this caller. An API
/// sees an access token only, and of its scopes only its own.
pub async fn introspect<P: Ports>(ports: &P, call: IntrospectCall<'_>) -> Result<(Caller, Option<Active>), P::Error> {
    let token = call.form.require("token")?;
    let authorization = call.authorization.map_err(Clone::clone)?;
    if authorization.is_none() && call.form.get("client_id").is_none() {
        return Err(
            OAuthError::new(ErrorCode::InvalidClient, "Authenticate as the client the token was issued to.").into()
        );
    }
    let auth = token::client_auth(call.form, authorization)?;
    let caller = if auth.client_id.starts_with(resource::ID_PREFIX) {
        Caller::Api(api(ports, &auth).await?)
    } else {
        Caller::Client(Box::new(authenticate(ports, &auth).await?))
    };
    // The token's form says what it is; `token_type_hint` is only a hint (RFC 7662 §2.1), so it is not read.
    let active = if token.starts_with(access_token::PREFIX) {
        access(ports, token, call.now).await?
    } else {
        grant_of_refresh(ports, token).await?.filter(|g| g.is_usable(call.now)).map(refresh)
    };
    let active = match &caller {
        Caller::Client(client) => active.filter(|a| a.client_id == client.client_id),
        Caller::Api(api) => {
            let own = api.scope_set();
            // Of the token's audience, the API learns only itself.
            active.filter(|a| a.kind == TokenKind::Access && a.scopes.intersects(own)).map(|a| Active {
                audience: a.scopes.intersection(own),
                scopes: a.scopes.intersection(own),
                ..a
            })
        }
    };
    Ok((caller, active))
}

/// A registered API, by its id and one of its enabled introspection secrets (`invalid_client` otherwise), within
/// its rate limit.
async fn api<P: Ports>(ports: &P, auth: &ClientAuth) -> Result<Resource, P::Error> {
    let wrong = || OAuthError::new(ErrorCode::InvalidClient, "The API's id or introspection secret is wrong.");
    let secret = auth.secret.as_ref().ok_or_else(wrong)?;
    let found = ports.resource(&auth.client_id).await?.ok_or_else(wrong)?;
    if !found.accepts_secret(secret.expose()) {
        return Err(wrong().into());
    }
    // The per-client rate limit, under the API's id.
    ports.admit_client(&found.id)?;
    Ok(found)
}

/// An access token: its MAC and expiry, then its grant, which must still be usable.
async fn access<P: Ports>(ports: &P, token: &str, now: UnixTime) -> Result<Option<Active>, P::Error> {
    let Ok(claims) = access_claims(ports, token, now, now).await? else { return Ok(None) };
    // A service account's token is no client's (it acts for a content owner through the account's key).
    let Holder::Grant(id) = claims.holder else { return Ok(None) };
    let Some(found) = ports.grant(&id).await?.filter(|g| g.is_usable(now)) else { return Ok(None) };
    let issued_at = UnixTime(claims.expires_at.0 - ports.settings().access_token_lifetime).max(found.grant.created_at);
    Ok(Some(Active {
        kind: TokenKind::Access,
        client_id: found.grant.client_id,
        user_id: found.grant.user_id,
        scopes: claims.scopes,
        audience: claims.scopes,
        issued_at,
        expires_at: Some(claims.expires_at),
        jkt: None,
    }))
}

/// A refresh token: its usable grant.
fn refresh(found: GrantState) -> Active {
    let grant = found.grant;
    Active {
        kind: TokenKind::Refresh,
        client_id: grant.client_id,
        user_id: grant.user_id,
        scopes: grant.scopes,
        audience: grant.scopes,
        issued_at: grant.created_at,
        expires_at: grant.expires_at,
        jkt: grant.dpop_jkt,
    }
}
