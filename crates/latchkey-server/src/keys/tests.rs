use super::KeyRing;
use latchkey_core::time::UnixTime;
use latchkey_store::sqlite::SqliteStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_starting_together_on_an_empty_store_sign_with_the_same_keys() {
    for _ in 0..10 {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&format!("sqlite://{}", dir.path().join("k.db").display())).await.expect("open");
        let now = UnixTime(1_700_000_000);
        let (a, b) = tokio::join!(KeyRing::load(&store, now), KeyRing::load(&store, now));
        let (a, b) = (a.expect("load").get(), b.expect("load").get());
        assert_eq!(a.mac_signer().id, b.mac_signer().id, "one access-token key signs");
        assert_eq!(a.id_token_signer().kid(), b.id_token_signer().kid(), "one id_token key signs");
    }
}
