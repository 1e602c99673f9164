//! The resource-server side: an API a company registered with latchkey as a resource (RFC 8707, identified by a
//! URI such as `https://api.example.com/orders`) checks each access token it receives in one of two ways.
//!
//! - [`Introspector`] asks latchkey (token introspection, RFC 7662), authenticating with the API's id and
//!   introspection secret, and caches active answers for a short while. It works for every token format and
//!   sees revocations within the cache's lifetime.
//! - [`AccessTokenVerifier`] verifies JWT access tokens itself (RFC 9068): the signature with the issuer's keys
//!   (cached, fetched again for an unknown `kid`), the issuer, the audience (the API's URI) and the expiry. No
//!   request per token, but a revoked token stays valid until it expires.
//!
//! Either way the API then checks the scope the call needs ([`Introspection::has_scope`],
//! [`AccessTokenClaims::has_scope`]) and answers a missing or refused token with `401` and
//! `WWW-Authenticate: Bearer error="invalid_token"` (RFC 6750 §3), naming its protected resource metadata
//! (RFC 9728 §5.1), and a token without the scope with `403` and `error="insufficient_scope"`. The example
//! `protected_api` is such an API.
//!
//! ```no_run
//! # async fn run(token: &str) -> Result<(), latchkey_client::Error> {
//! use latchkey_client::resource_server::{AccessTokenVerifier, Introspector};
//! use std::sync::Arc;
//!
//! let http = Arc::new(latchkey_client::ReqwestHttp::with_ca_file(None)?);
//! let introspector =
//!     Introspector::new("https://localhost:8443/introspect", "res_0123456789abcdef", "the secret", http.clone());
//! let answer = introspector.introspect(token).await?;
//! let allowed = answer.active
//!     && answer.audience_includes("https://api.example.com/orders")
//!     && answer.has_scope("orders.read");
//!
//! let verifier = AccessTokenVerifier::new(
//!     "https://localhost:8443",
//!     "https://api.example.com/orders",
//!     "https://localhost:8443/oauth2/v3/certs",
//!     http,
//! );
//! let claims = verifier.verify(token).await?; // Error::InvalidToken: answer 401
//! let allowed = claims.has_scope("orders.read");
//! # let _ = allowed; Ok(()) }
//! ```

mod access_token;
mod introspection;
mod introspection_cache;
#[cfg(test)]
mod tests;

pub use access_token::{AccessTokenClaims, AccessTokenVerifier, CLOCK_LEEWAY};
pub use introspection::{Introspection, Introspector, DEFAULT_MAX_CACHE, DEFAULT_MAX_ENTRIES};

/// The scopes of a space-separated `scope` claim (RFC 6749 §3.3).
fn scope_list(scope: Option<&str>) -> Vec<String> {
    scope.unwrap_or("").split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect()
}
