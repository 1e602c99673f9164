//! `latchkey admin <noun> <verb>`: prints one JSON object on stdout, and a failure as JSON on stderr with the exit
//! codes of [`crate::output::Exit`]. Things are named by flags (`--project`, `--client`, `--user`, `--item-id`);
//! the positional forms of earlier releases still work, hidden, for one release. Only `admin migrate` creates a
//! store: every other command refuses a data directory without one.

use crate::output::{self, Exit};
use crate::StoreArgs;
use clap::{Args, Subcommand};
use ids::{ClientId, ItemId, ProjectId};
use keys::{KeysCmd, SecretsCmd};
use latchkey_core::app_check::AppCheckAction;
use latchkey_core::client::{ClientDetails, ClientType};
use latchkey_core::time::Clock;
use latchkey_server::admin::{
    self as ops, api_keys, members, Actor, AdminResult, ClientEdit, ClientRef, NewClient, StoreDirectory,
};
use latchkey_server::clock::SystemClock;
use orgs::OrgCmd;
use service_accounts::{ContentOwnerCmd, ServiceAccountCmd};
use std::io::Read;
use std::process::ExitCode;
use streams::StreamCmd;
use users::UserCmd;

mod ids;
mod keys;
mod orgs;
mod service_accounts;
mod streams;
mod users;

/// `latchkey admin` and its global options.
#[derive(Args)]
pub struct AdminArgs {
    #[command(flatten)]
    config: StoreArgs,
    /// Indents the JSON printed (the default on a terminal).
    #[arg(long, global = true)]
    pretty: bool,
    #[command(subcommand)]
    noun: Noun,
}

#[derive(Subcommand)]
enum Noun {
    /// Projects: they own clients and enable the data API.
    #[command(subcommand)]
    Project(ProjectCmd),
    /// OAuth clients.
    #[command(subcommand)]
    Client(ClientCmd),
    /// User accounts.
    #[command(subcommand)]
    User(UserCmd),
    /// Organisations: members, administrators and their policy over apps.
    #[command(subcommand)]
    Org(OrgCmd),
    /// The built-in listing directory (extension-store listings), for owner verification.
    #[command(subcommand)]
    Listing(ListingCmd),
    /// Keys of the console's JSON API (`Authorization: Bearer lk_...`), per developer.
    #[command(subcommand)]
    ApiKey(ApiKeyCmd),
    /// Content owners: the channels they manage, and the service accounts that act for them.
    #[command(subcommand)]
    ContentOwner(ContentOwnerCmd),
    /// Service accounts of a project (server-side tools of content owners).
    #[command(subcommand)]
    ServiceAccount(ServiceAccountCmd),
    /// Shared Signals streams: the apps' backends that receive security events.
    #[command(subcommand)]
    Stream(StreamCmd),
    /// Signing keys (access tokens, id_tokens, security events).
    #[command(subcommand)]
    Keys(KeysCmd),
    /// The system secrets that encrypt the signing keys in the store.
    #[command(subcommand)]
    Secrets(SecretsCmd),
    /// Creates the store, or runs its migrations, and exits (`serve` also does at start-up).
    Migrate,
}

#[derive(Subcommand)]
enum ProjectCmd {
    /// Creates a project.
    Create {
        /// The project's name.
        #[arg(long)]
        name: String,
        /// Its owner: the e-mail address (or id) of an existing account, who then sees it in the console.
        #[arg(long)]
        owner: Option<String>,
    },
    /// Enables the data API for a project (the flow needs it).
    EnableApi {
        /// The project id.
        #[arg(long)]
        project: String,
    },
    /// Disables the data API for a project.
    DisableApi {
        /// The project id.
        #[arg(long)]
        project: String,
    },
    /// Changes a project's settings.
    Update {
        /// The project id.
        #[arg(long)]
        project: String,
        /// Offer time-based access on its clients' consent page (`on`) or not (`off`).
        #[arg(long, value_parser = ["on", "off"])]
        time_based_access: Option<String>,
        /// Place the project in this organisation (`none` takes it out of any).
        #[arg(long)]
        org: Option<String>,
        /// Who its clients serve: `external` (any account) or `internal` (its organisation's members only).
        #[arg(long, value_parser = ["internal", "external"])]
        audience: Option<String>,
    },
    /// Lists projects.
    List,
    /// Shows a project and its clients.
    Show(ProjectId),
    /// Deletes a project for good with all its clients (deleted ones too: none can be restored) and their grants.
    Delete(ProjectId),
    /// The project's members: the developers who see and manage it in the console.
    #[command(subcommand)]
    Member(MemberCmd),
}

#[derive(Subcommand)]
enum MemberCmd {
    /// Adds a developer (an existing account) to a project.
    Add {
        /// The project id.
        #[arg(long)]
        project: String,
        /// The developer's e-mail address.
        #[arg(long)]
        email: String,
        /// owner (also manages the members) or editor.
        #[arg(long, default_value = "editor")]
        role: String,
    },
    /// Removes a member; a project keeps at least one owner.
    Remove {
        /// The project id.
        #[arg(long)]
        project: String,
        /// The member's e-mail address or user id.
        #[arg(long)]
        email: String,
    },
    /// Changes a member's role; a project keeps at least one owner.
    SetRole {
        /// The project id.
        #[arg(long)]
        project: String,
        /// The member's e-mail address or user id.
        #[arg(long)]
        email: String,
        /// owner or editor.
        #[arg(long)]
        role: String,
    },
    /// Lists a project's members.
    List {
        /// The project id.
        #[arg(long)]
        project: String,
    },
}

#[derive(Subcommand)]
enum ApiKeyCmd {
    /// Creates a key for the console's JSON API acting for a developer; prints it once (`lk_...`).
    Create {
        /// The developer's e-mail address or user id.
        #[arg(long)]
        email: String,
        /// A name to recognise the key by.
        #[arg(long, default_value = "cli")]
        name: String,
    },
    /// Lists a developer's keys (never the keys themselves).
    List {
        /// The developer's e-mail address or user id.
        #[arg(long)]
        email: String,
    },
    /// Revokes a developer's key.
    Revoke {
        /// The developer's e-mail address or user id.
        #[arg(long)]
        email: String,
        /// The key's id.
        #[arg(long)]
        id: String,
    },
}

#[derive(Subcommand)]
enum ClientCmd {
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
enum AppCheckCmd {
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

#[derive(Subcommand)]
enum ListingCmd {
    /// Registers (or replaces) a listing of the built-in listing directory.
    Add {
        /// The extension's item ID.
        #[arg(long)]
        item_id: String,
        /// An individual publisher's e-mail address.
        #[arg(long, conflicts_with = "group")]
        publisher_email: Option<String>,
        /// A group publisher's name (with --member).
        #[arg(long, requires = "members")]
        group: Option<String>,
        /// A member of the group publisher (repeatable).
        #[arg(long = "member")]
        members: Vec<String>,
    },
    /// Shows a listing.
    Show {
        #[command(flatten)]
        item_id: ItemId,
    },
    /// Removes a listing.
    Remove {
        #[command(flatten)]
        item_id: ItemId,
    },
}

#[derive(Args)]
struct ClientUpdate {
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

#[derive(Args)]
struct ClientCreate {
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
    /// Mobile: the bundle ID.
    #[arg(long)]
    bundle_id: Option<String>,
    /// Mobile: the app-store ID (digits).
    #[arg(long)]
    store_id: Option<String>,
    /// Mobile: the team ID.
    #[arg(long)]
    team_id: Option<String>,
    /// Mobile: switch App Check on.
    #[arg(long)]
    app_check: bool,
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
    ClientType::parse(s).ok_or_else(|| "one of desktop, mobile, universal-desktop, browser-extension".into())
}

/// Runs one admin command.
pub async fn run(args: AdminArgs) -> anyhow::Result<ExitCode> {
    let config = args.config.load()?;
    warnings_to_stderr();
    let url = config.database_url();
    let sqlite = config.sqlite_path();
    let name = sqlite.as_ref().map_or_else(
        || "the PostgreSQL database of database_url".into(),
        |p| std::path::absolute(p).unwrap_or(p.clone()).display().to_string(),
    );
    // Only `migrate` creates a store: a mistyped data directory is refused, not filled with an empty store.
    if sqlite.as_ref().is_some_and(|p| !p.exists()) && !matches!(args.noun, Noun::Migrate) {
        let message = format!(
            "there is no store at {name}: run `latchkey admin migrate` (or `latchkey serve`) to create it, or name \
             another with --data-dir, --database-url or --config"
        );
        return Ok(output::fail(Exit::Refused, "no_store", message));
    }
    // On SQLite the data directory and the database files are made (or tightened) private first, as by `serve`.
    latchkey_server::prepare_data_dir(&config)?;
    let store = match latchkey_store::open_with(&url, config.pool_settings()).await {
        Ok(store) => store,
        Err(e) => return Ok(output::fail(Exit::Unreachable, "unreachable", format!("cannot open {name}: {e}"))),
    };
    let store = &*store;
    let op = &Actor::Operator;
    let now = SystemClock.now();
    let result = match args.noun {
        Noun::Project(cmd) => match cmd {
            ProjectCmd::Create { name, owner } => {
                out(ops::project_create(store, op, &name, owner.as_deref(), now).await)
            }
            ProjectCmd::EnableApi { project } => out(ops::project_set_api(store, op, &project, true).await),
            ProjectCmd::DisableApi { project } => out(ops::project_set_api(store, op, &project, false).await),
            ProjectCmd::Update { project, time_based_access, org, audience } => {
                let (tba, org, audience) = (time_based_access.as_deref(), org.as_deref(), audience.as_deref());
                orgs::project_update(store, &project, tba, org, audience, now).await
            }
            ProjectCmd::List => out(ops::project_list(store, op).await),
            ProjectCmd::Show(id) => out(ops::project_show(store, op, &id.get()).await),
            ProjectCmd::Delete(id) => out(ops::project_delete(store, op, &id.get()).await),
            ProjectCmd::Member(cmd) => match cmd {
                MemberCmd::Add { project, email, role } => match members::parse_role(&role) {
                    Ok(role) => out(members::member_add(store, op, &project, &email, role, now).await),
                    Err(e) => Err(e),
                },
                MemberCmd::Remove { project, email } => out(members::member_remove(store, op, &project, &email).await),
                MemberCmd::SetRole { project, email, role } => match members::parse_role(&role) {
                    Ok(role) => out(members::member_set_role(store, op, &project, &email, role).await),
                    Err(e) => Err(e),
                },
                MemberCmd::List { project } => out(members::member_list(store, op, &project).await),
            },
        },
        Noun::ApiKey(cmd) => match cmd {
            ApiKeyCmd::Create { email, name } => out(api_keys::api_key_create(store, &email, &name, now).await),
            ApiKeyCmd::List { email } => out(api_keys::api_key_list(store, &email).await),
            ApiKeyCmd::Revoke { email, id } => out(api_keys::api_key_revoke(store, &email, &id).await),
        },
        Noun::Client(cmd) => match cmd {
            ClientCmd::Create(c) => {
                let new = NewClient {
                    project_id: c.project,
                    client_type: c.client_type,
                    name: c.name,
                    redirect_uris: c.redirect_uris,
                    details: ClientDetails {
                        bundle_id: c.bundle_id,
                        store_id: c.store_id,
                        team_id: c.team_id,
                        app_check: c.app_check,
                        uwp_store_id: c.uwp_store_id,
                        package_sid: c.package_sid,
                        extension_item_id: c.extension_item_id,
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
                out(ops::client_restore(store, op, ClientRef::id(&client_id.get()), config.client_lifecycle(), now)
                    .await)
            }
            ClientCmd::Update(u) => {
                let redirect_uris = if u.clear_redirect_uris {
                    Some(Vec::new())
                } else {
                    Some(u.redirect_uris).filter(|v| !v.is_empty())
                };
                let edit = ClientEdit {
                    name: u.name,
                    redirect_uris,
                    bundle_id: u.bundle_id,
                    store_id: u.store_id,
                    team_id: u.team_id,
                    uwp_store_id: u.uwp_store_id,
                    package_sid: u.package_sid,
                    extension_item_id: u.extension_item_id,
                };
                out(ops::client_update(store, op, ClientRef::id(&u.client_id.get()), edit).await)
            }
            ClientCmd::Purge => out(ops::client_purge(store, config.client_lifecycle(), now).await),
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
        },
        Noun::User(cmd) => users::user(store, &config, cmd, now).await?,
        Noun::Org(cmd) => orgs::org(store, &config, cmd, now).await,
        Noun::Listing(cmd) => match cmd {
            ListingCmd::Add { item_id, publisher_email, group, members } => {
                let group = group.as_deref().map(|g| (g, members.as_slice()));
                out(ops::listing_add(store, &item_id, publisher_email.as_deref(), group, now).await)
            }
            ListingCmd::Show { item_id } => out(ops::listing_show(&StoreDirectory(store), &item_id.get()).await),
            ListingCmd::Remove { item_id } => out(ops::listing_remove(store, &item_id.get()).await),
        },
        Noun::ContentOwner(cmd) => service_accounts::content_owner(store, cmd, now).await,
        Noun::ServiceAccount(cmd) => service_accounts::service_account(store, &config, cmd, now).await,
        Noun::Stream(cmd) => streams::stream(store, &config, cmd, now).await?,
        Noun::Keys(cmd) => keys::keys(store, &config, cmd, now).await?,
        Noun::Secrets(cmd) => keys::secrets(store, &config, cmd).await?,
        // Opening the store ran the migrations.
        Noun::Migrate => {
            Ok(serde_json::json!({ "migrated": true, "backend": latchkey_store::backend_of(&url), "store": name }))
        }
    };
    Ok(match result {
        Ok(value) => output::print(value, args.pretty),
        Err(e) => output::admin_failure(&e),
    })
}

/// A typed result as the JSON printed.
pub(super) fn out<T: serde::Serialize>(result: AdminResult<T>) -> AdminResult<serde_json::Value> {
    result.map(|v| serde_json::to_value(v).unwrap_or_default())
}

/// Shows the server library's warnings (a data directory or file tightened, for example) on stderr; stdout keeps
/// the one JSON object.
fn warnings_to_stderr() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("off,latchkey_server=warn"))
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}

/// Reads a password from standard input: the first line, without its line ending.
pub(super) fn read_password() -> anyhow::Result<String> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    let line = text.lines().next().unwrap_or("").to_owned();
    if line.is_empty() {
        anyhow::bail!("no password on standard input");
    }
    Ok(line)
}
