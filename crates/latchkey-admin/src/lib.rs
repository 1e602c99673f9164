//! latchkey's administration: the typed operations on the store that the `latchkey admin` CLI, the console's
//! pages and its JSON API share, and the key material they manage. Each operation returns a typed result of
//! [`results`] (which the CLI prints and the API sends, serialized) or a typed [`AdminError`].
//!
//! Who may act on a project (its members) is checked in [`actor`] and [`members`]; the console's API keys live in
//! [`api_keys`], the signing keys and the system secrets that encrypt them in [`keys`], [`secrets`] and
//! [`signing_keys`]. The crate sits below the HTTPS layer (`latchkey-server`) and names none of it.
//!
//! The operating system's edges the operations need are here too: the clock and randomness ([`clock`]), private
//! files ([`data_dir`]) and password hashing ([`password`]).

pub mod accounts;
pub mod actor;
pub mod api_keys;
pub mod client_secrets;
pub mod clients;
pub mod clock;
pub mod content_owners;
pub mod data_dir;
pub mod keys;
pub mod members;
pub mod orgs;
pub mod passkeys;
pub mod password;
pub mod quotas;
pub mod registrations;
pub mod resources;
pub mod results;
pub mod schema;
pub mod secrets;
pub mod service_account_keys;
pub mod service_accounts;
pub mod signing_keys;
pub mod streams;
pub mod two_step;
pub mod users;

pub use actor::{Access, Actor, ClientRef, Right};
pub use client_secrets::{client_secret_add, client_secret_change};
pub use members::{project_create, project_delete, project_list, project_set, project_set_api, project_show};
pub use signing_keys::{key_kind, key_list, key_retire, key_rotate, secrets_reencrypt, secrets_rotate};

pub(crate) use clients::find_client;
pub use clients::{
    client_app_check, client_app_check_debug_secret, client_app_check_metrics, client_app_check_status, client_create,
    client_delete, client_list, client_purge, client_restore, client_show, client_update, ClientEdit, Lifecycle,
    NewClient,
};
pub(crate) use users::valid_email;
pub use users::{
    find_user, user_create, user_delete, user_list, user_require_password_change, user_reset_two_step,
    user_set_disabled, user_set_password, user_show,
};

use crate::clock::OsRandom;
use latchkey_core::client::{FieldError, RestoreRefusal};
use latchkey_core::secret::random_bytes;
use latchkey_store::StoreError;

mod listings;
pub use listings::{listing_add, listing_remove, listing_show, verify_ownership, ListingDirectory, StoreDirectory};

/// An administrative operation that failed, with a message for the operator.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The thing named does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The input breaks a rule.
    #[error("invalid: {0}")]
    Invalid(String),
    /// Fields of a form break rules: each with the message shown next to it.
    #[error("invalid: {}", fields_text(.0))]
    Fields(Vec<FieldError>),
    /// The developer may not do this (they can see the project, so saying so leaks nothing).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The change conflicts with the current state (a member already added, the last owner).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The client is deleted already.
    #[error("conflict: client {0} is deleted already")]
    AlreadyDeleted(String),
    /// The client cannot be restored (it is not deleted, or its restore window has passed).
    #[error("invalid: client {0}: {1}")]
    NotRestorable(String, RestoreRefusal),
    /// An App Check action that must be confirmed was not (`enforcing`, `unenforcing`): each surface says how to.
    #[error("invalid: {0} must be confirmed")]
    Unconfirmed(&'static str),
    /// Asked again too soon (a stream's verification); the message says when to retry.
    #[error("too soon: {0}")]
    TooSoon(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn fields_text(errors: &[FieldError]) -> String {
    errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>().join("; ")
}

/// The result of an administrative operation.
pub type AdminResult<T = serde_json::Value> = Result<T, AdminError>;

/// A random identifier of lower-case letters and digits.
pub(crate) fn random_id(len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    random_bytes(len, &OsRandom).into_iter().map(|b| ALPHABET[usize::from(b) % ALPHABET.len()] as char).collect()
}

fn random_digits(len: usize) -> String {
    random_bytes(len, &OsRandom).into_iter().map(|b| char::from(b'0' + b % 10)).collect()
}
