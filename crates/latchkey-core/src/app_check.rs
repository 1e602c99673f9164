//! App Check for mobile-platform clients (`docs/decisions.md`, "App Check"): the state machine with its
//! propagation delay, the check of App Check tokens (ES256 or RS256 JWTs), and the classification of token
//! requests into the four metric categories of `docs/api.md`, "App Check (mobile-platform clients)".

pub use crate::app_check_setting::{AppCheck, AppCheckState};
use crate::client::{Client, ClientType};
use crate::time::UnixTime;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::signature;
use serde::Deserialize;

/// An action of the App Check state table (`docs/decisions.md`, "App Check").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppCheckAction {
    /// disabled → enabled, not enforced.
    Enable,
    /// enabled → enforced (confirmed).
    Enforce,
    /// enforced → enabled, not enforced (confirmed).
    Unenforce,
    /// enabled or enforced → disabled.
    Disable,
}

/// Why an App Check action is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppCheckError {
    /// App Check is for mobile-platform clients only.
    #[error("App Check is available for mobile-platform clients only")]
    NotMobile,
    /// Enabling needs a team ID.
    #[error("a team ID is required to enable App Check")]
    NeedsTeamId,
    /// Enabling needs a bundle ID without `*`.
    #[error("the bundle ID must be set and must not contain * to enable App Check")]
    BadBundleId,
    /// Enforcing and unenforcing must be confirmed (each surface says how: a flag, a form field, a JSON key).
    #[error("{0} must be confirmed")]
    NotConfirmed(&'static str),
    /// The action does not apply to the state.
    #[error("App Check cannot be {action} when it is {state}")]
    Inapplicable {
        /// The action, as a past participle.
        action: &'static str,
        /// The state it starts from.
        state: &'static str,
    },
}

/// Applies `action` to `client`'s setting at `now`; the change takes effect `propagation_secs` later (at once
/// when 0). The action starts from the state last asked for, so a pending change can be followed by the next.
pub fn apply(
    client: &Client,
    current: AppCheck,
    action: AppCheckAction,
    confirmed: bool,
    now: UnixTime,
    propagation_secs: i64,
) -> Result<AppCheck, AppCheckError> {
    use AppCheckAction as A;
    use AppCheckState as S;
    if client.client_type != ClientType::Mobile {
        return Err(AppCheckError::NotMobile);
    }
    let from = current.target();
    let to = match (action, from) {
        (A::Enable, S::Disabled) => S::Enabled,
        (A::Enforce, S::Enabled) => S::Enforced,
        (A::Unenforce, S::Enforced) => S::Enabled,
        (A::Disable, S::Enabled | S::Enforced) => S::Disabled,
        (a, s) => {
            let action = match a {
                A::Enable => "enabled",
                A::Enforce => "enforced",
                A::Unenforce => "unenforced",
                A::Disable => "disabled",
            };
            return Err(AppCheckError::Inapplicable { action, state: s.as_str() });
        }
    };
    if action == A::Enable {
        if client.details.team_id.as_deref().is_none_or(|t| t.trim().is_empty()) {
            return Err(AppCheckError::NeedsTeamId);
        }
        if client.details.bundle_id.as_deref().is_none_or(|b| b.trim().is_empty() || b.contains('*')) {
            return Err(AppCheckError::BadBundleId);
        }
    }
    if matches!(action, A::Enforce | A::Unenforce) && !confirmed {
        return Err(AppCheckError::NotConfirmed(if action == A::Enforce { "enforcing" } else { "unenforcing" }));
    }
    let state = current.effective(now);
    if propagation_secs <= 0 || state == to {
        return Ok(AppCheck { state: to, pending: None });
    }
    Ok(AppCheck { state, pending: Some((to, now.plus(propagation_secs))) })
}

/// The metric categories (`docs/api.md`, "App Check") of a token request from a client with App Check on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    /// A valid App Check token.
    Verified,
    /// No token, otherwise a normal request from the app: likely an outdated version of it.
    UnverifiedOutdatedClient,
    /// No token, and apparently not from the app (see [`classify`]).
    UnverifiedUnknownOrigin,
    /// A token that does not verify.
    UnverifiedInvalid,
}

impl Category {
    /// Every category, in the order metrics list them.
    pub const ALL: [Category; 4] =
        [Self::Verified, Self::UnverifiedOutdatedClient, Self::UnverifiedUnknownOrigin, Self::UnverifiedInvalid];

    /// The category's name in the store and the metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Verified => "verified",
            Self::UnverifiedOutdatedClient => "unverified_outdated_client",
            Self::UnverifiedUnknownOrigin => "unverified_unknown_origin",
            Self::UnverifiedInvalid => "unverified_invalid",
        }
    }

    /// Parses the category's name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// Classifies a token request. `token` is `None` without an App Check header, else whether it verified.
///
/// The unknown-origin rule: a request without a token is "apparently not from the app" when it has no
/// `User-Agent` at all, or a browser's (`Mozilla/...`): apps' HTTP stacks name themselves (`CFNetwork/...`,
/// `okhttp/...`, `Dalvik/...`, the app's own name), while scripts stripped of headers and web pages do not.
pub fn classify(token: Option<bool>, user_agent: Option<&str>) -> Category {
    match token {
        Some(true) => Category::Verified,
        Some(false) => Category::UnverifiedInvalid,
        None => match user_agent.map(str::trim) {
            None | Some("") => Category::UnverifiedUnknownOrigin,
            Some(ua) if ua.starts_with("Mozilla/") => Category::UnverifiedUnknownOrigin,
            Some(_) => Category::UnverifiedOutdatedClient,
        },
    }
}

/// A public key that may sign App Check tokens, as found in a JWKS.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Jwk {
    /// `EC` or `RSA`.
    pub kty: String,
    /// The key id.
    #[serde(default)]
    pub kid: Option<String>,
    /// EC: the curve (`P-256`).
    #[serde(default)]
    pub crv: Option<String>,
    /// EC: x.
    #[serde(default)]
    pub x: Option<String>,
    /// EC: y.
    #[serde(default)]
    pub y: Option<String>,
    /// RSA: the modulus.
    #[serde(default)]
    pub n: Option<String>,
    /// RSA: the exponent.
    #[serde(default)]
    pub e: Option<String>,
}

/// A JWK Set (RFC 7517 §5).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
pub struct Jwks {
    /// The keys.
    pub keys: Vec<Jwk>,
}

impl Jwks {
    /// Whether a key of the set has this `kid`.
    pub fn has_key(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid.as_deref() == Some(kid))
    }
}

/// The `kid` an App Check token's header names, read without verifying anything (to tell whether the keys
/// should be fetched again).
pub fn key_id(token: &str) -> Option<String> {
    let header = URL_SAFE_NO_PAD.decode(token.split('.').next()?).ok()?;
    serde_json::from_slice::<Header>(&header).ok()?.kid
}

impl Jwk {
    fn verifies(&self, alg: &str, input: &[u8], sig: &[u8]) -> bool {
        match (alg, self.kty.as_str()) {
            ("ES256", "EC") => {
                let jwk = crate::jws::EcJwk {
                    kty: "EC".into(),
                    crv: self.crv.clone().unwrap_or_default(),
                    x: self.x.clone().unwrap_or_default(),
                    y: self.y.clone().unwrap_or_default(),
                };
                jwk.to_point().is_some_and(|p| crate::jws::verify_es256(&p, input, sig))
            }
            ("RS256", "RSA") => {
                let (Some(n), Some(e)) = (self.n.as_deref(), self.e.as_deref()) else { return false };
                let (Ok(n), Ok(e)) = (URL_SAFE_NO_PAD.decode(n), URL_SAFE_NO_PAD.decode(e)) else { return false };
                signature::RsaPublicKeyComponents { n, e }
                    .verify(&signature::RSA_PKCS1_2048_8192_SHA256, input, sig)
                    .is_ok()
            }
            _ => false,
        }
    }
}

/// Why an App Check token is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid App Check token: {0}")]
pub struct TokenRejected(pub &'static str);

#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
}

#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    #[serde(default)]
    aud: serde_json::Value,
    exp: i64,
}

/// Verifies an App Check token for `client_id`: an ES256 or RS256 JWT signed by a key of `keys` (matched by
/// `kid` when the header names one), issued by `issuer`, with `sub` = the client_id and the client_id in `aud`
/// (a string or an array), not expired at `now`.
pub fn verify_token(
    token: &str,
    keys: &Jwks,
    issuer: &str,
    client_id: &str,
    now: UnixTime,
) -> Result<(), TokenRejected> {
    let mut parts = token.split('.');
    let (Some(h), Some(c), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(TokenRejected("not a compact JWS"));
    };
    let decode = |p: &str| URL_SAFE_NO_PAD.decode(p).map_err(|_| TokenRejected("not base64url"));
    let header: Header = serde_json::from_slice(&decode(h)?).map_err(|_| TokenRejected("bad header"))?;
    if header.alg != "ES256" && header.alg != "RS256" {
        return Err(TokenRejected("the algorithm is not ES256 or RS256"));
    }
    let sig = decode(s)?;
    let input = &token[..h.len() + 1 + c.len()];
    let signed = keys
        .keys
        .iter()
        .filter(|k| header.kid.is_none() || k.kid.is_none() || k.kid == header.kid)
        .any(|k| k.verifies(&header.alg, input.as_bytes(), &sig));
    if !signed {
        return Err(TokenRejected("the signature does not verify"));
    }
    let claims: Claims = serde_json::from_slice(&decode(c)?).map_err(|_| TokenRejected("bad claims"))?;
    if claims.iss != issuer {
        return Err(TokenRejected("wrong issuer"));
    }
    if claims.sub != client_id {
        return Err(TokenRejected("issued for another client"));
    }
    let aud_ok = match &claims.aud {
        serde_json::Value::String(a) => a == client_id,
        serde_json::Value::Array(a) => a.iter().any(|v| v.as_str() == Some(client_id)),
        _ => false,
    };
    if !aud_ok {
        return Err(TokenRejected("wrong audience"));
    }
    if claims.exp <= now.0 {
        return Err(TokenRejected("expired"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
