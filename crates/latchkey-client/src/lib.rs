//! The installed-app side of latchkey: everything an app on a phone, tablet or desktop does to get limited
//! access to a user's data, without ever seeing their password (RFC 6749, 7636, 8252, 9449).
//!
//! - [`Discovery`] reads the issuer's metadata (RFC 8414 / OpenID Connect Discovery).
//! - [`Pkce`] makes a fresh verifier and its S256 challenge for every request; `state` is generated and checked.
//! - [`LoopbackListener`] receives the redirect on `127.0.0.1` with a random port, accepts exactly one matching
//!   response and tells the user to return to the app; apps with a custom URI scheme hand the redirect URL to
//!   [`Authorization::finish`] instead.
//! - [`browser::open`] opens the system browser, honouring `$BROWSER`.
//! - [`DpopKey`] keeps an ES256 key on the device ([`KeyStore`]; a 0600 file by default) and makes a fresh proof
//!   per token request, caching the server's `DPoP-Nonce` and retrying once on `use_dpop_nonce`.
//! - [`Session`] keeps tokens in long-term storage ([`TokenStore`]; a 0600 file by default), refreshes the access
//!   token shortly before it expires with one refresh in flight however many callers ask, and revokes.
//! - [`SetReceiver`] (in [`events`]) is for the app's backend: it verifies the Security Event Tokens (RFC 8417)
//!   latchkey pushes (RFC 8935) or the app polls (RFC 8936), deduplicates them by `jti`, and hands over a typed
//!   [`SecurityEvent`] (sessions or tokens revoked, a password changed, the account disabled or deleted), or a
//!   [`SetError`] with the RFC 8935 code to answer with.
//!
//! - [`ServiceAccountCredentials`] is for a content owner's server-side tool: it loads a service account's key
//!   file and keeps a valid access token (RFC 7523 JWT bearer grant), one exchange in flight.
//! - [`resource_server`] is for a company's own API registered with latchkey as a resource (RFC 8707): it checks
//!   the access tokens the API receives, by asking latchkey ([`Introspector`], RFC 7662, active answers cached
//!   briefly) or by verifying JWT access tokens itself ([`AccessTokenVerifier`], RFC 9068), then the scope the
//!   call needs. Apps name the APIs they want tokens for with [`AppConfig::with_resource`] (RFC 8707).
//!
//! The HTTP transport is injected ([`HttpClient`]); [`ReqwestHttp`] is the default.
//!
//! ```no_run
//! # async fn run() -> Result<(), latchkey_client::Error> {
//! use latchkey_client::{browser, AppConfig, LoopbackListener, OAuthClient, ReqwestHttp};
//! use std::sync::Arc;
//!
//! let http = Arc::new(ReqwestHttp::with_ca_file(Some("latchkey-data/tls/cert.pem".as_ref()))?);
//! let client = OAuthClient::discover(
//!     AppConfig::new("https://localhost:8443", "lkapp-example"),
//!     http,
//! ).await?;
//! let listener = LoopbackListener::bind().await?;
//! let pending = client.authorize(&listener.redirect_uri(), &["https://latchkey.dev/auth/readonly"])?;
//! browser::open(pending.url())?;
//! let response = listener.receive(pending.state(), std::time::Duration::from_secs(300)).await?;
//! let tokens = client.exchange(pending, &response, None).await?;
//! if !tokens.granted("https://latchkey.dev/auth/readonly") {
//!     println!("the user did not allow reading the account; that feature stays off");
//! }
//! # Ok(()) }
//! ```

pub mod browser;
mod client;
mod clock;
mod discovery;
mod dpop;
mod error;
pub mod events;
#[cfg(test)]
mod fake_http;
mod http;
mod jose;
mod loopback;
mod pkce;
pub mod resource_server;
mod service_account;
mod session;
mod storage;
mod tokens;

pub use client::{
    AppConfig, Authorization, AuthorizationResponse, DeviceAuthorization, DevicePoll, OAuthClient, DEVICE_GRANT,
};
pub use clock::{Clock, SystemClock};
pub use discovery::Discovery;
pub use dpop::{DpopKey, FileKeyStore, KeyStore};
pub use error::Error;
pub use events::{Event, Received, SecurityEvent, SetError, SetReceiver, Subject};
#[cfg(feature = "reqwest")]
pub use http::ReqwestHttp;
pub use http::{HttpClient, HttpRequest, HttpResponse};
pub use loopback::LoopbackListener;
pub use pkce::Pkce;
pub use resource_server::{AccessTokenClaims, AccessTokenVerifier, Introspection, Introspector};
pub use service_account::{ServiceAccountCredentials, JWT_BEARER};
pub use session::Session;
pub use storage::write_private;
pub use tokens::{FileTokenStore, TokenSet, TokenStore};
