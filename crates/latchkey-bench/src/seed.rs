//! `latchkey-bench seed-grants`: bulk loading for load tests (`docs/performance.md`, "Large stores").
//!
//! The grants go through the store's bulk loading ([`Seed::seed`](latchkey_store::seed::Seed::seed)) in batches,
//! with users made for them (`per_user` grants each), under a project and desktop client of their own. Their
//! refresh tokens are random hashes that no one holds: the grants only make the tables and their indexes the size
//! of a large deployment.

use crate::setup::store_config;
use crate::StoreArgs;
use latchkey_admin::clock::{OsRandom, SystemClock};
use latchkey_core::access_token::GrantId;
use latchkey_core::client::{Client, ClientDetails, ClientType};
use latchkey_core::scope::ScopeSet;
use latchkey_core::secret::{random_b64, random_bytes};
use latchkey_core::time::{Clock, UnixTime};
use latchkey_core::token::Grant;
use latchkey_store::seed::SeedStore;
use latchkey_store::{Channel, NewUser, Project};
use serde_json::{json, Value};
use std::time::Instant;

/// `latchkey-bench seed-grants`: the store to load and how much.
#[derive(clap::Args)]
pub struct SeedArgs {
    /// How many grants.
    #[arg(long)]
    count: u64,
    /// Grants per user.
    #[arg(long, default_value_t = 10)]
    per_user: u64,
    #[command(flatten)]
    store: StoreArgs,
}

/// Opens the store (made, and migrated, if it is new), seeds it, and prints what it made as one JSON object.
pub async fn run(args: SeedArgs) -> anyhow::Result<()> {
    let config = store_config(&args.store)?;
    // On SQLite the data directory and the database files are made (or tightened) private first, as by `serve`.
    latchkey_config::prepare_data_dir(&config)?;
    let store = latchkey_store::seed::open_with(&config.database_url(), config.pool_settings()).await?;
    println!("{}", seed_grants(&*store, args.count, args.per_user, SystemClock.now()).await?);
    Ok(())
}

/// Grants stored per store call (one SQLite transaction).
const BATCH: u64 = 100_000;
/// Random bytes per grant: 16 of id, 32 of refresh-token hash, 32 of code hash.
const RANDOM_PER_GRANT: usize = 80;

/// Stores `count` grants for `count / per_user` new users, `BATCH` at a time; prints progress to stderr.
async fn seed_grants(store: &dyn SeedStore, count: u64, per_user: u64, now: UnixTime) -> anyhow::Result<Value> {
    let per_user = per_user.max(1);
    let started = Instant::now();
    let project = Project {
        id: format!("project-seed-{}", random_digits(8)),
        name: "Seed".into(),
        api_enabled: true,
        created_at: now,
        time_based_access: false,
        org_id: None,
        audience: Default::default(),
        rotate_refresh_tokens: false,
        open_registration: false,
    };
    store.create_project(&project).await?;
    let client = Client {
        client_id: format!("lkapp-seed-{}", random_digits(16)),
        project_id: project.id.clone(),
        name: "Seed".into(),
        client_type: ClientType::Desktop,
        redirect_uris: vec!["http://127.0.0.1/callback".into()],
        secrets: vec![latchkey_core::client::ClientSecret {
            id: "cs_seed".into(),
            hash: random_bytes(32, &OsRandom),
            hint: None,
            created_at: now,
            disabled_at: None,
        }],
        details: ClientDetails::default(),
        created_at: now,
        deleted_at: None,
        last_used_at: None,
        app_check: Default::default(),
        ownership_verified_at: None,
        registration: None,
        project_rotates: false,
    };
    store.create_client(&client).await?;
    let (mut done, mut users_made) = (0u64, 0u64);
    while done < count {
        let n = BATCH.min(count - done);
        let mut users: Vec<(NewUser, Channel)> = Vec::new();
        let mut grants = Vec::new();
        // One read of the random source per batch.
        let random = random_bytes(usize::try_from(n).unwrap_or(0) * RANDOM_PER_GRANT, &OsRandom);
        for (i, r) in (done..).zip(random.chunks_exact(RANDOM_PER_GRANT)) {
            if i % per_user == 0 || users.is_empty() {
                users.push(seed_user(now));
            }
            let Some((user, _)) = users.last() else { continue };
            let mut id = [0u8; 16];
            id.copy_from_slice(&r[..16]);
            grants.push(Grant {
                id: GrantId(id),
                client_id: client.client_id.clone(),
                user_id: user.id.clone(),
                scopes: ScopeSet(1),
                refresh_hash: r[16..48].to_vec(),
                dpop_jkt: None,
                created_at: now,
                expires_at: None,
                revoked_at: None,
                code_hash: r[48..].to_vec(),
            });
        }
        store.seed(&users, &grants).await?;
        done += n;
        users_made += users.len() as u64;
        if done % 1_000_000 < BATCH || done == count {
            eprintln!("seeded {done} grants for {users_made} users in {:.1} s", started.elapsed().as_secs_f64());
        }
    }
    Ok(json!({
        "grants": done,
        "users": users_made,
        "client_id": client.client_id,
        "project_id": project.id,
        "seconds": started.elapsed().as_secs_f64(),
    }))
}

/// A user who cannot sign in (the password hash matches nothing), with their channel.
fn seed_user(now: UnixTime) -> (NewUser, Channel) {
    let id = random_digits(21);
    let user = NewUser {
        id: id.clone(),
        email: format!("seed-{id}@seed.invalid"),
        name: None,
        password_hash: "!".into(),
        created_at: now,
    };
    let channel = Channel {
        id: format!("UC{}", random_b64(16, &OsRandom)),
        user_id: id,
        title: "Seed".into(),
        description: String::new(),
        created_at: now,
    };
    (user, channel)
}

/// `len` random decimal digits.
fn random_digits(len: usize) -> String {
    random_bytes(len, &OsRandom).iter().map(|b| char::from(b'0' + b % 10)).collect()
}
