//! latchkey's protocol core: the rules of RFC 6749, 7636, 8252 and 9449 as `docs/decisions.md` settles them, with no
//! I/O.
//!
//! Handlers in `latchkey-server` look records up in the store, hand them to the functions here, and act on the
//! outcome. Nothing in this crate reads the clock, the network or a database: time comes in as [`time::UnixTime`].

pub mod access_token;
pub mod account;
pub mod app_check;
pub mod app_check_setting;
pub mod auth_code;
pub mod authorize;
pub mod client;
pub mod device;
pub mod dpop;
pub mod error;
pub mod events;
pub mod flow;
pub mod jws;
pub mod org;
pub mod passkey;
pub mod pkce;
pub mod redirect;
pub mod refresh_token;
pub mod registration;
pub mod resource;
pub mod scope;
pub mod secret;
pub mod service_account;
pub mod sign_in;
pub mod target;
pub mod time;
pub mod token;
pub mod useragent;

pub use error::OAuthError;
pub use latchkey_proto::ErrorCode;
