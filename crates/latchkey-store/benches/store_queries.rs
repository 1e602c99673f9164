//! Micro-benchmarks of the store's hot queries on each backend: the refresh lookup, a code exchange's writes
//! (insert code + redeem, alone and 32 at once, which group commit serves with one fsync on SQLite), revocation
//! and a DPoP replay record. PostgreSQL runs when it is reachable (`LATCHKEY_TEST_DATABASE_URL`, or the local
//! server at 127.0.0.1:5432, database `test`), in a throwaway schema.
//!
//! Run with `cargo bench -p latchkey-store --features conformance --bench store_queries`.

#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use latchkey_core::access_token::GrantId;
use latchkey_core::pkce::ChallengeMethod;
use latchkey_core::scope::ScopeSet;
use latchkey_core::secret::random_bytes;
use latchkey_core::time::UnixTime;
use latchkey_core::token::{AuthCode, Grant};
use latchkey_store::seed::SeedStore;
use latchkey_store::test_database::{TestDatabase, TestRandom};
use latchkey_store::{GrantLimits, Store};
use std::sync::Arc;
use tokio::runtime::Runtime;

const NOW: UnixTime = UnixTime(1_700_000_000);

fn code(client_id: &str, user_id: &str) -> AuthCode {
    AuthCode {
        code_hash: random_bytes(32, &TestRandom),
        client_id: client_id.into(),
        user_id: user_id.into(),
        redirect_uri: "http://127.0.0.1:1/".into(),
        scopes: ScopeSet(1),
        challenge: Some((ChallengeMethod::S256, "c".repeat(43))),
        nonce: None,
        auth_time: NOW,
        expires_at: NOW.plus(600),
        used: false,
        grant_lifetime: None,
    }
}

fn grant(code: &AuthCode) -> Grant {
    Grant {
        id: GrantId::generate(&TestRandom),
        client_id: code.client_id.clone(),
        user_id: code.user_id.clone(),
        scopes: code.scopes,
        refresh_hash: random_bytes(32, &TestRandom),
        dpop_jkt: None,
        created_at: NOW,
        expires_at: None,
        revoked_at: None,
        code_hash: code.code_hash.clone(),
    }
}

async fn exchange(store: &dyn Store, client_id: &str, user_id: &str) -> Grant {
    let c = code(client_id, user_id);
    store.insert_code(&c).await.expect("code");
    let g = grant(&c);
    store.redeem_code(&g, GrantLimits::default(), NOW).await.expect("redeem");
    g
}

fn bench_store(c: &mut Criterion, rt: &Runtime, name: &str, store: Arc<dyn SeedStore>) {
    let (client_id, user_id) = rt.block_on(latchkey_store::conformance::fixture(&*store));
    // 10,000 grants to look up, spread over other users so the limits stay out of the way.
    let seeded: Vec<Grant> = rt.block_on(async {
        let mut all = Vec::new();
        for _ in 0..100 {
            let (_, user) = latchkey_store::conformance::fixture(&*store).await;
            let codes: Vec<AuthCode> = (0..100).map(|_| code(&client_id, &user)).collect();
            let grants: Vec<Grant> = codes.iter().map(grant).collect();
            store.seed(&[], &grants).await.expect("seed");
            all.extend(grants);
        }
        all
    });
    let mut i = 0usize;
    c.bench_function(&format!("store/{name}/grant_by_id"), |b| {
        b.to_async(rt).iter(|| {
            i += 1;
            let (store, g) = (&store, &seeded[i % seeded.len()]);
            async move { store.grant(&g.id).await.expect("get").expect("found") }
        })
    });
    c.bench_function(&format!("store/{name}/insert_code_and_redeem"), |b| {
        b.to_async(rt).iter(|| exchange(&*store, &client_id, &user_id))
    });
    c.bench_function(&format!("store/{name}/insert_code_and_redeem_x32_concurrent"), |b| {
        b.to_async(rt).iter(|| async {
            let tasks: Vec<_> = (0..32)
                .map(|_| {
                    let (store, client_id, user_id) = (store.clone(), client_id.clone(), user_id.clone());
                    tokio::spawn(async move { exchange(&*store, &client_id, &user_id).await })
                })
                .collect();
            for t in tasks {
                t.await.expect("join");
            }
        })
    });
    let mut j = 0usize;
    c.bench_function(&format!("store/{name}/revoke_grant"), |b| {
        b.to_async(rt).iter(|| {
            j += 1;
            let (store, g) = (&store, &seeded[j % seeded.len()]);
            async move { store.revoke_grant(&g.id, NOW).await.expect("revoke") }
        })
    });
    c.bench_function(&format!("store/{name}/record_once"), |b| {
        b.to_async(rt).iter(|| async {
            let key = latchkey_store::conformance::single_use_value(NOW.plus(66));
            store.record_once(&[(key, NOW.plus(66))], NOW).await.expect("record")
        })
    });
}

fn store_benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let sqlite = rt.block_on(latchkey_store::seed::open_with(&url, Default::default())).expect("sqlite");
    bench_store(c, &rt, "sqlite", sqlite);
    match rt.block_on(TestDatabase::create()) {
        Ok(db) => {
            let pg = rt.block_on(latchkey_store::seed::open_with(&db.url, Default::default())).expect("postgres");
            bench_store(c, &rt, "postgres", pg);
            rt.block_on(async move { drop(db) });
        }
        Err(why) => eprintln!("{why}: the PostgreSQL benchmarks are skipped"),
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = store_benches
}
criterion_main!(benches);
