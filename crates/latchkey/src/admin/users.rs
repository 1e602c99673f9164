//! `latchkey admin user`: accounts, the apps with access to them, and the operator's changes to them. Users are
//! named by `--user` (an id or an e-mail address) or, the same, `--email`.

use super::{out, read_password};
use clap::{Args, Subcommand};
use latchkey_admin::{self as ops, accounts, AdminResult};
use latchkey_config::Config;
use latchkey_core::scope::ScopeRegistry;
use latchkey_core::time::UnixTime;
use latchkey_store::Store;

/// Names a user: `--user` (id or e-mail address) or `--email`; the positional form of earlier releases, hidden.
#[derive(Args)]
pub(super) struct UserRef {
    /// The user, by id or e-mail address.
    #[arg(long = "user", visible_alias = "email", required_unless_present = "legacy_user")]
    user: Option<String>,
    /// The positional form of earlier releases.
    #[arg(hide = true, conflicts_with = "user")]
    legacy_user: Option<String>,
}

impl UserRef {
    fn get(self) -> String {
        self.user.or(self.legacy_user).unwrap_or_default()
    }
}

#[derive(Subcommand)]
pub(super) enum UserCmd {
    /// Creates a user (and their channel); the password is read from standard input.
    Create {
        /// The e-mail address, used to sign in.
        #[arg(long)]
        email: String,
        /// Read the password from standard input (required: passwords never go on the command line).
        #[arg(long, required = true)]
        password_stdin: bool,
        /// The display name.
        #[arg(long)]
        name: Option<String>,
    },
    /// Lists users.
    List,
    /// Shows a user (by id or e-mail).
    Show {
        #[command(flatten)]
        user: UserRef,
    },
    /// Deletes a user, their channel, sessions and grants.
    Delete {
        #[command(flatten)]
        user: UserRef,
    },
    /// Disables a user: no sign-in, their browser sessions end, and their tokens stop working.
    Disable {
        #[command(flatten)]
        user: UserRef,
    },
    /// Re-enables a disabled user.
    Enable {
        #[command(flatten)]
        user: UserRef,
    },
    /// Marks a user's password as compromised: their browser sessions end and the apps they granted access are
    /// told (account-credential-change-required).
    RequirePasswordChange {
        #[command(flatten)]
        user: UserRef,
    },
    /// Removes a locked-out person's second steps: their authenticator app, recovery codes and passkeys go, and
    /// every session ends. They sign in with their password and enrol again.
    #[command(name = "reset-2sv")]
    ResetTwoStep {
        #[command(flatten)]
        user: UserRef,
    },
    /// Sets a user's password, read from standard input (for an account that has none, or a person locked out):
    /// every session ends, and the apps are told (credential-change).
    Password {
        #[command(flatten)]
        user: UserRef,
        /// Read the password from standard input (required: passwords never go on the command line).
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// Lists the apps with access to a user's account: each with its client_id, permissions, when access was
    /// given, last used and (for time-limited access) ends.
    Grants {
        #[command(flatten)]
        user: UserRef,
    },
    /// Removes an app's access to a user's account: every grant of the client is revoked at once.
    RevokeApp {
        #[command(flatten)]
        user: UserRef,
        /// The client id.
        #[arg(long)]
        client: String,
    },
}

/// Runs a `latchkey admin user` command.
pub(super) async fn user(
    store: &dyn Store,
    config: &Config,
    cmd: UserCmd,
    now: UnixTime,
) -> anyhow::Result<AdminResult<serde_json::Value>> {
    Ok(match cmd {
        UserCmd::Create { email, name, .. } => {
            let password = read_password()?;
            out(ops::user_create(store, &email, &password, name.as_deref(), now).await)
        }
        UserCmd::List => out(ops::user_list(store).await),
        UserCmd::Show { user } => out(ops::user_show(store, &user.get()).await),
        UserCmd::Delete { user } => out(ops::user_delete(store, &user.get(), now).await),
        UserCmd::Disable { user } => out(ops::user_set_disabled(store, &user.get(), true, now).await),
        UserCmd::Enable { user } => out(ops::user_set_disabled(store, &user.get(), false, now).await),
        UserCmd::RequirePasswordChange { user } => {
            out(ops::user_require_password_change(store, &user.get(), now).await)
        }
        UserCmd::ResetTwoStep { user } => out(ops::user_reset_two_step(store, &user.get(), now).await),
        UserCmd::Password { user, .. } => {
            let password = read_password()?;
            out(ops::user_set_password(store, &user.get(), &password, now).await)
        }
        UserCmd::Grants { user } => {
            let registry = ScopeRegistry::new(&config.scope_base);
            out(accounts::user_grants(store, &user.get(), &registry, now).await)
        }
        UserCmd::RevokeApp { user, client } => out(accounts::user_revoke_app(store, &user.get(), &client, now).await),
    })
}
