use super::PgStore;
use crate::test_database::TestDatabase;
use crate::{PoolSettings, Store, StoreError};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_passes_the_store_conformance_suite() {
    let Some(db) = TestDatabase::create_database().await else { return };
    let store = PgStore::open(&db.url, PoolSettings::default()).await.expect("open");
    crate::conformance::run_all(Arc::new(store)).await;
}

#[tokio::test]
async fn reopening_a_database_keeps_its_data_and_migrates_once() {
    let Some(db) = TestDatabase::create().await else { return };
    let first = PgStore::open(&db.url, PoolSettings::default()).await.expect("open");
    let (client_id, _) = crate::conformance::fixture(&first).await;
    let again = PgStore::open(&db.url, PoolSettings::default()).await.expect("reopen runs no migration twice");
    assert!(again.client(&client_id).await.expect("get").is_some());
}

#[tokio::test]
async fn instances_starting_together_on_an_empty_database_migrate_it_once() {
    let Some(db) = TestDatabase::create_database().await else { return };
    let opens: Vec<_> = (0..4)
        .map(|_| {
            let url = db.url.clone();
            tokio::spawn(async move { PgStore::open(&url, PoolSettings::default()).await })
        })
        .collect();
    for o in opens {
        o.await.expect("join").expect("every instance opens the store");
    }
}

#[tokio::test]
async fn an_unreachable_server_is_reported_unavailable_quickly() {
    // Nothing listens on port 1.
    let settings = PoolSettings { max_connections: 2, acquire_timeout: Duration::from_secs(2) };
    let started = Instant::now();
    let e = PgStore::connect("postgres://postgres@127.0.0.1:1/none", settings).await.expect_err("no server");
    assert!(matches!(e, StoreError::Unavailable(_)), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
}

#[tokio::test]
async fn a_postgres_url_opens_the_postgres_backend() {
    assert_eq!(crate::backend_of("postgres://u@h/db"), Some("postgres"));
    assert_eq!(crate::backend_of("postgresql://u@h/db"), Some("postgres"));
    assert_eq!(crate::backend_of("sqlite://x.db"), Some("sqlite"));
    assert_eq!(crate::backend_of("mysql://x"), None);
    assert!(matches!(crate::open("mysql://x").await, Err(StoreError::Other(_))));
    let Some(db) = TestDatabase::create().await else { return };
    let store = crate::open(&db.url).await.expect("open");
    store.ping().await.expect("ping");
}
