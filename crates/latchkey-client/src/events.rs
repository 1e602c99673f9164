//! Receiving the security events latchkey sends an app's backend: Security Event Tokens (RFC 8417) of the
//! Shared Signals profiles (RISC, CAEP), pushed to the app (RFC 8935) or polled by it (RFC 8936).
//!
//! A [`SetReceiver`] verifies each SET against the issuer's keys and hands over a typed [`SecurityEvent`]: whom
//! it is about ([`Subject`]) and what happened ([`Event`]): sessions or tokens revoked, a password changed, the
//! account disabled, enabled or deleted. An app signs the user out, forgets the refresh tokens an event
//! covers ([`TokenRevoked::revokes`]) or deletes the user's data accordingly.
//!
//! A push endpoint answers `202 Accepted` to a SET received (a duplicate too) and, to a refused one,
//! [`SetError::status`] (`400`) with the JSON of [`SetError::response_body`]. The example `set_receiver` is
//! such an endpoint.
//!
//! ```no_run
//! # async fn run(body: Vec<u8>) -> Result<(), latchkey_client::Error> {
//! use latchkey_client::events::{Event, Received, SetReceiver};
//! use std::sync::Arc;
//!
//! let http = Arc::new(latchkey_client::ReqwestHttp::with_ca_file(None)?);
//! let receiver = SetReceiver::discover("https://localhost:8443", "lkapp-example", http).await?;
//! match receiver.receive(&body).await {
//!     Ok(Received::Event(e)) if matches!(e.event, Event::SessionsRevoked) => println!("sign out {:?}", e.subject),
//!     Ok(_) => {}
//!     Err(e) => println!("answer {} {}", e.status(), e.response_body()),
//! }
//! # Ok(()) }
//! ```

mod claims;
mod dedupe;
mod error;
mod event;
mod payloads;
mod poll;
mod receiver;
mod ssf_configuration;
mod subject;
#[cfg(test)]
mod tests;

pub use claims::{Received, SecurityEvent};
pub use error::SetError;
pub use event::{event_type, Event};
pub use payloads::{
    AccountDisabled, ChangeType, CredentialChange, DisabledReason, InitiatingEntity, SessionRevoked, StreamStatus,
    StreamUpdated, TokenRevoked, Verification,
};
pub use poll::{Polled, PolledSet};
pub use receiver::{SetReceiver, DEFAULT_DEDUPE_CAPACITY, DEFAULT_MIN_REFETCH};
pub use ssf_configuration::SsfConfiguration;
pub use subject::Subject;
