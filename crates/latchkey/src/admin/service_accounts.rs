//! `latchkey admin content-owner` and `latchkey admin service-account`: content owners, the channels they manage,
//! and the service accounts of a project that act for them (the command and field names are fixed: scripts
//! depend on them).

use super::out;
use clap::Subcommand;
use latchkey_admin::content_owners as owners;
use latchkey_admin::service_accounts as ops;
use latchkey_admin::{Actor, AdminError, AdminResult};
use latchkey_config::Config;
use latchkey_core::time::UnixTime;
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
    /// Takes the content-owner role from a service account (its next data-API call on the owner's behalf is 403).
    Revoke {
        /// The content owner.
        #[arg(long)]
        owner: String,
        /// The service account's identifier (e-mail form).
        #[arg(long)]
        service_account: String,
    },
    /// Names an administrator of the owner: they grant and revoke the role in the console's API.
    AddAdmin {
        /// The content owner.
        #[arg(long)]
        owner: String,
        /// The administrator's account's address.
        #[arg(long)]
        email: String,
    },
    /// Shows the owner: its administrators, channels and service accounts.
    Show {
        /// The content owner.
        #[arg(long)]
        owner: String,
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
    /// The keys of a service account.
    #[command(subcommand)]
    Key(KeyCmd),
}

#[derive(Subcommand)]
pub(super) enum KeyCmd {
    /// Makes a key and writes the key file (mode 0600; latchkey keeps only the public half): the only copy.
    Create {
        /// The service account's identifier.
        #[arg(long)]
        account: String,
        /// Where to write the key file (must not exist).
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Adds a public key made elsewhere (PEM "PUBLIC KEY": RSA of 2048 bits or more for RS256, P-256 for ES256).
    Upload {
        /// The service account's identifier (the key: PEM "PUBLIC KEY", RSA of 2048 bits or more, or P-256).
        #[arg(long)]
        account: String,
        /// The PEM file.
        #[arg(long)]
        public_key_file: std::path::PathBuf,
    },
    /// Lists the keys of a service account.
    List {
        /// The service account's identifier.
        #[arg(long)]
        account: String,
    },
    /// Disables a key: assertions it signs get no token.
    Disable {
        /// The key id (private_key_id).
        #[arg(long)]
        key: String,
    },
    /// Enables a disabled key.
    Enable {
        /// The key id.
        #[arg(long)]
        key: String,
    },
    /// Deletes a key.
    Delete {
        /// The key id.
        #[arg(long)]
        key: String,
    },
}

/// Runs a `content-owner` command.
pub(super) async fn content_owner(store: &dyn Store, cmd: ContentOwnerCmd, now: UnixTime) -> AdminResult {
    let op = &Actor::Operator;
    match cmd {
        ContentOwnerCmd::Create { name } => out(owners::content_owner_create(store, &name, now).await),
        ContentOwnerCmd::LinkChannel { owner, email } => {
            out(owners::content_owner_link_channel(store, &owner, &email, true, now).await)
        }
        ContentOwnerCmd::UnlinkChannel { owner, email } => {
            out(owners::content_owner_link_channel(store, &owner, &email, false, now).await)
        }
        ContentOwnerCmd::Channels { owner } => out(owners::content_owner_channels(store, &owner).await),
        ContentOwnerCmd::Grant { owner, service_account } => {
            out(owners::content_owner_grant(store, op, &owner, &service_account, true, now).await)
        }
        ContentOwnerCmd::Revoke { owner, service_account } => {
            out(owners::content_owner_grant(store, op, &owner, &service_account, false, now).await)
        }
        ContentOwnerCmd::AddAdmin { owner, email } => {
            out(owners::content_owner_add_admin(store, &owner, &email, now).await)
        }
        ContentOwnerCmd::Show { owner } => out(owners::content_owner_show(store, op, &owner).await),
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
            let host = ops::identifier_host(&config.scope_base)?;
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
        ServiceAccountCmd::Key(cmd) => key(store, config, cmd, now).await,
    }
}

/// Runs a `service-account key` command.
async fn key(store: &dyn Store, config: &Config, cmd: KeyCmd, now: UnixTime) -> AdminResult {
    use latchkey_admin::service_account_keys as keys;
    let op = &Actor::Operator;
    match cmd {
        KeyCmd::Create { account, out: path } => {
            let exists =
                || AdminError::Conflict(format!("{} exists: the key file is written only anew", path.display()));
            if path.exists() {
                return Err(exists());
            }
            let urls = super::served::served_urls(store, config).await;
            let auth_uri = format!("{}{}", urls.auth, latchkey_config::paths::AUTHORIZE_PATH);
            let file = keys::key_create(store, op, &account, (&auth_uri, &urls.token_endpoint), now).await?;
            let json = serde_json::to_vec_pretty(&file).unwrap_or_default();
            // Made whole and linked in only if the name is still free (0600): an existing file is never written
            // over. Without its file the private key is lost, so its public half does not stay behind.
            let written = latchkey_admin::data_dir::create_private(&path, &json);
            if !matches!(written, Ok(true)) {
                let _ = keys::key_delete(store, op, &file.private_key_id).await;
                return Err(match written {
                    Err(e) => AdminError::Invalid(format!("{}: {e}", path.display())),
                    _ => exists(),
                });
            }
            Ok(serde_json::json!({
                "key_id": file.private_key_id,
                "service_account": file.client_email,
                "file": path.display().to_string(),
            }))
        }
        KeyCmd::Upload { account, public_key_file } => {
            let text = std::fs::read_to_string(&public_key_file)
                .map_err(|e| AdminError::Invalid(format!("{}: {e}", public_key_file.display())))?;
            out(keys::key_upload(store, op, &account, &text, now).await)
        }
        KeyCmd::List { account } => out(keys::key_list(store, op, &account).await),
        KeyCmd::Disable { key } => out(keys::key_set_disabled(store, op, &key, true, now).await),
        KeyCmd::Enable { key } => out(keys::key_set_disabled(store, op, &key, false, now).await),
        KeyCmd::Delete { key } => keys::key_delete(store, op, &key).await,
    }
}
