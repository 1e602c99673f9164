//! `latchkey admin <noun> <verb>`: prints one JSON object on stdout, and a failure as JSON on stderr with the exit
//! codes of [`crate::output::Exit`]. Things are named by flags (`--project`, `--client`, `--user`, `--item-id`);
//! the positional forms of earlier releases still work, hidden, for one release. Only `admin migrate` creates a
//! store: every other command refuses a data directory without one.

use crate::output::{self, Exit};
use crate::StoreArgs;
use clap::{Args, Subcommand};
use ids::{ItemId, ProjectId};
use keys::{KeysCmd, SecretsCmd};
use latchkey_admin::clock::SystemClock;
use latchkey_admin::{self as ops, api_keys, members, Actor, AdminResult, StoreDirectory};
use latchkey_core::time::Clock;
use latchkey_store::ProjectSetting;
use orgs::OrgCmd;
use service_accounts::{ContentOwnerCmd, ServiceAccountCmd};
use std::io::Read;
use std::process::ExitCode;
use streams::StreamCmd;
use users::UserCmd;

mod client_secrets;
mod clients;
mod ids;
mod keys;
mod orgs;
mod resources;
mod served;
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
    Client(clients::ClientCmd),
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
    /// APIs registered as resources (RFC 8707): their scopes, token format and introspection secrets.
    #[command(subcommand)]
    Resource(resources::ResourceCmd),
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
    /// Writes a consistent copy of the SQLite database to a new file while servers keep serving (PostgreSQL:
    /// use pg_dump). Back up the system secret file too: the keys in the copy are encrypted under it.
    Backup {
        /// The new file.
        file: std::path::PathBuf,
    },
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
        /// Rotate the refresh tokens of its clients (`on`: each refresh returns a new one, a retired one used again
        /// revokes the grant; tokens bound by DPoP do not rotate) or not (`off`).
        #[arg(long, value_parser = ["on", "off"])]
        rotate_refresh_tokens: Option<String>,
        /// Let apps register themselves into it at `/register` (`on`; RFC 7591, one project of the server at a time)
        /// or not (`off`).
        #[arg(long, value_parser = ["on", "off"])]
        open_registration: Option<String>,
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
    // A backup copies the database as it is: before the store is opened, which would migrate it.
    if let Noun::Backup { file } = &args.noun {
        return Ok(match backup(sqlite.as_deref(), file) {
            Ok(value) => output::print(value, args.pretty),
            Err(e) => output::admin_failure(&e),
        });
    }
    // On SQLite the data directory and the database files are made (or tightened) private first, as by `serve`.
    latchkey_config::prepare_data_dir(&config)?;
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
            ProjectCmd::Update {
                project,
                time_based_access,
                rotate_refresh_tokens,
                open_registration,
                org,
                audience,
            } => {
                let switches = [
                    (ProjectSetting::TimeBasedAccess, time_based_access),
                    (ProjectSetting::RotateRefreshTokens, rotate_refresh_tokens),
                    (ProjectSetting::OpenRegistration, open_registration),
                ];
                orgs::project_update(store, &project, &switches, org.as_deref(), audience.as_deref(), now).await
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
        Noun::Client(cmd) => clients::client(store, &config, cmd, now).await,
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
        Noun::Resource(cmd) => resources::resource(store, &config, cmd, now).await,
        Noun::ContentOwner(cmd) => service_accounts::content_owner(store, cmd, now).await,
        Noun::ServiceAccount(cmd) => service_accounts::service_account(store, &config, cmd, now).await,
        Noun::Stream(cmd) => streams::stream(store, &config, cmd, now).await?,
        Noun::Keys(cmd) => keys::keys(store, &config, cmd, now).await?,
        Noun::Secrets(cmd) => keys::secrets(store, &config, cmd).await?,
        // Opening the store ran the migrations.
        Noun::Backup { file } => backup(sqlite.as_deref(), &file),
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

/// `admin backup`: SQLite's online copy, or what to do instead on PostgreSQL.
fn backup(sqlite: Option<&std::path::Path>, to: &std::path::Path) -> AdminResult<serde_json::Value> {
    let Some(db) = sqlite else {
        return Err(ops::AdminError::Invalid("the store is PostgreSQL: back it up with pg_dump -Fc".into()));
    };
    let bytes = latchkey_store::sqlite::backup(db, to)?;
    Ok(serde_json::json!({ "backup": to.display().to_string(), "bytes": bytes }))
}
