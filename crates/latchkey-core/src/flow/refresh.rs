//! `grant_type=refresh_token` (RFC 6749 §6, RFC 9449 §5): the refresh's checks, in order, and for a grant whose
//! token rotates, the rotation ([`rotation`]).

use super::proof::{self, NonceRule};
pub mod rotation;

use super::{grant_named, mint, Checked, Ports};
use crate::client::Client;
use crate::dpop::Proof;
use crate::secret;
use crate::target;
use crate::time::UnixTime;
use crate::token::{self, GrantState};
use crate::OAuthError;
use latchkey_proto::TokenResponse;

/// A refresh, as the request gave it.
#[derive(Debug, Clone, Copy)]
pub struct Refresh<'a> {
    /// The refresh token presented.
    pub token: &'a str,
    /// Scopes to narrow the new access token to.
    pub scope: Option<&'a str>,
}

/// Runs the refresh's checks, in order, then mints the access token.
pub async fn run<P: Ports>(ports: &P, refresh: Refresh<'_>, checked: Checked<'_>) -> Result<TokenResponse, P::Error> {
    let Checked { client, proof, now, resources } = checked;
    let hash = secret::hash(refresh.token);
    let found = grant_known(grant_named(ports, refresh.token, &hash).await?)?;
    let presented = rotation::Presented { token: refresh.token, hash: &hash, client, now };
    let given_again = if secret::ct_eq(&found.grant.refresh_hash, &hash) {
        None
    } else {
        Some(rotation::retired(ports, &found, presented).await?)
    };
    grant_is_the_clients(&found, client)?;
    grant_usable(&found, now)?;
    let scopes = token::narrow(ports.settings().scopes, found.grant.scopes, refresh.scope)?;
    let scopes = target::narrow(ports.settings().scopes, scopes, resources)?;
    if let Some((proof, rule)) = binding(&found, proof)? {
        proof::use_once(ports, proof, rule, now).await?;
    }
    let refresh_token = match given_again {
        Some(next) => Some(next),
        None if found.rotates(client) => Some(rotation::rotate(ports, &found, presented).await?),
        None => None,
    };
    let (access_token, expires_in) = mint(ports, &found.grant, scopes, None, now).await?;
    ports.grant_used(&found.grant.id, now);
    Ok(TokenResponse {
        access_token,
        expires_in,
        id_token: None,
        refresh_token: refresh_token.map(|t| t.expose().to_owned()),
        refresh_token_expires_in: found.grant.expires_at.map(|e| now.until(e)),
        scope: ports.settings().scopes.format(scopes),
        token_type: "Bearer".into(),
    })
}

/// The refresh token is one of a grant the server holds.
pub fn grant_known(found: Option<GrantState>) -> Result<GrantState, OAuthError> {
    found.ok_or_else(unknown)
}

/// The answer to a refresh token the server does not hold (or no longer: revoked, expired, never issued).
pub fn unknown() -> OAuthError {
    OAuthError::invalid_grant("Token has been expired or revoked.")
}

/// The refresh token was issued to the client presenting it.
pub fn grant_is_the_clients(found: &GrantState, client: &Client) -> Result<(), OAuthError> {
    if found.grant.client_id != client.client_id {
        return Err(OAuthError::invalid_grant("The refresh token was issued to another client."));
    }
    Ok(())
}

/// The grant may still be used ([`GrantState::is_usable`]).
pub fn grant_usable(found: &GrantState, now: UnixTime) -> Result<(), OAuthError> {
    if !found.is_usable(now) {
        return Err(OAuthError::invalid_grant("Token has been expired or revoked."));
    }
    Ok(())
}

/// The DPoP binding of the refresh token against the request's proof: a bound token needs a proof signed with its
/// key, and a nonce; an unbound one with a proof still works as Bearer, the proof still single use. Returns the
/// proof to record and its nonce rule.
pub fn binding<'p>(found: &GrantState, proof: Option<&'p Proof>) -> Result<Option<(&'p Proof, NonceRule)>, OAuthError> {
    match (&found.grant.dpop_jkt, proof) {
        (Some(_), None) => {
            Err(proof::invalid_dpop_proof("This refresh token is DPoP-bound: send a DPoP proof signed with its key."))
        }
        (Some(jkt), Some(p)) if *jkt != p.jkt => {
            Err(OAuthError::invalid_grant("The DPoP proof is signed with another key than the token's."))
        }
        (Some(_), Some(p)) => Ok(Some((p, NonceRule::Required))),
        (None, Some(p)) => Ok(Some((p, NonceRule::IfPresent))),
        (None, None) => Ok(None),
    }
}
