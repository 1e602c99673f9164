//! `latchkey admin resource`: a project's APIs as resources (RFC 8707), their scopes and introspection secrets
//! (the command and field names are fixed: scripts depend on them).

use super::out;
use super::served::served_urls;
use clap::Subcommand;
use latchkey_admin::resources::{self as ops, Builtin, NewResource, ResourceChange};
use latchkey_admin::{Actor, AdminError, AdminResult};
use latchkey_config::Config;
use latchkey_core::client::SecretChange;
use latchkey_core::resource::{TokenFormat, Visibility};
use latchkey_core::scope::ScopeRegistry;
use latchkey_core::time::UnixTime;
use latchkey_store::Store;

#[derive(Subcommand)]
pub(super) enum ResourceCmd {
    /// Registers an API; prints JSON with its resource_id, uri and introspection secret (shown this once).
    Create {
        /// The project.
        #[arg(long)]
        project: String,
        /// Its resource identifier: an absolute https URI without a fragment.
        #[arg(long)]
        uri: String,
        /// Its name, shown on the consent page.
        #[arg(long)]
        name: String,
        /// A scope it defines, `name|description` (repeatable; the text after the first `|` is the description).
        #[arg(long = "scope")]
        scopes: Vec<String>,
        /// Who may ask for its scopes: `project` (this project's clients) or `public` (any client).
        #[arg(long, default_value = "project")]
        visibility: String,
        /// The access-token format it wants: `opaque`, `jwt` (ES256) or `jwt-rs256`.
        #[arg(long, default_value = "opaque")]
        token_format: String,
    },
    /// Changes an API: what is given changes.
    Update {
        /// The API.
        #[arg(long)]
        resource_id: String,
        /// A new name.
        #[arg(long)]
        name: Option<String>,
        /// A scope to add, or whose description to change, `name|description` (repeatable).
        #[arg(long = "scope")]
        scopes: Vec<String>,
        /// A scope to take away, by name (repeatable).
        #[arg(long = "remove-scope")]
        remove_scopes: Vec<String>,
        /// `project` or `public`.
        #[arg(long)]
        visibility: Option<String>,
        /// `opaque`, `jwt` (ES256) or `jwt-rs256`.
        #[arg(long)]
        token_format: Option<String>,
    },
    /// Shows an API.
    Show {
        /// The API.
        #[arg(long)]
        resource_id: String,
    },
    /// Prints the protected resource metadata (RFC 9728) the API should serve, naming this server.
    Metadata {
        /// The API.
        #[arg(long)]
        resource_id: String,
    },
    /// Lists a project's APIs.
    List {
        /// The project.
        #[arg(long)]
        project: String,
    },
    /// Deletes an API: its scopes are retired and its credentials end.
    Delete {
        /// The API.
        #[arg(long)]
        resource_id: String,
    },
    /// Its introspection secrets: rotate like a client's.
    #[command(subcommand)]
    Secret(SecretCmd),
}

#[derive(Subcommand)]
pub(super) enum SecretCmd {
    /// Adds a secret (both work until the old one is disabled or deleted); shown this once.
    Add {
        /// The API.
        #[arg(long)]
        resource_id: String,
    },
    /// Disables a secret.
    Disable {
        /// The API.
        #[arg(long)]
        resource_id: String,
        /// The secret's id.
        #[arg(long)]
        secret: String,
    },
    /// Enables a disabled secret.
    Enable {
        /// The API.
        #[arg(long)]
        resource_id: String,
        /// The secret's id.
        #[arg(long)]
        secret: String,
    },
    /// Deletes a secret.
    Delete {
        /// The API.
        #[arg(long)]
        resource_id: String,
        /// The secret's id.
        #[arg(long)]
        secret: String,
    },
}

fn visibility(s: &str) -> AdminResult<Visibility> {
    Visibility::parse(s).ok_or_else(|| AdminError::Invalid(format!("--visibility is project or public, not {s:?}")))
}

fn token_format(s: &str) -> AdminResult<TokenFormat> {
    TokenFormat::parse(s)
        .ok_or_else(|| AdminError::Invalid(format!("--token-format is opaque, jwt or jwt-rs256, not {s:?}")))
}

/// Runs a `resource` command as the operator.
pub(super) async fn resource(
    store: &dyn Store,
    config: &Config,
    cmd: ResourceCmd,
    now: UnixTime,
) -> AdminResult<serde_json::Value> {
    let op = &Actor::Operator;
    let scopes = ScopeRegistry::new(&config.scope_base);
    let urls = served_urls(store, config).await;
    let data_api = urls.data_api_resource();
    let builtin = Builtin { scopes: &scopes, data_api: &data_api };
    match cmd {
        ResourceCmd::Create { project, uri, name, scopes, visibility: v, token_format: f } => {
            let new = NewResource {
                project_id: project,
                uri,
                name,
                scopes,
                visibility: visibility(&v)?,
                token_format: token_format(&f)?,
            };
            out(ops::resource_create(store, op, new, &builtin, now).await)
        }
        ResourceCmd::Update { resource_id, name, scopes, remove_scopes, visibility: v, token_format: f } => {
            let change = ResourceChange {
                name,
                visibility: v.as_deref().map(visibility).transpose()?,
                token_format: f.as_deref().map(token_format).transpose()?,
                scopes,
                remove_scopes,
            };
            out(ops::resource_update(store, op, &resource_id, change, &builtin, now).await)
        }
        ResourceCmd::Show { resource_id } => out(ops::resource_show(store, op, &resource_id).await),
        ResourceCmd::Metadata { resource_id } => ops::resource_metadata(store, op, &resource_id, &urls.issuer).await,
        ResourceCmd::List { project } => out(ops::resource_list(store, op, &project).await),
        ResourceCmd::Delete { resource_id } => out(ops::resource_delete(store, op, &resource_id, now).await),
        ResourceCmd::Secret(cmd) => match cmd {
            SecretCmd::Add { resource_id } => out(ops::resource_secret_add(store, op, &resource_id, now).await),
            SecretCmd::Disable { resource_id, secret } => {
                out(ops::change_resource_secrets(store, op, &resource_id, SecretChange::Disable(secret, now)).await)
            }
            SecretCmd::Enable { resource_id, secret } => {
                out(ops::change_resource_secrets(store, op, &resource_id, SecretChange::Enable(secret)).await)
            }
            SecretCmd::Delete { resource_id, secret } => {
                out(ops::change_resource_secrets(store, op, &resource_id, SecretChange::Delete(secret)).await)
            }
        },
    }
}
