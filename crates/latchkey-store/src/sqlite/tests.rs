use super::SqliteStore;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_passes_the_store_conformance_suite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let store = SqliteStore::open(&url).await.expect("open");
    crate::conformance::run_all(Arc::new(store)).await;
}

#[tokio::test]
async fn reopening_a_database_keeps_its_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let (client_id, _) = crate::conformance::fixture(&SqliteStore::open(&url).await.expect("open")).await;
    let again = SqliteStore::open(&url).await.expect("reopen");
    assert!(crate::Store::client(&again, &client_id).await.expect("get").is_some());
}
