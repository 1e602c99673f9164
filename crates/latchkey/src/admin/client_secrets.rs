//! `latchkey admin client secret`: a client's secrets, rotated (`docs/api.md`, "Client secrets: rotation"): `add` a
//! second secret (printed once), move the app to it, `disable` the old one, then `delete` it.

use super::out;
use clap::Subcommand;
use latchkey_admin::{self as ops, Actor, AdminResult, ClientRef};
use latchkey_core::client::SecretChange;
use latchkey_core::time::UnixTime;
use latchkey_store::Store;

#[derive(Subcommand)]
pub(super) enum SecretCmd {
    /// Adds a secret (at most two): prints it once, with its id. Both secrets work until one is disabled.
    Add {
        /// The client id.
        #[arg(long)]
        client: String,
    },
    /// Disables a secret: it authenticates nothing from now on (not the client's only enabled one).
    Disable {
        /// The client id.
        #[arg(long)]
        client: String,
        /// The secret's id (cs_...), as `latchkey admin client show` lists it.
        #[arg(long)]
        secret: String,
    },
    /// Enables a disabled secret again.
    Enable {
        /// The client id.
        #[arg(long)]
        client: String,
        /// The secret's id.
        #[arg(long)]
        secret: String,
    },
    /// Deletes a disabled secret for good.
    Delete {
        /// The client id.
        #[arg(long)]
        client: String,
        /// The secret's id.
        #[arg(long)]
        secret: String,
    },
}

/// Runs a `client secret` command as the operator.
pub(super) async fn secret(store: &dyn Store, cmd: SecretCmd, now: UnixTime) -> AdminResult<serde_json::Value> {
    let op = &Actor::Operator;
    let (client, change) = match cmd {
        SecretCmd::Add { client } => return out(ops::client_secret_add(store, op, ClientRef::id(&client), now).await),
        SecretCmd::Disable { client, secret } => (client, SecretChange::Disable(secret, now)),
        SecretCmd::Enable { client, secret } => (client, SecretChange::Enable(secret)),
        SecretCmd::Delete { client, secret } => (client, SecretChange::Delete(secret)),
    };
    out(ops::client_secret_change(store, op, ClientRef::id(&client), change).await)
}
