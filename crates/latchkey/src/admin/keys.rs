//! `latchkey admin keys` and `latchkey admin secrets`: the signing keys, and the system secrets that encrypt them
//! in the store. Only these commands read the system secrets (and make the default secret file on first use).

use super::out;
use clap::Subcommand;
use latchkey_admin::{self as ops, AdminResult};
use latchkey_config::Config;
use latchkey_core::time::UnixTime;
use latchkey_store::Store;

#[derive(Subcommand)]
pub(super) enum KeysCmd {
    /// Lists keys (never their material), with the system secret each is encrypted under.
    List,
    /// Adds a new signing key of a kind (id-token, access-token or event); servers pick it up within a minute.
    Rotate {
        /// id-token, access-token or event.
        #[arg(long)]
        kind: String,
    },
    /// Retires a key.
    Retire {
        /// The key id.
        id: u32,
    },
}

#[derive(Subcommand)]
pub(super) enum SecretsCmd {
    /// Replaces the system secret of the secret file (default <data-dir>/system-secret): makes a new one, keeps
    /// the old one for decryption while every stored key is encrypted anew, then drops it. Servers follow at
    /// their next key reload (within a minute).
    Rotate,
    /// Encrypts every stored key under the first system secret (after a new one was put first in
    /// LATCHKEY_SECRETS_SYSTEM; remove the old one afterwards).
    Reencrypt,
}

/// Runs a `keys` command.
pub(super) async fn keys(
    store: &dyn Store,
    config: &Config,
    cmd: KeysCmd,
    now: UnixTime,
) -> anyhow::Result<AdminResult> {
    Ok(match cmd {
        KeysCmd::List => out(ops::key_list(store).await),
        KeysCmd::Rotate { kind } => match ops::key_kind(&kind) {
            Ok(k) => out(ops::key_rotate(store, &config.secret_source()?, k, now).await),
            Err(e) => Err(e),
        },
        KeysCmd::Retire { id } => out(ops::key_retire(store, id, now).await),
    })
}

/// Runs a `secrets` command.
pub(super) async fn secrets(store: &dyn Store, config: &Config, cmd: SecretsCmd) -> anyhow::Result<AdminResult> {
    let source = config.secret_source()?;
    Ok(match cmd {
        SecretsCmd::Rotate => out(ops::secrets_rotate(store, &source).await),
        SecretsCmd::Reencrypt => out(ops::secrets_reencrypt(store, &source).await),
    })
}
