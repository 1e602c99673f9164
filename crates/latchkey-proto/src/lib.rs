//! Wire types shared by the latchkey server and the installed-app SDK.
//!
//! Everything here is what travels on the wire: the RFC 6749 §5.1 token response, the §5.2 error body and
//! the error codes (`docs/decisions.md`, "Errors"), the RFC 8414 metadata document, and the security event types.

mod error_code;
pub mod event_type;
pub mod key_file;
mod metadata;
mod token;

pub use error_code::ErrorCode;
pub use metadata::ServerMetadata;
pub use token::{ErrorResponse, TokenResponse};
