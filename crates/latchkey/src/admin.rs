//! `latchkey admin <noun> <verb>`: prints one JSON object on stdout; errors go to stderr with exit code 1
//! (2 for "not found").

use crate::ConfigArgs;
use clap::{Args, Subcommand};
use latchkey_core::client::{ClientDetails, ClientType};
use latchkey_core::time::{Clock, SystemClock};
use latchkey_server::admin::{self as ops, AdminError, NewClient};
use std::io::Read;
use std::process::ExitCode;

/// `latchkey admin` and its global options.
#[derive(Args)]
pub struct AdminArgs {
    #[command(flatten)]
    config: ConfigArgs,
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
    /// Signing keys (access tokens, id_tokens).
    #[command(subcommand)]
    Keys(KeysCmd),
    /// Runs the store's migrations and exits (`serve` also runs them at start-up).
    Migrate,
}

#[derive(Subcommand)]
enum ProjectCmd {
    /// Creates a project.
    Create {
        /// The project's name.
        #[arg(long)]
        name: String,
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
    /// Lists projects.
    List,
    /// Shows a project and its clients.
    Show {
        /// The project id.
        id: String,
    },
    /// Deletes a project with its clients and their grants.
    Delete {
        /// The project id.
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
        /// The client_id.
        client_id: String,
    },
    /// Deletes a client (restorable within 30 days).
    Delete {
        /// The client_id.
        client_id: String,
    },
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

#[derive(Subcommand)]
enum UserCmd {
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
        /// User id or e-mail.
        user: String,
    },
    /// Deletes a user, their channel, sessions and grants.
    Delete {
        /// User id or e-mail.
        user: String,
    },
    /// Disables a user: no sign-in, and their tokens stop working.
    Disable {
        /// User id or e-mail.
        user: String,
    },
    /// Re-enables a disabled user.
    Enable {
        /// User id or e-mail.
        user: String,
    },
}

#[derive(Subcommand)]
enum KeysCmd {
    /// Lists keys (never their material).
    List,
    /// Adds a new signing key of a kind (id-token or access-token); servers pick it up within a minute.
    Rotate {
        /// id-token or access-token.
        #[arg(long)]
        kind: String,
    },
    /// Retires a key.
    Retire {
        /// The key id.
        id: u32,
    },
}

/// Runs one admin command.
pub async fn run(args: AdminArgs) -> anyhow::Result<ExitCode> {
    let config = args.config.load()?;
    let url = config.database_url();
    if latchkey_store::backend_of(&url) == Some("sqlite") {
        std::fs::create_dir_all(&config.data_dir)?;
    }
    let store = latchkey_store::open_with(&url, config.pool_settings()).await?;
    let store = &*store;
    let now = SystemClock.now();
    let result = match args.noun {
        Noun::Project(cmd) => match cmd {
            ProjectCmd::Create { name } => ops::project_create(store, &name, now).await,
            ProjectCmd::EnableApi { project } => ops::project_set_api(store, &project, true).await,
            ProjectCmd::DisableApi { project } => ops::project_set_api(store, &project, false).await,
            ProjectCmd::List => ops::project_list(store).await,
            ProjectCmd::Show { id } => ops::project_show(store, &id).await,
            ProjectCmd::Delete { id } => ops::project_delete(store, &id).await,
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
                ops::client_create(store, new, now).await
            }
            ClientCmd::List { project } => ops::client_list(store, project.as_deref()).await,
            ClientCmd::Show { client_id } => ops::client_show(store, &client_id).await,
            ClientCmd::Delete { client_id } => ops::client_delete(store, &client_id, now).await,
        },
        Noun::User(cmd) => match cmd {
            UserCmd::Create { email, name, .. } => {
                let password = read_password()?;
                ops::user_create(store, &email, &password, name.as_deref(), now).await
            }
            UserCmd::List => ops::user_list(store).await,
            UserCmd::Show { user } => ops::user_show(store, &user).await,
            UserCmd::Delete { user } => ops::user_delete(store, &user).await,
            UserCmd::Disable { user } => ops::user_set_disabled(store, &user, true, now).await,
            UserCmd::Enable { user } => ops::user_set_disabled(store, &user, false, now).await,
        },
        Noun::Keys(cmd) => match cmd {
            KeysCmd::List => ops::key_list(store).await,
            KeysCmd::Rotate { kind } => match ops::key_kind(&kind) {
                Ok(k) => ops::key_rotate(store, k, now).await,
                Err(e) => Err(e),
            },
            KeysCmd::Retire { id } => ops::key_retire(store, id, now).await,
        },
        // Opening the store ran the migrations.
        Noun::Migrate => Ok(serde_json::json!({ "migrated": true, "backend": latchkey_store::backend_of(&url) })),
    };
    match result {
        Ok(value) => {
            println!("{value}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("latchkey admin: {e}");
            Ok(match e {
                AdminError::NotFound(_) => ExitCode::from(2),
                _ => ExitCode::FAILURE,
            })
        }
    }
}

/// Reads a password from standard input: the first line, without its line ending.
fn read_password() -> anyhow::Result<String> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    let line = text.lines().next().unwrap_or("").to_owned();
    if line.is_empty() {
        anyhow::bail!("no password on standard input");
    }
    Ok(line)
}
