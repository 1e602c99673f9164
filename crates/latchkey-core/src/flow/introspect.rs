//! Token introspection (RFC 7662): what an access or refresh token stands for, told to the client it was issued
//! to. The checks, in order: the token is named, the caller authenticates as a client, then the token is looked
//! up; anything unknown, expired, revoked or another client's is inactive, with nothing more said.

use super::{access_claims, authenticate, grant_of_refresh, Ports};
use crate::access_token::{self, Holder};
use crate::client::Client;
use crate::scope::ScopeSet;
use crate::time::UnixTime;
use crate::token::{self, Form, GrantState};
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
    /// Its scopes: an access token's own (perhaps narrowed), a refresh token's grant's.
    pub scopes: ScopeSet,
    /// When it was issued: a refresh token's grant's creation; an access token's expiry less the access-token
    /// lifetime, or the grant's creation if later (a token cut short by a time-limited grant).
    pub issued_at: UnixTime,
    /// When it expires (a refresh token of a grant without an end: never).
    pub expires_at: Option<UnixTime>,
    /// The JWK thumbprint a DPoP-bound refresh token is bound to.
    pub jkt: Option<String>,
}

/// Authenticates the caller and introspects the token: `None` when the token is inactive for this caller.
pub async fn introspect<P: Ports>(ports: &P, call: IntrospectCall<'_>) -> Result<(Client, Option<Active>), P::Error> {
    let token = call.form.require("token")?;
    let authorization = call.authorization.map_err(Clone::clone)?;
    if authorization.is_none() && call.form.get("client_id").is_none() {
        return Err(
            OAuthError::new(ErrorCode::InvalidClient, "Authenticate as the client the token was issued to.").into()
        );
    }
    let client = authenticate(ports, &token::client_auth(call.form, authorization)?).await?;
    // The token's form says what it is; `token_type_hint` is only a hint (RFC 7662 §2.1), so it is not read.
    let active = if token.starts_with(access_token::PREFIX) {
        access(ports, token, call.now).await?
    } else {
        grant_of_refresh(ports, token).await?.filter(|g| g.is_usable(call.now)).map(refresh)
    };
    let active = active.filter(|a| a.client_id == client.client_id);
    Ok((client, active))
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
        issued_at: grant.created_at,
        expires_at: grant.expires_at,
        jkt: grant.dpop_jkt,
    }
}
