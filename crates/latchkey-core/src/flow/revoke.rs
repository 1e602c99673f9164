//! Revocation (RFC 7009): revoking an access or a refresh token revokes its whole grant. The checks, in order.

use super::{access_claims, authenticate, grant_of_refresh, Ports};
use crate::access_token::{self, AccessClaims, AccessTokenError, GrantId, Holder};
use crate::client::Client;
use crate::refresh_token;
use crate::time::UnixTime;
use crate::token::{self, Form};
use crate::{ErrorCode, OAuthError};

/// A revocation request as the handler read it.
#[derive(Clone, Copy)]
pub struct RevokeCall<'a> {
    /// The form body.
    pub form: &'a Form<'a>,
    /// The `Authorization` header; more than one is an error.
    pub authorization: Result<Option<&'a str>, &'a OAuthError>,
    /// When the request came.
    pub now: UnixTime,
}

/// Revokes the token's grant. `Ok` when it is revoked or unknown (RFC 7009 §2.2); an error when the request is
/// malformed, the client fails authentication, or the token is another client's.
pub async fn revoke<P: Ports>(ports: &P, call: RevokeCall<'_>) -> Result<(), P::Error> {
    let token = call.form.require("token")?;
    let client = client_if_named(ports, &call).await?;
    // The usual case in one conditional write: the grant's current refresh token (or one of its access tokens),
    // the grant live, and its client the one named. Anything else takes the steps below, which tell the cases
    // apart.
    if let Some((id, hash)) = presented(ports, token, call.now).await? {
        let client_id = client.as_ref().map(|c| c.client_id.as_str());
        if ports.revoke_presented(&id, hash.as_deref(), client_id, call.now).await? {
            return Ok(());
        }
    }
    let Some((grant_id, owner)) = grant_of(ports, token, call.now).await? else {
        return Ok(());
    };
    if let Some(client) = client {
        // A refresh token's lookup already named the grant's client; an access token's grant is read for it.
        let owner = match owner {
            Some(owner) => Some(owner),
            None => ports.grant(&grant_id).await?.map(|g| g.grant.client_id),
        };
        token_is_the_clients(owner.as_deref(), &client)?;
    }
    ports.revoke_grant(&grant_id, call.now).await?;
    Ok(())
}

/// Client authentication is optional here (public clients may send just the token); when present it must be
/// right.
async fn client_if_named<P: Ports>(ports: &P, call: &RevokeCall<'_>) -> Result<Option<Client>, P::Error> {
    let authorization = call.authorization.map_err(Clone::clone)?;
    if authorization.is_none() && call.form.get("client_id").is_none() {
        return Ok(None);
    }
    Ok(Some(authenticate(ports, &token::client_auth(call.form, authorization)?).await?))
}

/// The token is the authenticated client's (a token whose grant is gone has no owner left to check).
pub fn token_is_the_clients(owner: Option<&str>, client: &Client) -> Result<(), OAuthError> {
    if owner.is_some_and(|owner| owner != client.client_id) {
        return Err(OAuthError::invalid_request("The token was not issued to this client."));
    }
    Ok(())
}

/// The grant a token names without a read (an access token's, under its MAC; a refresh token's, by its id), and
/// for a refresh token its hash, which must be the grant's.
async fn presented<P: Ports>(
    ports: &P,
    token: &str,
    now: UnixTime,
) -> Result<Option<(GrantId, Option<Vec<u8>>)>, P::Error> {
    if token.starts_with(access_token::PREFIX) {
        return Ok(match access_claims(ports, token, UnixTime(i64::MIN), now).await? {
            Ok(AccessClaims { holder: Holder::Grant(id), .. }) => Some((id, None)),
            _ => None,
        });
    }
    Ok(refresh_token::grant_id(token).map(|id| (id, Some(crate::secret::hash(token)))))
}

/// The grant a token belongs to, if it is one of ours, with its client when the lookup read it. An expired access
/// token still names its grant.
async fn grant_of<P: Ports>(
    ports: &P,
    token: &str,
    now: UnixTime,
) -> Result<Option<(GrantId, Option<String>)>, P::Error> {
    if token.starts_with(access_token::PREFIX) {
        // Verified as of the start of time, so that expiry does not hide the grant.
        return Ok(match access_claims(ports, token, UnixTime(i64::MIN), now).await? {
            Ok(AccessClaims { holder: Holder::Grant(id), .. }) => Some((id, None)),
            // A service account's token is stopped by disabling its key or its account (docs/service-accounts.md).
            Ok(AccessClaims { holder: Holder::ServiceKey(_), .. }) => {
                return Err(OAuthError::new(
                    ErrorCode::UnsupportedTokenType,
                    "A service account's access token is not revoked here: disable or delete its key, or the account.",
                )
                .into())
            }
            Err(AccessTokenError::Expired | AccessTokenError::Invalid | AccessTokenError::UnknownKey) => None,
        });
    }
    Ok(grant_of_refresh(ports, token).await?.map(|g| (g.grant.id, Some(g.grant.client_id))))
}
