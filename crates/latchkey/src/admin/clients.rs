//! `latchkey admin client`: OAuth clients, their App Check and their secrets.

use super::ids::ClientId;
use super::{client_secrets, out};
use clap::{Args, Subcommand};
use latchkey_admin::{self as ops, Actor, AdminResult, ClientEdit, ClientRef, NewClient, StoreDirectory};
use latchkey_config::Config;
use latchkey_core::app_check::AppCheckAction;
use latchkey_core::client::{ClientDetails, ClientType};
use latchkey_core::time::UnixTime;
use latchkey_store::Store;

#[derive(Subcommand)]
pub(super) enum ClientCmd {
    /// Creates an OAuth client and prints its client_id and client_secret (shown once).
    Create(ClientCreate),
    /// Lists clients.
    List {
        /// Only this project's clients.
        #[arg(long)]
        project: Option<String>,
    },
    /// Shows a client.
    Show {
        #[command(flatten)]
        client_id: ClientId,
    },
    /// Deletes a client (restorable within `client_restore_days`, 30 by default).
    Delete {
        #[command(flatten)]
        client_id: ClientId,
    },
    /// Restores a deleted client within the restore window; its tokens work again.
    Restore {
        #[command(flatten)]
        client_id: ClientId,
    },
    /// Edits a client: each option given replaces the stored value (an empty value clears an optional field).
    Update(ClientUpdate),
    /// The client's secrets: add a second one, disable and delete the old one (rotation).
    #[command(subcommand)]
    Secret(super::client_secrets::SecretCmd),
    /// App Check of a mobile-platform client.
    #[command(subcommand)]
    AppCheck(AppCheckCmd),
    /// Owner verification of a browser-extension client: succeeds when a listing with the client's item ID is
    /// registered (`latchkey admin listing add`) and the developer is its publisher or a member of its group.
    VerifyOwnership {
        #[command(flatten)]
        client_id: ClientId,
        /// The developer's e-mail address.
        #[arg(long)]
        developer: String,
    },
    /// Deletes the clients unused for `client_unused_days` and purges, with their grants, the clients deleted
    /// more than `client_restore_days` ago (the server does this every 10 minutes); prints the counts.
    Purge,
}

#[derive(Subcommand)]
pub(super) enum AppCheckCmd {
    /// disabled → enabled, not enforced (needs a team ID and a bundle ID without *): requests are counted.
    Enable {
        #[command(flatten)]
        client_id: ClientId,
    },
    /// enabled → enforced: only requests with a valid App Check token succeed.
    Enforce {
        #[command(flatten)]
        client_id: ClientId,
        /// Confirms that unverified requests will be rejected.
        #[arg(long)]
        confirm: bool,
    },
    /// enforced → enabled, not enforced: all requests are allowed again.
    Unenforce {
        #[command(flatten)]
        client_id: ClientId,
        /// Confirms the change.
        #[arg(long)]
        confirm: bool,
    },
    /// enabled (either) → disabled: monitoring and enforcement stop.
    Disable {
        #[command(flatten)]
        client_id: ClientId,
    },
    /// The state in force and the change on its way.
    Status {
        #[command(flatten)]
        client_id: ClientId,
    },
    /// Request counts per category, per hour.
    Metrics {
        #[command(flatten)]
        client_id: ClientId,
        /// How many hours back, the current one included.
        #[arg(long, default_value_t = 24)]
        hours: i64,
    },
    /// Registers a debug secret (shown once) for the debug provider, `POST /v1/appcheck/debug`.
    DebugSecret {
        #[command(flatten)]
        client_id: ClientId,
    },
}

#[derive(Args)]
pub(super) struct ClientUpdate {
    #[command(flatten)]
    client_id: ClientId,
    /// The client name shown to users.
    #[arg(long)]
    name: Option<String>,
    /// An authorized redirect URI (repeatable): replaces all of them.
    #[arg(long = "redirect-uri")]
    redirect_uris: Vec<String>,
    /// Removes every redirect URI.
    #[arg(long, conflicts_with = "redirect_uris")]
    clear_redirect_uris: bool,
    #[command(flatten)]
    fields: TypeFlags,
}

#[derive(Args)]
pub(super) struct ClientCreate {
    /// The project id.
    #[arg(long)]
    project: String,
    /// desktop, mobile, universal-desktop or browser-extension.
    #[arg(long = "type", value_parser = parse_type)]
    client_type: ClientType,
    /// The client name shown to users.
    #[arg(long)]
    name: String,
    /// An authorized redirect URI (repeatable). Desktop apps need none for loopback redirects.
    #[arg(long = "redirect-uri")]
    redirect_uris: Vec<String>,
    /// Mobile: switch App Check on.
    #[arg(long)]
    app_check: bool,
    #[command(flatten)]
    fields: TypeFlags,
}

/// The type-specific fields, as `client create` and `client update` take them (a type refuses the others').
#[derive(Args)]
pub(super) struct TypeFlags {
    /// Mobile: the bundle ID (frozen once App Check is used).
    #[arg(long)]
    bundle_id: Option<String>,
    /// Mobile: the app-store ID (digits).
    #[arg(long)]
    store_id: Option<String>,
    /// Mobile: the team ID.
    #[arg(long)]
    team_id: Option<String>,
    /// Universal desktop: the 12-character store ID.
    #[arg(long)]
    uwp_store_id: Option<String>,
    /// Universal desktop: the package SID.
    #[arg(long)]
    package_sid: Option<String>,
    /// Browser extension: the item ID.
    #[arg(long)]
    extension_item_id: Option<String>,
}

fn parse_type(s: &str) -> Result<ClientType, String> {
    ClientType::parse(s).ok_or_else(|| "one of desktop, mobile, universal-desktop, browser-extension, tv".into())
}

/// Runs a `client` command as the operator.
pub(super) async fn client(
    store: &dyn Store,
    config: &Config,
    cmd: ClientCmd,
    now: UnixTime,
) -> AdminResult<serde_json::Value> {
    let op = &Actor::Operator;
    match cmd {
        ClientCmd::Create(c) => {
            let new = NewClient {
                project_id: c.project,
                client_type: c.client_type,
                name: c.name,
                redirect_uris: c.redirect_uris,
                details: ClientDetails {
                    bundle_id: c.fields.bundle_id,
                    store_id: c.fields.store_id,
                    team_id: c.fields.team_id,
                    app_check: c.app_check,
                    uwp_store_id: c.fields.uwp_store_id,
                    package_sid: c.fields.package_sid,
                    extension_item_id: c.fields.extension_item_id,
                },
            };
            out(ops::client_create(store, op, new, now).await)
        }
        ClientCmd::List { project } => out(ops::client_list(store, op, project.as_deref()).await),
        ClientCmd::Show { client_id } => out(ops::client_show(store, op, ClientRef::id(&client_id.get())).await),
        ClientCmd::Delete { client_id } => {
            out(ops::client_delete(store, op, ClientRef::id(&client_id.get()), now).await)
        }
        ClientCmd::Restore { client_id } => {
            out(ops::client_restore(store, op, ClientRef::id(&client_id.get()), config.client_lifecycle(), now).await)
        }
        ClientCmd::Update(u) => {
            let redirect_uris =
                if u.clear_redirect_uris { Some(Vec::new()) } else { Some(u.redirect_uris).filter(|v| !v.is_empty()) };
            let edit = ClientEdit {
                name: u.name,
                redirect_uris,
                bundle_id: u.fields.bundle_id,
                store_id: u.fields.store_id,
                team_id: u.fields.team_id,
                uwp_store_id: u.fields.uwp_store_id,
                package_sid: u.fields.package_sid,
                extension_item_id: u.fields.extension_item_id,
            };
            out(ops::client_update(store, op, ClientRef::id(&u.client_id.get()), edit).await)
        }
        ClientCmd::Purge => out(ops::client_purge(store, config.client_lifecycle(), now).await),
        ClientCmd::Secret(cmd) => client_secrets::secret(store, cmd, now).await,
        ClientCmd::VerifyOwnership { client_id, developer } => out(ops::verify_ownership(
            store,
            op,
            &StoreDirectory(store),
            ClientRef::id(&client_id.get()),
            &developer,
            now,
        )
        .await),
        ClientCmd::AppCheck(cmd) => {
            let delay = config.app_check_propagation_secs;
            let act = |id: String, action, confirmed| async move {
                out(ops::client_app_check(store, op, ClientRef::id(&id), action, confirmed, delay, now).await)
            };
            match cmd {
                AppCheckCmd::Enable { client_id } => act(client_id.get(), AppCheckAction::Enable, false).await,
                AppCheckCmd::Enforce { client_id, confirm } => {
                    act(client_id.get(), AppCheckAction::Enforce, confirm).await
                }
                AppCheckCmd::Unenforce { client_id, confirm } => {
                    act(client_id.get(), AppCheckAction::Unenforce, confirm).await
                }
                AppCheckCmd::Disable { client_id } => act(client_id.get(), AppCheckAction::Disable, false).await,
                AppCheckCmd::Status { client_id } => {
                    out(ops::client_app_check_status(store, op, ClientRef::id(&client_id.get()), now).await)
                }
                AppCheckCmd::Metrics { client_id, hours } => {
                    out(ops::client_app_check_metrics(store, op, ClientRef::id(&client_id.get()), hours, now).await)
                }
                AppCheckCmd::DebugSecret { client_id } => {
                    out(ops::client_app_check_debug_secret(store, op, ClientRef::id(&client_id.get())).await)
                }
            }
        }
    }
}
