//! How much one developer or project may make: bounds on what a tenant can make the store and the event
//! transmitter carry (`docs/security.md`, "Quotas"). Service-account keys (10 per account) and streams (100 per
//! project, `streams`) have their own.

use super::AdminError;

/// Projects a developer may own.
pub const PROJECTS_PER_DEVELOPER: usize = 100;
/// OAuth clients a project may have, deleted ones (still restorable) included.
pub const CLIENTS_PER_PROJECT: usize = 200;
/// Console API keys a developer may have.
pub const API_KEYS_PER_DEVELOPER: usize = 20;

/// The refusal of one more of `what`: a conflict with what exists (delete one first).
pub fn reached(what: &str, most: usize) -> AdminError {
    AdminError::Conflict(format!("there are {most} {what} already, the most allowed: delete one first"))
}
