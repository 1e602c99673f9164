//! Where requests go and as whom: the target's endpoints, and with `--setup` a project, a client and a user made
//! in the server's store.

use crate::{BenchArgs, StoreArgs, TargetKind};
use anyhow::{anyhow, bail, Context};
use latchkey_admin::clock::{OsRandom, SystemClock};
use latchkey_admin::Actor;
use latchkey_admin::{self as ops, NewClient};
use latchkey_config::Config;
use latchkey_core::client::{ClientDetails, ClientType};
use latchkey_core::time::Clock;
use std::io::Read;
use std::path::PathBuf;

/// The data-API scope latchkey's flows ask for.
const LATCHKEY_SCOPE: &str = "https://latchkey.dev/auth/readonly";

/// Where to send requests and as whom.
pub struct Target {
    /// The issuer, without a trailing slash.
    pub issuer: String,
    /// The client.
    pub client_id: String,
    /// The users' e-mails (node-oidc-provider: any login): connection `i` signs in as user `i` (modulo their
    /// number). With `--setup`, one user per connection: one account's issuances wait for each other (its lock
    /// keeps the refresh-token limits), and a server's exchanges come from many accounts, not one.
    pub emails: Vec<String>,
    /// The users' password.
    pub password: String,
    /// The PEM certificate to trust.
    pub ca: Vec<u8>,
    /// latchkey or node-oidc-provider.
    pub kind: TargetKind,
    /// The URLs a workload uses.
    pub endpoints: Endpoints,
    /// The user's passkey, made with `--setup` (the `login-passkey` workload).
    pub passkey: Option<crate::passkey::SoftPasskey>,
}

/// The URLs a workload uses, and the scope it asks for.
pub struct Endpoints {
    /// The authorization endpoint.
    pub authorize: String,
    /// The token endpoint.
    pub token: String,
    /// The revocation endpoint.
    pub revoke: String,
    /// The introspection endpoint (empty where the server names none).
    pub introspect: String,
    /// The API call of the `api` workload.
    pub api: String,
    /// The scope of the authorization requests.
    pub scope: &'static str,
}

impl Target {
    /// The e-mail connection `i` signs in with.
    pub fn email(&self, i: usize) -> &str {
        &self.emails[i % self.emails.len()]
    }
}

impl Endpoints {
    fn latchkey(issuer: &str) -> Self {
        Self {
            authorize: format!("{issuer}/o/oauth2/v2/auth"),
            token: format!("{issuer}/token"),
            revoke: format!("{issuer}/revoke"),
            introspect: format!("{issuer}/introspect"),
            api: format!("{issuer}/video/v3/channels?part=id&mine=true"),
            scope: LATCHKEY_SCOPE,
        }
    }

    /// node-oidc-provider's endpoints, from its discovery document.
    async fn discover(issuer: &str, ca: &[u8]) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(ca)?)
            .build()?;
        let url = format!("{issuer}/.well-known/openid-configuration");
        let doc: serde_json::Value = http.get(&url).send().await?.error_for_status()?.json().await?;
        let field = |k: &str| doc[k].as_str().map(str::to_owned).with_context(|| format!("no {k} in {url}"));
        Ok(Self {
            authorize: field("authorization_endpoint")?,
            token: field("token_endpoint")?,
            revoke: field("revocation_endpoint")?,
            introspect: field("introspection_endpoint").unwrap_or_default(),
            api: field("userinfo_endpoint")?,
            scope: "openid offline_access",
        })
    }
}

/// The configuration of the store named by `--data-dir` and `--database-url` (and `LATCHKEY_*` variables).
pub fn store_config(store: &StoreArgs) -> anyhow::Result<Config> {
    let mut flags = toml::Table::new();
    if let Some(dir) = &store.data_dir {
        flags.insert("data_dir".into(), dir.display().to_string().into());
    }
    if let Some(url) = &store.database_url {
        flags.insert("database_url".into(), url.clone().into());
    }
    Ok(Config::load(None, std::env::vars(), flags)?)
}

/// The target the options describe, after `--setup` made its client and user.
pub async fn target(args: &BenchArgs) -> anyhow::Result<Target> {
    let issuer = args.issuer.as_deref().context("--issuer is needed")?.trim_end_matches('/').to_owned();
    let read_ca = |file: PathBuf| std::fs::read(&file).with_context(|| format!("reading {}", file.display()));
    if args.target == TargetKind::OidcProvider {
        if args.setup {
            bail!("--setup is for latchkey; node-oidc-provider has its client `bench` built in");
        }
        let ca = read_ca(args.ca_file.clone().context("--ca-file is needed")?)?;
        return Ok(Target {
            endpoints: Endpoints::discover(&issuer, &ca).await?,
            issuer,
            client_id: args.client_id.clone().unwrap_or_else(|| "bench".into()),
            emails: vec![args.email.clone().unwrap_or_else(|| "bench".into())],
            password: "bench".into(),
            ca,
            kind: TargetKind::OidcProvider,
            passkey: None,
        });
    }
    if args.target == TargetKind::Trivial {
        return Ok(Target {
            endpoints: Endpoints::latchkey(&issuer),
            issuer,
            client_id: "trivial".into(),
            emails: vec!["trivial".into()],
            password: "trivial".into(),
            ca: read_ca(args.ca_file.clone().context("--ca-file is needed")?)?,
            kind: TargetKind::Trivial,
            passkey: None,
        });
    }
    let mut password = String::new();
    if args.password_stdin {
        std::io::stdin().read_to_string(&mut password)?;
        password = password.lines().next().unwrap_or_default().to_owned();
    }
    let mut passkey = None;
    let (client_id, emails, ca_file) = if args.setup {
        let config = store_config(&args.store)?;
        if password.is_empty() {
            password = latchkey_core::secret::random_b64(18, &OsRandom);
        }
        let (client_id, emails, key) =
            create_client_and_users(&config, &password, args.connections).await.map_err(|e| anyhow!("setup: {e}"))?;
        passkey = Some(key);
        (client_id, emails, args.ca_file.clone().unwrap_or_else(|| config.data_dir.join("tls/cert.pem")))
    } else {
        let client_id = args.client_id.clone().context("--client-id is needed (or --setup)")?;
        let emails = vec![args.email.clone().context("--email is needed (or --setup)")?];
        if password.is_empty() {
            bail!("--password-stdin is needed (or --setup)");
        }
        (client_id, emails, args.ca_file.clone().context("--ca-file is needed")?)
    };
    let endpoints = Endpoints::latchkey(&issuer);
    let ca = read_ca(ca_file)?;
    Ok(Target { issuer, client_id, emails, password, ca, kind: TargetKind::Latchkey, endpoints, passkey })
}

/// `--setup`: a project with the data API, a desktop client and `users` users with `password`, the first with a
/// passkey; the client's id, the users' e-mails and the passkey.
async fn create_client_and_users(
    config: &Config,
    password: &str,
    users: usize,
) -> anyhow::Result<(String, Vec<String>, crate::passkey::SoftPasskey)> {
    let store = &*latchkey_store::open_with(&config.database_url(), config.pool_settings()).await?;
    let now = SystemClock.now();
    let project_id = ops::project_create(store, &Actor::Operator, "bench", None, now).await?.project_id;
    ops::project_set_api(store, &Actor::Operator, &project_id, true).await?;
    let (client_type, details) = (ClientType::Desktop, ClientDetails::default());
    let new = NewClient { project_id, client_type, name: "bench".into(), redirect_uris: vec![], details };
    let client_id = ops::client_create(store, &Actor::Operator, new, now).await?.client_id;
    let run = latchkey_core::secret::random_b64(6, &OsRandom).to_lowercase();
    let emails: Vec<String> = (0..users.max(1)).map(|i| format!("bench-{run}-{i}@example.com")).collect();
    let mut user_ids = Vec::with_capacity(emails.len());
    for email in &emails {
        user_ids.push(ops::user_create(store, email, password, Some("Bench"), now).await?.user_id);
    }
    let (passkey, record) = crate::passkey::SoftPasskey::new(&user_ids[0], now)?;
    latchkey_admin::passkeys::add_passkey(store, record, now).await?;
    Ok((client_id, emails, passkey))
}
