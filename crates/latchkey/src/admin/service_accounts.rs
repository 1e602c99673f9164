//! `latchkey admin content-owner` and `latchkey admin service-account`: content owners, the channels they manage,
//! and the service accounts of a project that act for them (issue 23; the names are the issue's, which scripts
//! depend on).

use super::out;
use clap::Subcommand;
use latchkey_core::time::UnixTime;
use latchkey_server::admin::service_accounts as ops;
use latchkey_server::admin::{Actor, AdminError, AdminResult};
use latchkey_server::config::Config;
use latchkey_store::Store;

#[derive(Subcommand)]
pub(super) enum ContentOwnerCmd {
    /// Makes a content owner; prints its content_owner_id.
    Create {
        /// Its name.
        #[arg(long)]
        name: String,
    },
    /// Links the channel of the account with this address to the owner.
    LinkChannel {
        /// The content owner.
        #[arg(long)]
        owner: String,
        /// The channel's account's address.
        #[arg(long)]
        email: String,
    },
    /// Unlinks the channel of the account with this address.
    UnlinkChannel {
        /// The content owner.
        #[arg(long)]
        owner: String,
        /// The channel's account's address.
        #[arg(long)]
        email: String,
    },
    /// Lists the channels the owner manages.
    Channels {
        /// The content owner.
        #[arg(long)]
        owner: String,
    },
    /// Lets a service account act for the owner (the content-owner role).
    Grant {
        /// The content owner.
        #[arg(long)]
        owner: String,
        /// The service account's identifier (e-mail form).
        #[arg(long)]
        service_account: String,
    },
}

#[derive(Subcommand)]
pub(super) enum ServiceAccountCmd {
    /// Makes a service account in a project; prints its email (NAME@PROJECT.iam.HOST).
    Create {
        /// The project.
        #[arg(long)]
        project: String,
        /// Its name: 6 to 30 lower-case letters, digits and hyphens.
        #[arg(long)]
        name: String,
        /// Its display name (default the name).
        #[arg(long)]
        display_name: Option<String>,
    },
    /// Lists the service accounts of a project.
    List {
        /// The project.
        #[arg(long)]
        project: String,
    },
    /// Disables a service account: it gets no new token.
    Disable {
        /// The service account's identifier.
        #[arg(long)]
        account: String,
    },
    /// Enables a disabled service account.
    Enable {
        /// The service account's identifier.
        #[arg(long)]
        account: String,
    },
    /// Deletes a service account with its keys.
    Delete {
        /// The service account's identifier.
        #[arg(long)]
        account: String,
    },
}

/// Runs a `content-owner` command.
pub(super) async fn content_owner(store: &dyn Store, cmd: ContentOwnerCmd, now: UnixTime) -> AdminResult {
    match cmd {
        ContentOwnerCmd::Create { name } => out(ops::content_owner_create(store, &name, now).await),
        ContentOwnerCmd::LinkChannel { owner, email } => {
            out(ops::content_owner_link_channel(store, &owner, &email, true, now).await)
        }
        ContentOwnerCmd::UnlinkChannel { owner, email } => {
            out(ops::content_owner_link_channel(store, &owner, &email, false, now).await)
        }
        ContentOwnerCmd::Channels { owner } => out(ops::content_owner_channels(store, &owner).await),
        ContentOwnerCmd::Grant { owner, service_account } => {
            out(ops::content_owner_grant(store, &owner, &service_account, now).await)
        }
    }
}

/// Runs a `service-account` command as the operator.
pub(super) async fn service_account(
    store: &dyn Store,
    config: &Config,
    cmd: ServiceAccountCmd,
    now: UnixTime,
) -> AdminResult {
    let op = &Actor::Operator;
    match cmd {
        ServiceAccountCmd::Create { project, name, display_name } => {
            let host = url::Url::parse(&config.scope_base).ok().and_then(|u| u.host_str().map(str::to_owned));
            let Some(host) = host else {
                return Err(AdminError::Invalid(format!("scope_base {} has no host", config.scope_base)));
            };
            out(ops::service_account_create(store, op, &project, &name, display_name.as_deref(), &host, now).await)
        }
        ServiceAccountCmd::List { project } => out(ops::service_account_list(store, op, &project).await),
        ServiceAccountCmd::Disable { account } => {
            out(ops::service_account_set_disabled(store, op, &account, true, now).await)
        }
        ServiceAccountCmd::Enable { account } => {
            out(ops::service_account_set_disabled(store, op, &account, false, now).await)
        }
        ServiceAccountCmd::Delete { account } => out(ops::service_account_delete(store, op, &account).await),
    }
}
